<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\LayoutMissing;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Scripts\LayoutScripts;

/** Stored layouts (src/layout.rs, lua/layout/claim.lua). */
final class Layouts
{
    /** `shards=64, scheme=crc32, version=1` as the Rust crate prints a layout. */
    public static function describe(array $fields): string
    {
        ksort($fields, SORT_STRING);
        $parts = [];
        foreach ($fields as $k => $v) {
            if ($k !== 'pattern' && $k !== 'version') {
                $parts[] = "$k=$v";
            }
        }
        if (isset($fields['version'])) {
            $parts[] = 'version=' . $fields['version'];
        }
        return implode(', ', $parts);
    }

    /** @param array<string, string> $fields */
    public static function claim(Runner $run, string $metaKey, array $fields): void
    {
        ksort($fields, SORT_STRING);
        $pairs = [];
        foreach ($fields as $k => $v) {
            array_push($pairs, (string) $k, (string) $v);
        }
        $reply = $run->one(LayoutScripts::claim($metaKey, $pairs));
        $stored = self::pairs($reply);
        $want = array_map('strval', $fields);
        ksort($stored, SORT_STRING);
        if ($stored !== $want) {
            throw new LayoutMismatch($metaKey, self::describe($stored), self::describe($want));
        }
    }

    /** @return array<string, string>|null */
    public static function read(Runner $run, string $metaKey): ?array
    {
        $stored = self::pairs($run->one(Cmd::key('HGETALL', $metaKey)));
        return $stored === [] ? null : $stored;
    }

    /**
     * The meta key of the pattern's instance `$base` (an empty base: InvalidArgument) and its stored layout (null: none).
     *
     * @return array{string, array<string, string>|null}
     */
    public static function stored(Runner $run, string $pattern, string $base): array
    {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        $meta = Contract::key($pattern, 'meta', ['base' => $base]);
        return [$meta, self::read($run, $meta)];
    }

    /**
     * As stored(), a missing layout thrown (LayoutMissing).
     *
     * @return array{string, array<string, string>}
     */
    public static function existing(Runner $run, string $pattern, string $base): array
    {
        [$meta, $stored] = self::stored($run, $pattern, $base);
        if ($stored === null) {
            throw new LayoutMissing($meta);
        }
        return [$meta, $stored];
    }

    /** A flat [k, v, k, v, ...] reply (or phpredis's map) as a map with string keys. */
    public static function pairs(mixed $reply): array
    {
        $out = [];
        $reply = is_array($reply) ? $reply : [];
        if (!array_is_list($reply)) {
            foreach ($reply as $k => $v) {
                $out[(string) $k] = (string) $v;
            }
            return $out;
        }
        for ($i = 0; $i + 1 < count($reply); $i += 2) {
            $out[(string) $reply[$i]] = (string) $reply[$i + 1];
        }
        return $out;
    }
}
