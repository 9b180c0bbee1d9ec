<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/** @internal An error reply on a Wire. */
final class WireError
{
    public function __construct(public readonly string $message)
    {
    }
}
