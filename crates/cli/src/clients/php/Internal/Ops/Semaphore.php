<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\NoPermit;
use RedisPatterns\Internal\Holder;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Waiting;
use RedisPatterns\Records\Permit;
use RedisPatterns\Scripts\SemaphoreScripts;

/** The semaphore's operations (src/semaphore.rs, lua/semaphore). */
final class Semaphore
{
    public readonly string $key;
    public readonly string $channel;
    public readonly string $queueKey;
    public readonly string $placesKey;
    /** Whether the last acquire had to wait (the next one subscribes first). */
    private bool $contended = false;
    private readonly bool $notified;

    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    public readonly int $placeMs;

    public function __construct(
        string $name,
        public readonly int $limit,
        public readonly int $leaseMs,
        string $prefix,
        string $waitMode,
        private readonly int $pollMs,
        public readonly bool $fair = false,
        int $placeMs = 0,
    ) {
        $this->placeMs = $placeMs ?: Waiting::defaultPlaceMs($leaseMs);
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->key = Contract::key('semaphore', 'permits', $vars);
        $this->channel = Contract::key('semaphore', 'wake', $vars);
        $this->queueKey = Contract::key('semaphore', 'queue', $vars);
        $this->placesKey = Contract::key('semaphore', 'places', $vars);
        $this->notified = $waitMode === 'notified';
    }

    /** @return array{?Permit, ?int} */
    private function attempt(Runner $run, string $token, int $placeMs = 0): array
    {
        $reply = (int) $run->one(SemaphoreScripts::acquire(
            $this->key, $this->queueKey, $this->placesKey, $token, $this->limit, $this->leaseMs, $placeMs, $this->fair,
        ));
        return $reply === 1 ? [new Permit($token), null] : [null, Waiting::busyMs($reply)];
    }

    public function tryAcquire(Runner $run): Permit
    {
        return $this->tryAcquireAs($run, Waiting::newToken());
    }

    public function tryAcquireAs(Runner $run, string $token): Permit
    {
        [$got, $hint] = $this->attempt($run, $token);
        if ($got === null) {
            throw new NoPermit($this->key, $hint);
        }
        return $got;
    }

    public function acquire(Runner $run, int $timeoutMs): Permit
    {
        return $this->acquireAs($run, Waiting::newToken(), $timeoutMs);
    }

    public function acquireAs(Runner $run, string $token, int $timeoutMs): Permit
    {
        return Waiting::untilAcquired($run, $this->key, $this->channel, $this->notified, $this->pollMs, $timeoutMs,
            fn (): array => $this->attempt($run, $token, $this->placeMs), intdiv($this->placeMs, 2), $token,
            fn () => $this->release($run, $token), $this->contended);
    }

    public function release(Runner $run, string $token): bool
    {
        return (int) $run->one(SemaphoreScripts::release(
            $this->key, $this->queueKey, $this->placesKey, $token, $this->limit, $this->channel,
        )) === 1;
    }

    public function extend(Runner $run, string $token, int $leaseMs): bool
    {
        return (int) $run->one(SemaphoreScripts::extend($this->key, $token, $leaseMs)) === 1;
    }

    public function holder(Runner $run, int $timeoutMs): Holder
    {
        return new Holder(
            $this->key,
            $this->leaseMs,
            fn (): Permit => $this->acquire($run, $timeoutMs),
            fn (Permit $p) => SemaphoreScripts::extend($this->key, $p->token, $this->leaseMs),
            fn (Permit $p): bool => $this->release($run, $p->token),
            fn (Permit $p): ?int => null,
        );
    }
}
