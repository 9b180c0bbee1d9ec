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
 */
final class Waiting
{
    /** An unguessable owner token: 16 random bytes as lowercase hex. */
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
    ): mixed {
        $started = hrtime(true);
        $sub = null;
        $subscribed = false;
        try {
            while (true) {
                [$got, $hint] = $attempt();
                if ($got !== null) {
                    return $got;
                }
                $waited = (hrtime(true) - $started) / 1e6;
                if ($waited >= $timeoutMs) {
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
                        $sub->wait($wait);
                    } else {
                        usleep((int) (min($wait, max($pollMs, 1)) * 1000));
                    }
                }
            }
        } finally {
            $sub?->close();
        }
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
