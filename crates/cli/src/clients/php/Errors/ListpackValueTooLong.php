<?php

declare(strict_types=1);

namespace RedisPatterns\Errors;

/** A field or value is longer than max_value in a strict sharded hash; nothing was sent. */
final class ListpackValueTooLong extends RedisPatternsError
{
}
