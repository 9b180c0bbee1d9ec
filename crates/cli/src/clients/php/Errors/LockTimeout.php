<?php

declare(strict_types=1);

namespace RedisPatterns\Errors;

/** A blocking acquire did not get the lock before its deadline. */
final class LockTimeout extends RedisPatternsError
{
}
