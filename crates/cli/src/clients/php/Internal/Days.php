<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/**
 * Days, ranges, months, time zones and expiry as the day-keyed patterns
 * compute them (src/bitmap/days.rs, src/visits/day.rs). A day is
 * 'YYYY-MM-DD' (what Checks::date() answers).
 */
final class Days
{
    public const MAX_RANGE_DAYS = 3660;

    /** Days since 1970-01-01 of a day. */
    public static function number(string $day): int
    {
        $y = (int) substr($day, 0, 4);
        $m = (int) substr($day, 5, 2);
        $d = (int) substr($day, 8, 2);
        $y -= $m <= 2 ? 1 : 0;
        $era = intdiv($y >= 0 ? $y : $y - 399, 400);
        $yoe = $y - $era * 400;
        $doy = intdiv(153 * ($m + ($m > 2 ? -3 : 9)) + 2, 5) + $d - 1;
        $doe = $yoe * 365 + intdiv($yoe, 4) - intdiv($yoe, 100) + $doy;
        return $era * 146097 + $doe - 719468;
    }

    /** The day `$n` days after 1970-01-01. */
    public static function ofNumber(int $n): string
    {
        $z = $n + 719468;
        $era = intdiv($z >= 0 ? $z : $z - 146096, 146097);
        $doe = $z - $era * 146097;
        $yoe = intdiv($doe - intdiv($doe, 1460) + intdiv($doe, 36524) - intdiv($doe, 146096), 365);
        $doy = $doe - (365 * $yoe + intdiv($yoe, 4) - intdiv($yoe, 100));
        $mp = intdiv(5 * $doy + 2, 153);
        $d = $doy - intdiv(153 * $mp + 2, 5) + 1;
        $m = $mp + ($mp < 10 ? 3 : -9);
        $y = $yoe + $era * 400 + ($m <= 2 ? 1 : 0);
        return sprintf('%04d-%02d-%02d', $y, $m, $d);
    }

    public static function add(string $day, int $n): string
    {
        return self::ofNumber(self::number($day) + $n);
    }

    /** @return list<string> every day of first..last (never reversed, at most 3660 days) */
    public static function range(string $first, string $last): array
    {
        if ($first > $last) {
            throw Checks::bad('day range', "reversed: $first is after $last");
        }
        $a = self::number($first);
        $b = self::number($last);
        if ($b - $a >= self::MAX_RANGE_DAYS) {
            throw Checks::bad('day range', 'must span at most ' . self::MAX_RANGE_DAYS . ' days');
        }
        $out = [];
        for ($n = $a; $n <= $b; $n++) {
            $out[] = self::ofNumber($n);
        }
        return $out;
    }

    /** @return list<array{string, string}> [first day, last day] of each calendar month of first..last, cut to the range */
    public static function months(string $first, string $last): array
    {
        $out = [];
        foreach (self::range($first, $last) as $d) {
            $n = count($out);
            if ($n > 0 && substr($out[$n - 1][0], 0, 7) === substr($d, 0, 7)) {
                $out[$n - 1][1] = $d;
            } else {
                $out[] = [$d, $d];
            }
        }
        return $out;
    }

    /** The first day of the month of `$day`. */
    public static function monthStart(string $day): string
    {
        return substr($day, 0, 8) . '01';
    }

    /** The first day of the month after `$day`'s. */
    public static function nextMonth(string $day): string
    {
        $y = (int) substr($day, 0, 4);
        $m = (int) substr($day, 5, 2);
        return $m === 12 ? sprintf('%04d-01-01', $y + 1) : sprintf('%04d-%02d-01', $y, $m + 1);
    }

    /** The day of the month (1..31) of `$day`. */
    public static function dom(string $day): int
    {
        return (int) substr($day, 8, 2);
    }

    /** 0 when kept forever, else 00:00 UTC of `$periodEnd` plus the retention. */
    public static function expireAt(?int $retentionS, string $periodEnd): int
    {
        if ($retentionS === null) {
            return 0;
        }
        $at = self::number($periodEnd) * 86400 + $retentionS;
        if ($at <= 0) {
            throw Checks::bad('retention', "a period ending at $periodEnd would expire before 1970");
        }
        return $at;
    }

    /** UTC, a fixed offset +HH:MM, or an IANA zone name. */
    public static function zone(string $name): \DateTimeZone
    {
        if ($name === 'UTC' || preg_match('/^[+-]\d{2}:\d{2}$/', $name) === 1) {
            return new \DateTimeZone($name);
        }
        try {
            return new \DateTimeZone($name);
        } catch (\Exception) {
            throw Checks::bad('time_zone', "'$name' is not UTC, +HH:MM or a known IANA zone");
        }
    }

    /** The day of the instant `$unixS` (seconds) in `$zone`. */
    public static function at(int $unixS, \DateTimeZone $zone): string
    {
        return (new \DateTimeImmutable("@$unixS"))->setTimezone($zone)->format('Y-m-d');
    }

    /** Today in `$zone`. */
    public static function today(\DateTimeZone $zone): string
    {
        return (new \DateTimeImmutable('now', $zone))->format('Y-m-d');
    }

    /**
     * The first instant of the day after `$day` in `$zone`, as unix seconds
     * (a DST gap at midnight: the first valid local time after it; an
     * ambiguous one: the earlier).
     */
    public static function endOfDay(string $day, \DateTimeZone $zone): int
    {
        $next = self::add($day, 1);
        $utc = new \DateTimeZone('UTC');
        for ($minute = 0; $minute <= 24 * 60; $minute++) {
            $wall = (new \DateTimeImmutable("$next 00:00:00", $utc))->modify("+$minute minutes")->format('Y-m-d H:i:s');
            $local = new \DateTimeImmutable($wall, $zone);
            if ($local->format('Y-m-d H:i:s') === $wall) {
                return $local->getTimestamp();
            }
        }
        throw Checks::bad('day', "$day: the zone has no valid local time on the next day");
    }

    /** @return list<int> the offsets of the set bits, ascending (bit 0: the high bit of byte 0) */
    public static function decodeBits(?string $bitmap): array
    {
        $out = [];
        $bitmap = (string) $bitmap;
        for ($i = 0, $n = strlen($bitmap); $i < $n; $i++) {
            $byte = ord($bitmap[$i]);
            for ($bit = 0; $byte !== 0 && $bit < 8; $bit++) {
                if ($byte & (0x80 >> $bit)) {
                    $out[] = $i * 8 + $bit;
                }
            }
        }
        return $out;
    }

    /** OR or AND of bitmaps, as BITOP (a missing key is empty). */
    public static function fold(string $op, array $bitmaps): string
    {
        $acc = null;
        foreach ($bitmaps as $b) {
            $b = (string) $b;
            if ($acc === null) {
                $acc = $b;
            } elseif ($op === 'OR') {
                $n = max(strlen($acc), strlen($b));
                $acc = str_pad($acc, $n, "\0") | str_pad($b, $n, "\0");
            } else {
                $n = min(strlen($acc), strlen($b));
                $acc = substr($acc, 0, $n) & substr($b, 0, $n);
            }
        }
        return (string) $acc;
    }
}
