<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/** @internal A cluster node answered MOVED or ASK inside a pipeline: its slot map is stale. */
final class MovedError extends \RuntimeException
{
}
