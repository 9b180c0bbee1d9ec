<?php

declare(strict_types=1);

namespace RedisPatterns\Errors;

/** An id is above the configured maximum; nothing was sent. */
final class IdOutOfRange extends RedisPatternsError
{
}
