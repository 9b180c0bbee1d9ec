<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\LockLost;
use RedisPatterns\Internal\Renewer;

/**
 * A lease held by the body of synchronized() (a lock's, a semaphore's
 * permit, a read or write lease): its token, its fence (a lock's; null for a
 * permit or a read-write lease), and whether it was lost. The lease is
 * renewed every lease/3 by a process of its own while the body runs (see
 * `$renewal`); check() throws LockLost once a renewal found it gone.
 */
final class Holding
{
    /**
     * How the lease is renewed while the body runs: 'auto' (a forked process
     * when pcntl and posix are there, else 'calls'), 'process', or 'calls'
     * (only when the body calls keepAlive(): for php-fpm, which has no pcntl).
     */
    public static string $renewal = 'auto';

    private ?bool $ended = null;

    /** @internal */
    public function __construct(
        public readonly string $key,
        public readonly string $token,
        public readonly ?int $fence,
        private readonly Renewer $renewer,
    ) {
    }

    /** Whether the lease was lost (a renewal found it gone or taken). */
    public function lost(): bool
    {
        return $this->ended ?? $this->renewer->lost();
    }

    /** Throws LockLost once the lease was lost. */
    public function check(): void
    {
        if ($this->lost()) {
            throw new LockLost($this->key, $this->fence ?? 0);
        }
    }

    /** Renews the lease now if lease/3 passed ('calls' mode); then check(). */
    public function keepAlive(): void
    {
        if ($this->ended === null) {
            $this->renewer->keepAlive();
        }
        $this->check();
    }

    /** @internal */
    public function ended(bool $lost): void
    {
        $this->ended = $lost;
    }
}
