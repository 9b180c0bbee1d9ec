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

/**
 * The semaphore's operations (src/semaphore.rs, lua/semaphore).
 *
 * @extends QueuedResource<Permit>
 */
final class Semaphore extends QueuedResource
{
    public readonly string $key;

    public function __construct(
        string $name,
        public readonly int $limit,
        int $leaseMs,
        string $prefix,
        string $waitMode,
        int $pollMs,
        public readonly bool $fair = false,
        int $placeMs = 0,
    ) {
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->key = Contract::key('semaphore', 'permits', $vars);
        parent::__construct('semaphore', $vars, $this->key, $leaseMs, $waitMode, $pollMs, $placeMs);
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
        return $got ?? throw new NoPermit($this->key, $hint);
    }

    public function acquire(Runner $run, int $timeoutMs): Permit
    {
        return $this->acquireAs($run, Waiting::newToken(), $timeoutMs);
    }

    public function acquireAs(Runner $run, string $token, int $timeoutMs): Permit
    {
        return $this->waitFor($run, $token, $timeoutMs, fn (int $placeMs): array => $this->attempt($run, $token, $placeMs),
            fn () => $this->release($run, $token));
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
        return $this->holding(
            fn (): Permit => $this->acquire($run, $timeoutMs),
            fn (Permit $p) => SemaphoreScripts::extend($this->key, $p->token, $this->leaseMs),
            fn (Permit $p): bool => $this->release($run, $p->token),
        );
    }
}
