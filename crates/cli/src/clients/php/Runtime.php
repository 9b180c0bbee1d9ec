<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Slots;

/**
 * Raw script calls, for what the classes do not cover: run() sends one Call
 * of the generated RedisPatterns\Scripts\*Scripts methods (EVALSHA, EVALSHA_RO
 * for a read-only script; after NOSCRIPT the script is loaded, its SHA1
 * checked, and the call sent again), all() sends many as one pipeline (a
 * cluster: one per primary). An error reply is thrown as its error class
 * (RedisPatterns\Errors). The argument checks below are those of the
 * generated methods, which write the integer, string, boolean and enum
 * checks inline (the same conditions and errors: a static call per argument
 * cost more than the rest of building a call).
 */
final class Runtime
{
    /**
     * One Call, or one plain command given as [name, key, args...] (routed by its key).
     */
    public static function run(\Redis|\RedisCluster $client, Call|array $req): mixed
    {
        return Runner::of($client)->one(self::request($req));
    }

    /**
     * Many requests as one pipeline per node: the replies in order, or the first error thrown.
     *
     * @param list<Call|array> $reqs
     */
    public static function all(\Redis|\RedisCluster $client, array $reqs): array
    {
        return Runner::of($client)->batch(array_map([self::class, 'request'], array_values($reqs)));
    }

    private static function request(Call|array $req): Call|Cmd
    {
        if ($req instanceof Call) {
            return $req;
        }
        $req = array_values(array_map('strval', $req));
        if ($req === []) {
            throw new InvalidArgument('command', 'must name a command', null);
        }
        return count($req) > 1 ? new Cmd([$req[0]], [$req[1]], array_slice($req, 2)) : new Cmd($req);
    }

    // Argument checks of the generated script methods.

    public static function int(string $name, mixed $v, int $lo, int $hi, string $reason): void
    {
        if (!is_int($v) || $v < $lo || $v > $hi) {
            throw new InvalidArgument($name, $reason, null);
        }
    }

    public static function float(string $name, mixed $v, string $reason): void
    {
        if (!(is_float($v) || is_int($v)) || !is_finite((float) $v)) {
            throw new InvalidArgument($name, $reason, null);
        }
    }

    public static function bool(string $name, mixed $v, string $reason): void
    {
        if (!is_bool($v)) {
            throw new InvalidArgument($name, $reason, null);
        }
    }

    public static function enum(string $name, mixed $v, array $words, string $reason): void
    {
        if (!in_array($v, $words, true)) {
            throw new InvalidArgument($name, $reason, null);
        }
    }

    public static function text(string $name, mixed $v, bool $nonEmpty, string $reason): void
    {
        if (!is_string($v)) {
            throw new InvalidArgument($name, 'must be a string', null);
        }
        if ($nonEmpty && $v === '') {
            throw new InvalidArgument($name, $reason, null);
        }
    }

    /** The part of a name that picks its cluster slot: the first non-empty {...}, else the name. */
    public static function hashTag(string $name): string
    {
        return Slots::hashTag($name);
    }

    /**
     * @var array<string, string> values found to carry the hash tag of the key
     * they map to: a pattern checks its channel against its key at every
     * release, always the same two (emptied past 1,024 values)
     */
    private static array $sameTag = [];

    /** A `tagged` argument: not empty, with the hash tag of the first key. */
    public static function tagged(string $name, mixed $v, mixed $key, string $reason): void
    {
        if (is_string($v) && is_string($key) && (self::$sameTag[$v] ?? null) === $key) {
            return;
        }
        self::text($name, $v, true, $reason);
        if (!is_string($key) || self::hashTag($v) !== self::hashTag($key)) {
            throw new InvalidArgument($name, $reason, null);
        }
        if (count(self::$sameTag) >= 1024) {
            self::$sameTag = [];
        }
        self::$sameTag[$v] = $key;
    }

    /** @return list<string> */
    public static function keys(array $keys): array
    {
        foreach ($keys as $k) {
            if (!is_string($k)) {
                throw new InvalidArgument('keys', 'a key must be a string', null);
            }
        }
        return array_values($keys);
    }

    public static function floatText(float $v): string
    {
        return Hashing::formatP($v);
    }
}
