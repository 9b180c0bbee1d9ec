<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;

/**
 * What a hold does with one resource (a lock, a semaphore's permit, a read or
 * write lease): acquire within its timeout, the call that extends a lease
 * (sent by the renewer), release it, and the fence it reports.
 */
final class Holder
{
    /**
     * @param \Closure(): object $acquire waits for the lease (LockTimeout)
     * @param \Closure(object): Call $extend the call renewing a lease for lease_ms (answers 1, 0 when lost)
     * @param \Closure(object): bool $release gives it back; false when it was no longer held
     * @param \Closure(object): ?int $fence the lease's fencing token (a lock's), or null
     */
    public function __construct(
        public readonly string $key,
        public readonly int $leaseMs,
        public readonly \Closure $acquire,
        public readonly \Closure $extend,
        public readonly \Closure $release,
        public readonly \Closure $fence,
    ) {
    }
}
