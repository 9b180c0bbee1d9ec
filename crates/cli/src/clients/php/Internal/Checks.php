<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Errors\InvalidArgument;

/**
 * The input checks the generated classes run before anything is sent, one
 * per type of the API description: each refuses a bad input with
 * InvalidArgument (nothing sent, nothing written) and returns it normalized
 * (a date as 'YYYY-MM-DD', a map's keys as strings, a record as its class).
 */
final class Checks
{
    public static function bad(string $name, string $reason): InvalidArgument
    {
        return new InvalidArgument($name, $reason, null);
    }

    private static function shown(mixed $v): string
    {
        if (is_string($v)) {
            return "'" . (strlen($v) > 60 ? substr($v, 0, 60) . '...' : $v) . "'";
        }
        return is_object($v) ? get_class($v) : get_debug_type($v);
    }

    public static function text(string $what, mixed $v): string
    {
        if (!is_string($v)) {
            throw self::bad($what, 'must be a string, got ' . self::shown($v));
        }
        return $v;
    }

    /** Not empty, no `{` or `}` (it goes into a hash tag). */
    public static function name(string $what, mixed $v): string
    {
        $s = self::text($what, $v);
        if ($s === '' || strpbrk($s, '{}') !== false) {
            throw self::bad($what, "must not be empty and must not contain '{' or '}'");
        }
        return $s;
    }

    public static function token(string $what, mixed $v): string
    {
        $s = self::text($what, $v);
        if ($s === '') {
            throw self::bad($what, 'must not be empty');
        }
        return $s;
    }

    public static function prefix(string $what, mixed $v): string
    {
        $s = self::text($what, $v);
        if (strpbrk($s, '{}') !== false) {
            throw self::bad($what, "must not contain '{' or '}'");
        }
        return $s;
    }

    /** Bytes: a PHP string (binary safe); an int is taken as its decimal text. */
    public static function bytes(string $what, mixed $v): string
    {
        if (is_int($v)) {
            return (string) $v;
        }
        if (!is_string($v)) {
            throw self::bad($what, 'must be a string of bytes, got ' . self::shown($v));
        }
        return $v;
    }

    public static function int(string $what, mixed $v, int $lo, int $hi): int
    {
        if (!is_int($v)) {
            throw self::bad($what, 'must be an integer, got ' . self::shown($v));
        }
        if ($v < $lo || $v > $hi) {
            throw self::bad($what, "must be from $lo to $hi, got $v");
        }
        return $v;
    }

    public static function float(string $what, mixed $v): float
    {
        if ((!is_float($v) && !is_int($v)) || !is_finite((float) $v)) {
            throw self::bad($what, 'must be a finite number');
        }
        return (float) $v;
    }

    public static function bool(string $what, mixed $v): bool
    {
        if (!is_bool($v)) {
            throw self::bad($what, 'must be true or false, got ' . self::shown($v));
        }
        return $v;
    }

    /**
     * A calendar day: a DateTimeInterface (its date in its own time zone) or
     * 'YYYY-MM-DD'; normalized to 'YYYY-MM-DD'.
     */
    public static function date(string $what, mixed $v): string
    {
        if ($v instanceof \DateTimeInterface) {
            return $v->format('Y-m-d');
        }
        if (is_string($v) && preg_match('/^(\d{4})-(\d{2})-(\d{2})$/', $v, $m) === 1
            && checkdate((int) $m[2], (int) $m[3], (int) $m[1])) {
            return $v;
        }
        throw self::bad($what, "must be a DateTimeInterface or 'YYYY-MM-DD', got " . self::shown($v));
    }

    /** A value JSON can carry (what the rolling store stores). */
    public static function json(string $what, mixed $v): mixed
    {
        try {
            json_encode($v, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw self::bad($what, 'must be JSON: ' . $e->getMessage());
        }
        return $v;
    }

    /** @param list<string> $words */
    public static function enum(string $what, mixed $v, array $words): string
    {
        if (!is_string($v) || !in_array($v, $words, true)) {
            throw self::bad($what, 'must be one of ' . implode(', ', $words) . ', got ' . self::shown($v));
        }
        return $v;
    }

    public static function opt(mixed $v, callable $each): mixed
    {
        return $v === null ? null : $each($v);
    }

    public static function list(string $what, mixed $v, callable $each): array
    {
        if (!is_array($v)) {
            throw self::bad($what, 'must be a list, got ' . self::shown($v));
        }
        return array_map($each, array_values($v));
    }

    /**
     * Pairs: a list of [a, b] or a map a => b (PHP turns the numeric string
     * keys of a map into ints: they are taken back as their text).
     */
    public static function pairs(string $what, mixed $v, callable $first, callable $second): array
    {
        if (!is_array($v)) {
            throw self::bad($what, 'must be a list of pairs or a map, got ' . self::shown($v));
        }
        $out = [];
        $asPairs = array_is_list($v) && $v !== [] && is_array($v[0]);
        foreach ($v as $k => $x) {
            if ($asPairs) {
                if (!is_array($x) || count($x) !== 2 || !array_is_list($x)) {
                    throw self::bad($what, 'must be a list of pairs [a, b] or a map');
                }
                $out[] = [$first($x[0]), $second($x[1])];
            } else {
                if (is_array($x)) {
                    throw self::bad($what, 'must be a list of pairs [a, b] or a map');
                }
                $out[] = [$first($k), $second($x)];
            }
        }
        return $out;
    }

    public static function tuple(string $what, mixed $v, callable ...$each): array
    {
        if (!is_array($v) || !array_is_list($v) || count($v) !== count($each)) {
            throw self::bad($what, 'must be a list of ' . count($each) . ' values');
        }
        return array_map(fn (callable $f, mixed $x): mixed => $f($x), $each, $v);
    }

    /** A map; its keys as text (PHP makes numeric string keys ints). */
    public static function map(string $what, mixed $v, callable $key, callable $value): array
    {
        if (!is_array($v)) {
            throw self::bad($what, 'must be a map, got ' . self::shown($v));
        }
        $out = [];
        foreach ($v as $k => $x) {
            $out[$key(is_int($k) ? (string) $k : $k)] = $value($x);
        }
        return $out;
    }

    /**
     * @template T of object
     * @param class-string<T> $class
     * @return T an instance of the record class, or one made of an array of exactly its fields (by the description's names or in camelCase)
     */
    public static function record(string $what, mixed $v, string $class): object
    {
        if ($v instanceof $class) {
            return $v;
        }
        $fields = $class::FIELDS;
        if (is_array($v) && count($v) === count($fields)) {
            $args = [];
            foreach ($fields as $f) {
                $camel = lcfirst(str_replace('_', '', ucwords($f, '_')));
                if (!array_key_exists($f, $v) && !array_key_exists($camel, $v)) {
                    $args = null;
                    break;
                }
                $args[] = array_key_exists($f, $v) ? $v[$f] : $v[$camel];
            }
            if ($args !== null) {
                return new $class(...$args);
            }
        }
        $short = substr($class, (int) strrpos($class, '\\') + 1);
        throw self::bad($what, "must be a $short or an array of its fields (" . implode(', ', $fields) . ')');
    }
}
