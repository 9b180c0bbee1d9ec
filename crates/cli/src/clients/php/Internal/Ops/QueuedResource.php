<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Internal\Holder;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Waiting;

/**
 * What the lock, the semaphore and the read-write lock share: the wake
 * channel, the queue of waiters and their places (the pattern's `wake`,
 * `queue` and `places` keys), how long a place lasts, how to wait
 * (Waiting::untilAcquired) and whether the last acquire had to wait (the
 * next one subscribes first).
 *
 * @template L of object
 */
abstract class QueuedResource
{
    public readonly string $channel;
    public readonly string $queueKey;
    public readonly string $placesKey;
    /** How long a waiter keeps its place in the queue unless renewed (ms). */
    public readonly int $placeMs;
    private readonly bool $notified;
    private bool $contended = false;

    /** @param array{prefix: string, name: string} $vars */
    protected function __construct(
        string $pattern,
        array $vars,
        private readonly string $waitKey,
        public readonly int $leaseMs,
        string $waitMode,
        private readonly int $pollMs,
        int $placeMs,
    ) {
        $this->placeMs = $placeMs ?: Waiting::defaultPlaceMs($leaseMs);
        $this->channel = Contract::key($pattern, 'wake', $vars);
        $this->queueKey = Contract::key($pattern, 'queue', $vars);
        $this->placesKey = Contract::key($pattern, 'places', $vars);
        $this->notified = $waitMode === 'notified';
    }

    /**
     * Attempts (each renewing the waiter's place) until one gets it; at the timeout `$leave` gives the place up.
     *
     * @param \Closure(int): array{?L, ?int} $attempt one attempt, given the place (ms)
     * @param \Closure(): mixed $leave
     * @return L
     */
    protected function waitFor(Runner $run, string $token, int $timeoutMs, \Closure $attempt, \Closure $leave): object
    {
        return Waiting::untilAcquired($run, $this->waitKey, $this->channel, $this->notified, $this->pollMs, $timeoutMs,
            fn (): array => $attempt($this->placeMs), intdiv($this->placeMs, 2), $token, $leave, $this->contended);
    }

    /**
     * A hold of the resource: `$acquire` waits, `$extend` is the call renewing a lease, `$release` gives it back.
     *
     * @param \Closure(): L $acquire
     * @param \Closure(L): \RedisPatterns\Call $extend
     * @param \Closure(L): bool $release
     * @param ?\Closure(L): ?int $fence a lock's fencing token (null: none)
     */
    protected function holding(\Closure $acquire, \Closure $extend, \Closure $release, ?\Closure $fence = null): Holder
    {
        return new Holder($this->waitKey, $this->leaseMs, $acquire, $extend, $release, $fence ?? fn (object $l): ?int => null);
    }
}
