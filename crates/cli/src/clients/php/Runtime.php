<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Errors\ServerError;

/**
 * Sends calls: EVALSHA (EVALSHA_RO for read-only scripts); after NOSCRIPT the
 * script is loaded with SCRIPT LOAD (its SHA1 checked) and the call sent once
 * more. An error reply becomes the exception of its code (Contract::ERRORS).
 * A request is a Call or a plain command (an array: name, args...); a batch
 * (run_all) runs its requests in order and returns each reply or exception.
 */
final class Runtime
{
    /**
     * The key that remembers one call with a request id, in $key's slot (manifest: functions
     * request_key); without an id, the key the scripts leave untouched.
     */
    public static function requestKey(string $key, ?string $requestId = null): string
    {
        $suffix = $requestId === null ? 'req' : "req:$requestId";
        if ($requestId !== null && (strlen($requestId) < 1 || strlen($requestId) > 200)) {
            throw new InvalidArgument('request id', 'must be 1 to 200 bytes');
        }
        $open = strpos($key, '{');
        $close = $open === false ? false : strpos($key, '}', $open + 1);
        if ($close !== false && $close > $open + 1) {
            return "$key:$suffix";
        }
        if (str_contains($key, '}')) {
            throw new InvalidArgument('key', "has no hash tag but contains '}': no other key can share its slot");
        }
        return '{' . $key . '}:' . $suffix;
    }

    public static function run(\Redis|\RedisCluster $redis, Call|array $req): mixed
    {
        $reply = self::send($redis, $req);
        if ($reply instanceof \Throwable) {
            throw $reply;
        }
        if ($reply instanceof NoScript) {
            $loaded = $redis instanceof \RedisCluster ? $redis->script($req->keys[0] ?? '', 'load', $req->source()) : $redis->script('load', $req->source());
            if (strtolower((string) $loaded) !== $req->sha1) {
                throw new ServerError('SHAMISMATCH', "server returned sha1 $loaded, expected {$req->sha1}", $req->script);
            }
            $reply = self::send($redis, $req);
            if ($reply instanceof \Throwable) {
                throw $reply;
            }
            if ($reply instanceof NoScript) {
                throw new ServerError('NOSCRIPT', 'the script is still not loaded', $req->script);
            }
        }
        return $reply;
    }

    /** Every request in order: its reply, or its exception in its place. */
    public static function runAll(\Redis|\RedisCluster $redis, array $reqs): array
    {
        $out = [];
        foreach ($reqs as $req) {
            try {
                $out[] = self::run($redis, $req);
            } catch (RedisPatternsError $e) {
                $out[] = $e;
            }
        }
        return $out;
    }

    /** The replies of runAll, the first exception thrown. */
    public static function all(\Redis|\RedisCluster $redis, array $reqs): array
    {
        $out = self::runAll($redis, $reqs);
        foreach ($out as $r) {
            if ($r instanceof \Throwable) {
                throw $r;
            }
        }
        return $out;
    }

    private static function send(\Redis|\RedisCluster $redis, Call|array $req): mixed
    {
        $cmd = $req instanceof Call ? $req->command() : $req;
        $redis->clearLastError();
        try {
            if ($redis instanceof \RedisCluster) {
                $first = $req instanceof Call ? ($req->keys[0] ?? '') : (string) ($cmd[1] ?? '');
                $reply = $redis->rawCommand($first, ...$cmd);
            } else {
                $reply = $redis->rawCommand(...$cmd);
            }
        } catch (\RedisException $e) {
            return self::error($req, $e->getMessage());
        }
        if ($reply === false && ($err = $redis->getLastError()) !== null) {
            $redis->clearLastError();
            if (str_starts_with($err, 'NOSCRIPT') && $req instanceof Call) {
                return new NoScript();
            }
            return self::error($req, $err);
        }
        return $reply;
    }

    /** The exception of an error reply `$text` to `$req`. */
    public static function error(Call|array $req, string $text): \Throwable
    {
        [$code, $detail] = array_pad(explode(' ', $text, 2), 2, '');
        if (($at = strpos($detail, ' script: ')) !== false) {
            $detail = rtrim(substr($detail, 0, $at));
        }
        $script = $req instanceof Call ? $req->script : null;
        if ($script !== null && isset(Contract::ERRORS[$code])) {
            if ($code === 'BADARG') {
                [$name, $reason] = array_pad(explode(' ', $detail, 2), 2, '');
                return new InvalidArgument($name, $reason, $script);
            }
            $class = Contract::ERRORS[$code];
            return new $class($script, $detail);
        }
        return new ServerError($code, $detail, $script);
    }

    // Argument checks of the generated script methods.

    public static function int(string $name, mixed $v, int $lo, int $hi, string $reason): void
    {
        if (!is_int($v) || $v < $lo || $v > $hi) {
            throw new InvalidArgument($name, $reason);
        }
    }

    public static function float(string $name, mixed $v, string $reason): void
    {
        if (!(is_float($v) || is_int($v)) || !is_finite((float) $v)) {
            throw new InvalidArgument($name, $reason);
        }
    }

    public static function bool(string $name, mixed $v, string $reason): void
    {
        if (!is_bool($v)) {
            throw new InvalidArgument($name, $reason);
        }
    }

    public static function enum(string $name, mixed $v, array $words, string $reason): void
    {
        if (!in_array($v, $words, true)) {
            throw new InvalidArgument($name, $reason);
        }
    }

    public static function text(string $name, mixed $v, bool $nonEmpty, string $reason): void
    {
        if (!is_string($v)) {
            throw new InvalidArgument($name, 'must be a string');
        }
        if ($nonEmpty && $v === '') {
            throw new InvalidArgument($name, $reason);
        }
    }

    /** The part of a name that picks its cluster slot: the first non-empty {...}, else the name. */
    public static function hashTag(string $name): string
    {
        $open = strpos($name, '{');
        if ($open !== false) {
            $close = strpos($name, '}', $open + 1);
            if ($close !== false && $close > $open + 1) {
                return substr($name, $open + 1, $close - $open - 1);
            }
        }
        return $name;
    }

    /** A `tagged` argument: not empty, with the hash tag of the first key. */
    public static function tagged(string $name, mixed $v, mixed $key, string $reason): void
    {
        self::text($name, $v, true, $reason);
        if (!is_string($key) || self::hashTag($v) !== self::hashTag($key)) {
            throw new InvalidArgument($name, $reason);
        }
    }

    public static function keys(array $keys): array
    {
        foreach ($keys as $k) {
            if (!is_string($k)) {
                throw new InvalidArgument('keys', 'a key must be a string');
            }
        }
        return array_values($keys);
    }

    public static function floatText(float $v): string
    {
        return Hashing::formatP($v);
    }
}

/** @internal The reply NOSCRIPT. */
final class NoScript
{
}
