<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;
use RedisPatterns\Errors;

/**
 * The driver: sends each operation's requests on the phpredis client it was
 * made with (one runner per client object).
 *
 * * one(): one script call (EVALSHA, EVALSHA_RO for a read-only script;
 *   after NOSCRIPT the script is loaded, its SHA1 checked, and the call sent
 *   again) or one command; an error reply is thrown as its error class.
 * * batch(): many requests as one pipeline (a cluster: one per primary, on
 *   a connection per node, since RedisCluster sends no pipelines); the
 *   replies in order, or the first error thrown.
 * * The client's OPT_PREFIX is honoured as phpredis honours it for its own
 *   commands: every key (and every channel) on the wire starts with it,
 *   while accessors and arguments stay without it; slots are those of the
 *   prefixed keys.
 */
final class Runner
{
    /** @var \WeakMap<object, Runner>|null */
    private static ?\WeakMap $runners = null;

    public readonly bool $cluster;
    public string $prefix;
    private ?Slots $slots = null;
    /** @var array<string, \Redis> a cluster's pipeline connection per node */
    private array $nodeConnections = [];
    /** @var array<string, array{Wire, string}> per node address, the subscription connection the last wait there left and the channel it is still subscribed to */
    private array $idleWires = [];

    private function __construct(private \Redis|\RedisCluster $client)
    {
        $this->cluster = $client instanceof \RedisCluster;
        $this->refresh();
    }

    /** The runner of `$client` (made at its first use). */
    public static function of(\Redis|\RedisCluster $client): self
    {
        self::$runners ??= new \WeakMap();
        $run = self::$runners[$client] ?? null;
        if ($run === null) {
            $run = self::$runners[$client] = new self($client);
        }
        return $run;
    }

    /**
     * @internal After a fork: talk through `$client` (a connection of the
     * child's own) from now on, forgetting the parent's node connections.
     */
    public function reconnect(\Redis|\RedisCluster $client): void
    {
        $this->client = $client;
        $this->nodeConnections = [];
        $this->idleWires = [];
        $this->slots = null;
        self::$runners[$client] = $this;
    }

    public function client(): \Redis|\RedisCluster
    {
        return $this->client;
    }

    /** One request: its reply (nil as null); an error reply thrown as its error. */
    public function one(Call|Cmd $req): mixed
    {
        $this->atomic();
        $reply = $this->sendRaw($req, $req->command($this->prefix));
        if (is_int($reply) || is_string($reply)) {
            return $reply; // the common replies: nothing to decode
        }
        if ($reply instanceof ReplyError && $req instanceof Call && str_starts_with($reply->message, 'NOSCRIPT')) {
            self::checkLoaded($req, $this->sendRaw($req, ['SCRIPT', 'LOAD', $req->source()]));
            $reply = $this->send($req);
        }
        if ($reply instanceof ReplyError) {
            throw ErrorMap::of($req, $reply->message);
        }
        return self::decode($reply);
    }

    /**
     * Many requests in one round trip per node: the replies in order, or the
     * first error reply thrown.
     *
     * @param list<Call|Cmd> $reqs
     * @return list<mixed>
     */
    public function batch(array $reqs): array
    {
        if ($reqs === []) {
            return [];
        }
        $this->atomic();
        if (!$this->cluster) {
            /** @var \Redis $r */
            $r = $this->client;
            return Pipeline::run($r, array_values($reqs), $this->prefix);
        }
        return $this->clusterBatch(array_values($reqs), 0);
    }

    /** @return list<string> the primaries ("host:port"), or ['server'] */
    public function nodes(): array
    {
        return $this->cluster ? $this->slots()->nodes() : ['server'];
    }

    /** The cluster slot of a key as sent (with the client's prefix). */
    public function slot(string $key): int
    {
        $this->refresh();
        return Slots::of($this->prefix . $key);
    }

    /** Where a side connection for `$key`'s slot (a key or channel, without the prefix) goes. */
    public function endpoint(?string $key): Endpoint
    {
        if (!$this->cluster) {
            /** @var \Redis $r */
            $r = $this->client;
            return Endpoint::ofRedis($r);
        }
        $node = $key === null ? $this->slots()->nodes()[0] : $this->slots()->node($this->slot($key));
        return Endpoint::ofNode($node);
    }

    /**
     * A subscription to the shard channel `$channel` (without the prefix), on
     * the node of its slot: on the subscription connection an earlier one left
     * there, still subscribed (see Subscription), or on a new one.
     */
    public function subscribe(string $channel): Subscription
    {
        $this->refresh();
        $at = $this->endpoint($channel);
        [$idle, $on] = $this->idleWires[$at->address()] ?? [null, null];
        unset($this->idleWires[$at->address()]);
        return Subscription::open($at, $this->prefix . $channel, $idle, $on, function (Wire $wire, string $subscribed): void {
            $address = $wire->endpoint->address();
            if (isset($this->idleWires[$address])) {
                $wire->close();
            } else {
                $this->idleWires[$address] = [$wire, $subscribed];
            }
        });
    }

    /** The replies as this library answers them: nil (phpredis: false) as null, also inside lists. */
    public static function decode(mixed $reply): mixed
    {
        if ($reply === false) {
            return null;
        }
        if (is_array($reply)) {
            return array_map([self::class, 'decode'], $reply);
        }
        return $reply;
    }

    /** Throws ShaMismatch unless SCRIPT LOAD answered the bundle's SHA1. */
    public static function checkLoaded(Call $call, mixed $sha): void
    {
        if ($sha instanceof ReplyError) {
            throw ErrorMap::of($call, $sha->message);
        }
        if (!is_string($sha) || strtolower($sha) !== $call->sha1) {
            throw new Errors\ShaMismatch($call->script, $call->sha1, is_string($sha) ? $sha : gettype($sha));
        }
    }

    /** Takes the client's current OPT_PREFIX (phpredis applies the current one to every command). */
    private function refresh(): void
    {
        $prefix = $this->client->getOption(\Redis::OPT_PREFIX);
        $this->prefix = is_string($prefix) ? $prefix : '';
    }

    /**
     * Refuses a client in MULTI or pipeline mode; takes its current
     * OPT_PREFIX. Both are read at every operation (two calls into phpredis,
     * about 0.1 us), not once per runner: the application may set another
     * prefix or enter MULTI at any time, and a call sent in MULTI mode would
     * be queued in the application's transaction.
     */
    private function atomic(): void
    {
        $prefix = $this->client->getOption(\Redis::OPT_PREFIX);
        $this->prefix = is_string($prefix) ? $prefix : '';
        if (!$this->cluster && $this->client->getMode() !== \Redis::ATOMIC) {
            throw new Errors\InvalidArgument('client', 'is in MULTI or pipeline mode: run redis-patterns operations outside it (they send their own pipelines)', null);
        }
    }

    /** One request's raw reply, an error reply as ReplyError. */
    private function send(Call|Cmd $req): mixed
    {
        return $this->sendRaw($req, $req->command($this->prefix));
    }

    private function sendRaw(Call|Cmd $req, array $cmd): mixed
    {
        $c = $this->client;
        $c->clearLastError();
        try {
            if ($this->cluster) {
                /** @var \RedisCluster $c */
                $reply = $c->rawCommand($this->route($req), ...$cmd);
            } else {
                $reply = $c->rawCommand(...$cmd);
            }
        } catch (\RedisException $e) {
            if (!ErrorMap::isReply($e->getMessage())) {
                throw $e;
            }
            return new ReplyError($e->getMessage());
        }
        if ($reply === false && ($err = $c->getLastError()) !== null) {
            $c->clearLastError();
            return new ReplyError($err);
        }
        return $reply;
    }

    /** What RedisCluster::rawCommand routes by: the key without the prefix (phpredis adds it), or a node. */
    private function route(Call|Cmd $req): string|array
    {
        $node = $req instanceof Cmd ? $req->node : null;
        $key = $req->routingKey();
        if ($node === null && $key !== null) {
            return $key;
        }
        if ($node === null || $node === Cmd::ANY) {
            $node = $this->slots()->nodes()[0];
        }
        $at = strrpos($node, ':');
        return [substr($node, 0, (int) $at), (int) substr($node, (int) $at + 1)];
    }

    private function slots(): Slots
    {
        if ($this->slots === null) {
            /** @var \RedisCluster $c */
            $c = $this->client;
            $master = $c->_masters()[0];
            $this->slots = Slots::fromReply($c->rawCommand([$master[0], (int) $master[1]], 'CLUSTER', 'SLOTS'));
        }
        return $this->slots;
    }

    /** The node a request of a cluster batch goes to. */
    private function nodeOf(Call|Cmd $req): string
    {
        $node = $req instanceof Cmd ? $req->node : null;
        if ($node !== null && $node !== Cmd::ANY) {
            return $node;
        }
        $key = $req->routingKey();
        return $key === null ? $this->slots()->nodes()[0] : $this->slots()->node($this->slot($key));
    }

    /**
     * A cluster batch: one pipeline per primary (in node order); every node's
     * pipeline is sent, then the error of the earliest failed request thrown.
     *
     * @param list<Call|Cmd> $reqs
     * @return list<mixed>
     */
    private function clusterBatch(array $reqs, int $redirects): array
    {
        $groups = [];
        foreach ($reqs as $i => $q) {
            $groups[$this->nodeOf($q)][$i] = $q;
        }
        ksort($groups);
        $out = [];
        $failed = null;
        foreach ($groups as $node => $group) {
            try {
                $replies = Pipeline::run($this->nodeConnection($node), array_values($group), $this->prefix);
                foreach (array_keys($group) as $j => $i) {
                    $out[$i] = $replies[$j];
                }
            } catch (MovedError $e) {
                $this->slots = null;
                if ($redirects >= 2 || !self::resendable($group)) {
                    $failed ??= [min(array_keys($group)), self::unknown($group, $e->getMessage())];
                    continue;
                }
                $again = $this->clusterBatch(array_values($group), $redirects + 1);
                foreach (array_keys($group) as $j => $i) {
                    $out[$i] = $again[$j];
                }
            } catch (Errors\RedisPatternsError $e) {
                $first = min(array_keys($group));
                if ($failed === null || $first < $failed[0]) {
                    $failed = [$first, $e];
                }
            }
        }
        if ($failed !== null) {
            throw $failed[1];
        }
        ksort($out);
        return array_values($out);
    }

    /** Whether every request of `$group` only reads (sent again after MOVED). */
    private static function resendable(array $group): bool
    {
        foreach ($group as $q) {
            if ($q instanceof Call ? !$q->readOnly : !$q->readOnly()) {
                return false;
            }
        }
        return true;
    }

    private static function unknown(array $group, string $cause): Errors\OutcomeUnknown
    {
        $scripts = [];
        $commands = [];
        foreach ($group as $q) {
            if ($q instanceof Call) {
                $scripts[] = $q->script;
            } else {
                $commands[] = $q->head[0];
            }
        }
        return new Errors\OutcomeUnknown(array_values(array_unique($scripts)), array_values(array_unique($commands)), "a slot moved during a batch ($cause): its writes may or may not have run and were not sent again");
    }

    private function nodeConnection(string $node): \Redis
    {
        return $this->nodeConnections[$node] ??= Endpoint::ofNode($node)->redis();
    }
}
