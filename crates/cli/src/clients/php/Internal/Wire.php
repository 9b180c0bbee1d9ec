<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\SideConnections;

/**
 * A minimal RESP2 connection of its own (not phpredis): what a waiter
 * subscribes with (SSUBSCRIBE, then waiting for a message with a timeout)
 * and what the renewer process of synchronized() extends a lease with.
 * Replies: string, int, null, list; an error reply is a WireError.
 */
final class Wire
{
    /** What read() answers when its timeout passed. */
    public const TIMEOUT = "\0timeout";

    private string $buf = '';

    /** @param resource $sock */
    private function __construct(private $sock, public readonly Endpoint $endpoint)
    {
    }

    /** Connects, authenticates and selects the endpoint's database. */
    public static function open(Endpoint $e): self
    {
        $ctx = SideConnections::context();
        $context = stream_context_create($ctx === null ? [] : ['ssl' => $ctx['stream'] ?? []]);
        $errno = 0;
        $errstr = '';
        $sock = @stream_socket_client($e->address(), $errno, $errstr, $e->timeout, STREAM_CLIENT_CONNECT, $context);
        if ($sock === false) {
            throw new \RedisException("cannot connect to {$e->address()}: $errstr");
        }
        stream_set_blocking($sock, true);
        $w = new self($sock, $e);
        if ($e->auth !== null) {
            $w->expectOk(['AUTH', ...(is_array($e->auth) ? array_values($e->auth) : [$e->auth])]);
        }
        if ($e->db !== 0) {
            $w->expectOk(['SELECT', (string) $e->db]);
        }
        return $w;
    }

    private function expectOk(array $cmd): void
    {
        $reply = $this->command($cmd);
        if ($reply instanceof WireError) {
            throw new \RedisException("{$this->endpoint->address()}: {$reply->message}");
        }
    }

    /** Sends one command and reads its reply. */
    public function command(array $args, ?float $timeoutS = null): mixed
    {
        $this->send($args);
        $reply = $this->read($timeoutS ?? $this->endpoint->timeout);
        if ($reply === self::TIMEOUT) {
            throw new \RedisException("{$this->endpoint->address()}: no reply within {$this->endpoint->timeout} s");
        }
        return $reply;
    }

    public function send(array $args): void
    {
        $out = '*' . count($args) . "\r\n";
        foreach ($args as $a) {
            $a = (string) $a;
            $out .= '$' . strlen($a) . "\r\n" . $a . "\r\n";
        }
        for ($done = 0, $n = strlen($out); $done < $n; $done += $wrote) {
            $wrote = @fwrite($this->sock, substr($out, $done));
            if ($wrote === false || $wrote === 0) {
                throw new \RedisException("{$this->endpoint->address()}: the connection was lost");
            }
        }
    }

    /** One reply, or TIMEOUT when none came within `$timeoutS` seconds. */
    public function read(float $timeoutS): mixed
    {
        $deadline = microtime(true) + max($timeoutS, 0.0);
        while (true) {
            $at = 0;
            $reply = $this->parse($at);
            if ($reply !== self::TIMEOUT) {
                $this->buf = substr($this->buf, $at);
                return $reply;
            }
            $left = $deadline - microtime(true);
            if ($left < 0) {
                return self::TIMEOUT;
            }
            $r = [$this->sock];
            $w = $e = null;
            $ready = @stream_select($r, $w, $e, (int) $left, (int) (fmod($left, 1.0) * 1e6));
            if ($ready === false) {
                continue; // interrupted by a signal
            }
            if ($ready === 0) {
                return self::TIMEOUT;
            }
            $chunk = fread($this->sock, 65536);
            if ($chunk === false || ($chunk === '' && feof($this->sock))) {
                throw new \RedisException("{$this->endpoint->address()}: the connection was lost");
            }
            $this->buf .= $chunk;
        }
    }

    /**
     * Reads past every reply that has come (messages of a subscription that
     * was idle): what the socket holds now, without waiting; a reply still
     * incomplete stays, to be read whole later.
     *
     * @return list<mixed> the replies read past
     */
    public function drain(): array
    {
        while (true) {
            $r = [$this->sock];
            $w = $e = null;
            if (@stream_select($r, $w, $e, 0, 0) !== 1) {
                break;
            }
            $chunk = fread($this->sock, 65536);
            if ($chunk === false || ($chunk === '' && feof($this->sock))) {
                throw new \RedisException("{$this->endpoint->address()}: the connection was lost");
            }
            $this->buf .= $chunk;
        }
        $out = [];
        while (true) {
            $at = 0;
            $reply = $this->parse($at);
            if ($reply === self::TIMEOUT) {
                return $out;
            }
            $this->buf = substr($this->buf, $at);
            $out[] = $reply;
        }
    }

    /** The reply at `$at` of the buffer (moving `$at` past it), or TIMEOUT when it is incomplete. */
    private function parse(int &$at): mixed
    {
        $end = strpos($this->buf, "\r\n", $at);
        if ($end === false) {
            return self::TIMEOUT;
        }
        $type = $this->buf[$at];
        $line = substr($this->buf, $at + 1, $end - $at - 1);
        $next = $end + 2;
        switch ($type) {
            case '+':
                $at = $next;
                return $line;
            case '-':
                $at = $next;
                return new WireError($line);
            case ':':
                $at = $next;
                return (int) $line;
            case '$':
                $len = (int) $line;
                if ($len < 0) {
                    $at = $next;
                    return null;
                }
                if (strlen($this->buf) < $next + $len + 2) {
                    return self::TIMEOUT;
                }
                $at = $next + $len + 2;
                return substr($this->buf, $next, $len);
            case '*':
                $n = (int) $line;
                if ($n < 0) {
                    $at = $next;
                    return null;
                }
                $pos = $next;
                $out = [];
                for ($i = 0; $i < $n; $i++) {
                    $item = $this->parse($pos);
                    if ($item === self::TIMEOUT) {
                        return self::TIMEOUT;
                    }
                    $out[] = $item;
                }
                $at = $pos;
                return $out;
        }
        throw new \RedisException("{$this->endpoint->address()}: not a RESP2 reply: " . substr($line, 0, 40));
    }

    public function close(): void
    {
        if (is_resource($this->sock)) {
            fclose($this->sock);
        }
    }
}
