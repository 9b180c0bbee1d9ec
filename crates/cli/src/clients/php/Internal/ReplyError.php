<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/** @internal An error reply of phpredis, before it is mapped to this library's error. */
final class ReplyError
{
    public function __construct(public readonly string $message)
    {
    }
}
