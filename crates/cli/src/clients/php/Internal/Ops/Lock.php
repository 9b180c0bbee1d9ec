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

/** The lock's operations (src/lock, lua/lock). */
final class Lock
{
    public readonly string $key;
    public readonly string $fenceKey;
    public readonly string $channel;
    public readonly string $queueKey;
    public readonly string $placesKey;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    private bool $contended = false;

    public function __construct(
        public readonly string $name,
        public readonly int $leaseMs,
        string $prefix,
        string $waitMode,
        private readonly int $pollMs,
        public readonly bool $fair = false,
        private readonly string $replication = 'none',
        private readonly int $replicas = 1,
        private readonly int $replicationTimeoutMs = 1000,
        int $placeMs = 0,
    ) {
        $this->placeMs = $placeMs ?: Waiting::defaultPlaceMs($leaseMs);
        if ($replication === 'acknowledged' && $replicas === 0) {
            throw new InvalidArgument('replicas', 'must be at least 1', null);
        }
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->key = Contract::key('lock', 'lock', $vars);
        $this->fenceKey = Contract::key('lock', 'fence', $vars);
        $this->channel = Contract::key('lock', 'wake', $vars);
        $this->queueKey = Contract::key('lock', 'queue', $vars);
        $this->placesKey = Contract::key('lock', 'places', $vars);
        $this->notified = $waitMode === 'notified';
    }

    private readonly bool $notified;

    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    public readonly int $placeMs;

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
        [$got, $hint] = $this->attempt($run, $token, 0, $this->waits($run));
        if ($got === null) {
            throw new LockBusy($this->key, $hint);
        }
        return $got;
    }

    public function acquire(Runner $run, int $timeoutMs): Lease
    {
        return $this->acquireAs($run, Waiting::newToken(), $timeoutMs);
    }

    public function acquireAs(Runner $run, string $token, int $timeoutMs): Lease
    {
        $waits = $this->waits($run);
        return Waiting::untilAcquired($run, $this->key, $this->channel, $this->notified, $this->pollMs, $timeoutMs,
            fn (): array => $this->attempt($run, $token, $this->placeMs, $waits), intdiv($this->placeMs, 2), $token,
            fn () => $this->release($run, $token), $this->contended);
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
        return new Holder(
            $this->key,
            $this->leaseMs,
            fn (): Lease => $this->acquire($run, $timeoutMs),
            fn (Lease $l) => LockScripts::extend($this->key, $l->token, $this->leaseMs),
            fn (Lease $l): bool => $this->release($run, $l->token),
            fn (Lease $l): ?int => $l->fence,
        );
    }
}
