<?php

declare(strict_types=1);

namespace RedisPatterns\Errors;

/**
 * Every error of this library: a \RedisException (so `catch (\RedisException)`
 * catches them with phpredis's own) whose class names its kind (the Rust
 * ErrorKind, `KIND`) and whose readonly properties carry its data (`data()`
 * gives them by the description's names).
 */
abstract class RedisPatternsError extends \RedisException
{
    public const KIND = '';

    /** @return array<string, mixed> the error's data, by the description's names */
    abstract public function data(): array;

    /** `Kind: name=value, ...` of the fields that are set. */
    protected static function describe(string $kind, array $data): string
    {
        $parts = [];
        foreach ($data as $k => $v) {
            if ($v !== null) {
                $parts[] = $k . '=' . (is_string($v) ? "'$v'" : json_encode($v));
            }
        }
        return $kind . ': ' . implode(', ', $parts);
    }
}
