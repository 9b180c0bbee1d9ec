<?php

declare(strict_types=1);

namespace RedisPatterns\Errors;

/** Another owner holds the lock. */
final class LockBusy extends RedisPatternsError
{
}
