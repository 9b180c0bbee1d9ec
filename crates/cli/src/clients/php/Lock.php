<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\LockBusy;
use RedisPatterns\Errors\LockTimeout;
use RedisPatterns\Scripts\LockScripts;

/** The owner-token lock with fencing tokens: keys <prefix>{<name>} and <prefix>{<name>}:fence. */
final class Lock
{
    public readonly string $key;
    public readonly string $fenceKey;
    public readonly string $wake;

    public function __construct(
        private \Redis|\RedisCluster $redis,
        string $name,
        public readonly int $leaseMs = Contract::DEFAULTS['lock']['lease_ms'],
        string $prefix = Contract::DEFAULTS['lock']['prefix'],
        private int $retryMs = Contract::DEFAULTS['lock']['retry_ms'],
    ) {
        if ($name === '' || strpbrk($name, '{}') !== false || strpbrk($prefix, '{}') !== false) {
            throw new InvalidArgument('lock name', "must not be empty and must not contain '{' or '}'");
        }
        $max = Contract::CONSTANTS['lock']['max_lease_ms'];
        if ($leaseMs < 1 || $leaseMs > $max) {
            throw new InvalidArgument('lease', "must be from 1 to $max ms");
        }
        $this->key = Contract::key('lock', 'lock', ['prefix' => $prefix, 'name' => $name]);
        $this->fenceKey = Contract::key('lock', 'fence', ['prefix' => $prefix, 'name' => $name]);
        $this->wake = Contract::key('lock', 'wake', ['prefix' => $prefix, 'name' => $name]);
    }

    /** An unguessable owner token: token_bytes random bytes as lowercase hex. */
    public static function newToken(): string
    {
        return bin2hex(random_bytes(Contract::CONSTANTS['lock']['token_bytes']));
    }

    /** One attempt: ['token' => ..., 'fence' => ...], or LockBusy. */
    public function tryAcquire(): array
    {
        $token = self::newToken();
        $reply = Runtime::run($this->redis, LockScripts::acquire($this->key, $this->fenceKey, $token, $this->leaseMs, []));
        if ($reply > 0) {
            return ['token' => $token, 'fence' => $reply];
        }
        throw new LockBusy("lock {$this->key} is held by another owner" . ($reply < 0 ? ' for ' . -$reply . ' ms' : ''));
    }

    /** Tries until it gets the lock or $timeoutMs passed (LockTimeout). */
    public function acquire(int $timeoutMs): array
    {
        $started = hrtime(true);
        while (true) {
            try {
                return $this->tryAcquire();
            } catch (LockBusy) {
                $waited = (hrtime(true) - $started) / 1e6;
                if ($waited >= $timeoutMs) {
                    throw new LockTimeout(sprintf('timed out after %d ms waiting for lock %s', $waited, $this->key));
                }
                $wait = $this->retryMs * (0.5 + mt_rand() / (mt_getrandmax() + 1));
                usleep((int) (min($wait, $timeoutMs - $waited) * 1000));
            }
        }
    }

    /** Releases the lock if $token owns it (publishing on the wake channel); false when it does not. */
    public function release(string $token): bool
    {
        return Runtime::run($this->redis, LockScripts::release($this->key, $token, $this->wake)) === 1;
    }

    public function extend(string $token, int $leaseMs): bool
    {
        return Runtime::run($this->redis, LockScripts::extend($this->key, $token, $leaseMs)) === 1;
    }

    /** The remaining lease in ms when $token owns the lock (-1: no TTL), else null. */
    public function owned(string $token): ?int
    {
        $ms = Runtime::run($this->redis, LockScripts::owned($this->key, $token));
        return $ms === 0 ? null : $ms;
    }
}
