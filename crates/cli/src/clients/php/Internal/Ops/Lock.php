<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\LockBusy;
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
    ) {
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->key = Contract::key('lock', 'lock', $vars);
        $this->fenceKey = Contract::key('lock', 'fence', $vars);
        $this->channel = Contract::key('lock', 'wake', $vars);
        $this->queueKey = Contract::key('lock', 'queue', $vars);
        $this->placesKey = Contract::key('lock', 'places', $vars);
        $this->notified = $waitMode === 'notified';
    }

    private readonly bool $notified;

    /** @return array{?Lease, ?int} */
    private function attempt(Runner $run, string $token, int $placeMs = 0): array
    {
        $reply = (int) $run->one(LockScripts::acquire(
            $this->key, $this->fenceKey, $this->queueKey, $this->placesKey, $token, $this->leaseMs, $placeMs,
            $this->fair, [],
        ));
        return $reply > 0 ? [new Lease($token, $reply), null] : [null, Waiting::busyMs($reply)];
    }

    public function tryAcquire(Runner $run): Lease
    {
        return $this->tryAcquireAs($run, Waiting::newToken());
    }

    public function tryAcquireAs(Runner $run, string $token): Lease
    {
        [$got, $hint] = $this->attempt($run, $token);
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
        return Waiting::untilAcquired($run, $this->key, $this->channel, $this->notified, $this->pollMs, $timeoutMs,
            fn (): array => $this->attempt($run, $token, $this->leaseMs), intdiv($this->leaseMs, 2), $token,
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
