<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\UidOutOfRange;

/** What SignIn and LoginLog share: day ranges, expiry, bit decoding. Days are 'Y-m-d' strings. */
final class Bitmaps
{
    /** The offsets of the set bits, ascending (bit 0: the high bit of byte 0). */
    public static function decodeBits(string|false|null $bitmap): array
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

    /** 0 when kept forever, else 00:00 UTC of $periodEnd plus $retentionS. */
    public static function expireAt(?int $retentionS, string $periodEnd): int
    {
        if ($retentionS === null) {
            return 0;
        }
        $at = (new \DateTimeImmutable("$periodEnd 00:00:00", new \DateTimeZone('UTC')))->getTimestamp() + $retentionS;
        if ($at <= 0) {
            throw new InvalidArgument('retention', "a period ending at $periodEnd would expire before 1970");
        }
        return $at;
    }

    public static function nextDay(string $day): string
    {
        return (new \DateTimeImmutable($day, new \DateTimeZone('UTC')))->modify('+1 day')->format('Y-m-d');
    }

    /** Every day of $first..$last. */
    public static function days(string $first, string $last): array
    {
        if ($first > $last) {
            throw new InvalidArgument('day range', "reversed: $first is after $last");
        }
        $out = [];
        for ($d = $first; $d <= $last; $d = self::nextDay($d)) {
            $out[] = $d;
        }
        if (count($out) > Contract::CONSTANTS['signin']['max_range_days']) {
            throw new InvalidArgument('day range', 'must span at most ' . Contract::CONSTANTS['signin']['max_range_days'] . ' days');
        }
        return $out;
    }

    /** [first, last] of each calendar month of $first..$last. */
    public static function months(string $first, string $last): array
    {
        $out = [];
        foreach (self::days($first, $last) as $d) {
            $n = count($out);
            if ($n > 0 && substr($out[$n - 1][0], 0, 7) === substr($d, 0, 7)) {
                $out[$n - 1][1] = $d;
            } else {
                $out[] = [$d, $d];
            }
        }
        return $out;
    }

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

    public static function hex16(): string
    {
        return bin2hex(random_bytes(8));
    }

    public static function checkUid(int $uid, int $max): void
    {
        if ($uid > $max) {
            throw new UidOutOfRange(null, "uid $uid is above the configured maximum $max");
        }
    }

    /** The first error of a batch's replies, thrown. */
    public static function throwFirst(array $replies): array
    {
        foreach ($replies as $r) {
            if ($r instanceof \Throwable) {
                throw $r;
            }
        }
        return $replies;
    }
}
