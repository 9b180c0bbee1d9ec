<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\SideConnections;

/**
 * Where a side connection goes (a cluster node's pipeline connection, a
 * waiter's subscription, a hold's renewer): host (with its `tls://` scheme,
 * or a unix socket path), port, password, database; the TLS context and the
 * password of a RedisCluster come from SideConnections::configure().
 */
final class Endpoint
{
    public function __construct(
        public readonly string $host,
        public readonly int $port,
        public readonly string|array|null $auth = null,
        public readonly int $db = 0,
        public readonly float $timeout = 2.0,
    ) {
    }

    /** The server a \Redis talks to. */
    public static function ofRedis(\Redis $r): self
    {
        $auth = $r->getAuth();
        $auth = ($auth === false || $auth === '' || $auth === []) ? null : $auth;
        $timeout = (float) $r->getTimeout();
        return new self(
            (string) $r->getHost(),
            (int) $r->getPort(),
            $auth ?? SideConnections::auth(),
            (int) $r->getDBNum(),
            $timeout > 0 ? $timeout : SideConnections::timeout(),
        );
    }

    /** A node `host:port` of a cluster. */
    public static function ofNode(string $node): self
    {
        $at = strrpos($node, ':');
        $host = substr($node, 0, (int) $at);
        $scheme = SideConnections::tls() ? 'tls://' : '';
        return new self($scheme . $host, (int) substr($node, (int) $at + 1), SideConnections::auth(), 0, SideConnections::timeout());
    }

    /** The same server at another `host:port` (a MOVED answer). */
    public function moved(string $node): self
    {
        $at = strrpos($node, ':');
        $scheme = preg_match('#^(tls|ssl)://#', $this->host, $m) === 1 ? $m[0] : '';
        return new self($scheme . substr($node, 0, (int) $at), (int) substr($node, (int) $at + 1), $this->auth, $this->db, $this->timeout);
    }

    /** The stream address: tcp://host:port, tls://host:port or unix://path. */
    public function address(): string
    {
        if (str_starts_with($this->host, '/')) {
            return 'unix://' . $this->host;
        }
        if (preg_match('#^(tls|ssl)://#', $this->host) === 1) {
            return $this->host . ':' . $this->port;
        }
        return 'tcp://' . $this->host . ':' . $this->port;
    }

    /** A \Redis connected (and authenticated) here: a cluster node's pipeline connection. */
    public function redis(): \Redis
    {
        $r = new \Redis();
        $context = SideConnections::context();
        if ($context !== null) {
            $r->connect($this->host, $this->port, $this->timeout, null, 0, 0, $context);
        } else {
            $r->connect($this->host, $this->port, $this->timeout);
        }
        if ($this->auth !== null) {
            $r->auth($this->auth);
        }
        if ($this->db !== 0) {
            $r->select($this->db);
        }
        return $r;
    }
}
