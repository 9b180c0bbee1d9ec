<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Errors\LockTimeout;

/**
 * Notified waiting, written once for the lock, the semaphore and the
 * read-write lock (the protocol of src/lock/wait.rs; manifest: the `acquire`
 * protocols): after a refused attempt, subscribe to the resource's wake
 * channel (SSUBSCRIBE on a connection of its own), try once more (a release
 * in between is not missed), then wait for a release's message or for the
 * holder's remaining lease (plus 1 ms), whichever comes first, and try
 * again, until the timeout (LockTimeout). A lost message costs at most the
 * holder's lease; when the subscription cannot be opened (a side connection
 * refused, see SideConnections) the waiter sleeps until the lease ends
 * instead, polling at most every poll interval. Polling mode sleeps
 * interval * uniform(0.5, 1.5) between attempts.
 *
 * Woken one at a time (the lock and the semaphore: `$to` is the waiter's
 * token): a refused attempt keeps the waiter's place in the resource's
 * queue, a release publishes the token of the next live waiter, and only a
 * message naming this waiter (or `released`) ends its wait; every wait lasts
 * at most `$maxWaitMs` (half the place, which each attempt renews). A
 * resource whose last acquire had to wait (`$contended`) subscribes before
 * its first attempt. At the timeout `$leave` gives the place up.
 */
final class Waiting
{
    /** An unguessable owner token: 16 random bytes as lowercase hex. */
    /**
     * How long a waiter keeps its place in the queue unless renewed, by
     * default: a third of the lease (at least 1 ms), so that a waiter that
     * disappeared is skipped three times sooner than a holder that did; a
     * live waiter renews it every half place.
     */
    public static function defaultPlaceMs(int $leaseMs): int
    {
        return max(intdiv($leaseMs, 3), 1);
    }

    public static function newToken(): string
    {
        return bin2hex(random_bytes(16));
    }

    /** The remaining lease of a refusal `-<ms>` (null: unknown). */
    public static function busyMs(int $reply): ?int
    {
        return $reply < 0 ? -$reply : null;
    }

    /**
     * @template T
     * @param callable(): array{?T, ?int} $attempt one attempt: what it got, or null and the holder's remaining lease
     * @param ?callable(): mixed $leave gives the place in the queue up (at the timeout)
     * @return T
     */
    public static function untilAcquired(
        Runner $run,
        string $key,
        string $channel,
        bool $notified,
        int $pollMs,
        int $timeoutMs,
        callable $attempt,
        ?int $maxWaitMs = null,
        ?string $to = null,
        ?callable $leave = null,
        ?bool &$contended = null,
    ): mixed {
        $started = hrtime(true);
        $sub = null;
        $subscribed = false;
        $refused = false;
        try {
            if ($notified && $timeoutMs > 0 && $contended === true) {
                $subscribed = true;
                $sub = self::subscribe($run, $channel);
            }
            while (true) {
                [$got, $hint] = $attempt();
                if ($got !== null) {
                    if ($contended !== null) {
                        $contended = $refused;
                    }
                    return $got;
                }
                $refused = true;
                $waited = (hrtime(true) - $started) / 1e6;
                if ($waited >= $timeoutMs) {
                    if ($leave !== null) {
                        try {
                            $leave();
                        } catch (\Throwable) {
                            // The place ends by itself otherwise.
                        }
                    }
                    throw new LockTimeout($key, (int) $waited);
                }
                $left = $timeoutMs - $waited;
                $most = $maxWaitMs === null ? $left : min($left, $maxWaitMs);
                if (!$notified) {
                    usleep((int) (min($pollMs * (0.5 + mt_rand() / mt_getrandmax()), $most) * 1000));
                } elseif (!$subscribed) {
                    $subscribed = true;
                    $sub = self::subscribe($run, $channel);
                } else {
                    $wait = $hint === null ? $most : min($hint + 1, $most);
                    if ($sub !== null) {
                        self::waitFor($sub, $wait, $to);
                    } else {
                        usleep((int) (min($wait, max($pollMs, 1)) * 1000));
                    }
                }
            }
        } finally {
            $sub?->close();
        }
    }

    /** The message that wakes every waiter (a release with no waiter queued). */
    public const BROADCAST = 'released';

    /** Waits up to `$ms` for a message for `$to` (or any message when null): those naming other waiters are skipped. */
    private static function waitFor(Subscription $sub, float $ms, ?string $to): void
    {
        $deadline = microtime(true) + $ms / 1000;
        do {
            $message = $sub->wait(max(($deadline - microtime(true)) * 1000, 0.0));
            if ($message === null || $to === null || $message === $to || $message === self::BROADCAST) {
                return;
            }
        } while (microtime(true) < $deadline);
    }

    private static function subscribe(Runner $run, string $channel): ?Subscription
    {
        try {
            return $run->subscribe($channel);
        } catch (\RedisException) {
            return null;
        }
    }
}
