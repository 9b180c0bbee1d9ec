<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\LockBusy;
use RedisPatterns\Errors\NotReplicated;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Holder;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Waiting;
use RedisPatterns\Records\Lease;
use RedisPatterns\Records\LockStatus;
use RedisPatterns\Scripts\LockScripts;

/**
 * The lock's operations (src/lock, lua/lock).
 *
 * @extends QueuedResource<Lease>
 */
final class Lock extends QueuedResource
{
    public readonly string $key;
    public readonly string $fenceKey;

    public function __construct(
        public readonly string $name,
        int $leaseMs,
        string $prefix,
        string $waitMode,
        int $pollMs,
        public readonly bool $fair = false,
        private readonly string $replication = 'none',
        private readonly int $replicas = 1,
        private readonly int $replicationTimeoutMs = 1000,
        int $placeMs = 0,
    ) {
        if ($replication === 'acknowledged' && $replicas === 0) {
            throw new InvalidArgument('replicas', 'must be at least 1', null);
        }
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->key = Contract::key('lock', 'lock', $vars);
        $this->fenceKey = Contract::key('lock', 'fence', $vars);
        parent::__construct('lock', $vars, $this->key, $leaseMs, $waitMode, $pollMs, $placeMs);
    }

    /** @return array{int, int}|null the WAIT an acquire sends after its script (replicas, timeout ms), or null */
    private function waits(Runner $run): ?array
    {
        if ($this->replication === 'none') {
            return null;
        }
        if ($this->replication === 'acknowledged') {
            return [$this->replicas, $this->replicationTimeoutMs];
        }
        // auto: the primary of the lock's slot has replicas (asked once per acquire)
        $info = (string) $run->one(new Cmd(['INFO', 'replication'], route: $this->key));
        return preg_match('/^connected_slaves:([1-9][0-9]*)/m', $info) === 1 ? [1, 1000] : null;
    }

    /**
     * @param array{int, int}|null $waits
     * @return array{?Lease, ?int}
     */
    private function attempt(Runner $run, string $token, int $placeMs, ?array $waits): array
    {
        $call = LockScripts::acquire(
            $this->key, $this->fenceKey, $this->queueKey, $this->placesKey, $token, $this->leaseMs, $placeMs,
            $this->fair, [],
        );
        if ($waits === null) {
            $reply = (int) $run->one($call);
        } else {
            // WAIT right after the script, in one pipeline on one connection to the lock's node.
            [$reply, $acked] = array_map('intval', $run->batch([$call, new Cmd(['WAIT', (string) $waits[0], (string) $waits[1]], route: $this->key)]));
            if ($reply > 0 && $acked < $waits[0]) {
                try {
                    $this->release($run, $token); // its token is never used: free the lock now (best effort)
                } catch (RedisPatternsError|\RedisException) {
                }
                throw new NotReplicated($this->key, $reply, max($acked, 0), $waits[0]);
            }
        }
        return $reply > 0 ? [new Lease($token, $reply), null] : [null, Waiting::busyMs($reply)];
    }

    public function tryAcquire(Runner $run): Lease
    {
        return $this->tryAcquireAs($run, Waiting::newToken());
    }

    public function tryAcquireAs(Runner $run, string $token): Lease
    {
        [$got, $hint] = $this->attempt($run, $token, 0, $this->replication === 'none' ? null : $this->waits($run));
        return $got ?? throw new LockBusy($this->key, $hint);
    }

    public function acquire(Runner $run, int $timeoutMs): Lease
    {
        return $this->acquireAs($run, Waiting::newToken(), $timeoutMs);
    }

    public function acquireAs(Runner $run, string $token, int $timeoutMs): Lease
    {
        $waits = $this->waits($run);
        return $this->waitFor($run, $token, $timeoutMs, fn (int $placeMs): array => $this->attempt($run, $token, $placeMs, $waits),
            fn () => $this->release($run, $token));
    }

    public function release(Runner $run, string $token): bool
    {
        return (int) $run->one(LockScripts::release($this->key, $this->queueKey, $this->placesKey, $token, $this->channel)) === 1;
    }

    public function extend(Runner $run, string $token, int $leaseMs): bool
    {
        return (int) $run->one(LockScripts::extend($this->key, $token, $leaseMs)) === 1;
    }

    public function owned(Runner $run, string $token): ?int
    {
        $ms = (int) $run->one(LockScripts::owned($this->key, $token));
        return $ms === 0 ? null : ($ms > 0 ? $ms : -1);
    }

    public function status(Runner $run): LockStatus
    {
        [$pttl, $fence] = $run->batch([Cmd::key('PTTL', $this->key), Cmd::key('GET', $this->fenceKey)]);
        $pttl = (int) $pttl;
        return new LockStatus($this->key, $pttl !== -2, $pttl >= 0 ? $pttl : null, $fence === null ? 0 : (int) $fence);
    }

    public function holder(Runner $run, int $timeoutMs): Holder
    {
        return $this->holding(
            fn (): Lease => $this->acquire($run, $timeoutMs),
            fn (Lease $l) => LockScripts::extend($this->key, $l->token, $this->leaseMs),
            fn (Lease $l): bool => $this->release($run, $l->token),
            fn (Lease $l): ?int => $l->fence,
        );
    }
}
