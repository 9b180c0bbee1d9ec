<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Internal\Checks;

/** The shard planners, exactly as the Rust crate computes them (src/sharded_hash/plan.rs, src/visits/shards.rs). */
final class Plan
{
    /** P(X > limit) for X ~ Binomial(n, p). */
    public static function binomialTail(int $n, float $p, int $limit): float
    {
        if ($limit >= $n || $p <= 0.0) {
            return 0.0;
        }
        if ($p >= 1.0) {
            return 1.0;
        }
        $k0 = $limit + 1;
        $lnC = 0.0;
        for ($i = 0; $i < $k0; $i++) {
            $lnC += log(($n - $i) / ($i + 1.0));
        }
        $term = exp($lnC + $k0 * log($p) + ($n - $k0) * log1p(-$p));
        $odds = $p / (1.0 - $p);
        $total = 0.0;
        $k = $k0;
        while (true) {
            $total += $term;
            if ($k >= $n) {
                break;
            }
            $ratio = ($n - $k) / ($k + 1.0) * $odds;
            $term *= $ratio;
            $k++;
            if ($ratio < 1.0 && ($term == 0.0 || $term < $total * 1e-17)) {
                break;
            }
        }
        return min($total, 1.0);
    }

    /** The smallest shard count for which shards * P(Bin(expected, 1/shards) > entries) <= target. */
    public static function hashShards(int $expected, int $entries, float $target = 1e-9): int
    {
        $n = max($expected, 1);
        $bound = fn (int $s): float => $s * self::binomialTail($n, 1.0 / $s, $entries);
        $lo = max(intdiv($n + $entries - 1, $entries), 1);
        if ($bound($lo) > $target) {
            $hi = $lo * 2;
            while ($bound($hi) > $target) {
                if ($hi >= 4294967295) {
                    throw Checks::bad('expected', "$expected entries cannot be kept under $entries per shard");
                }
                $lo = $hi;
                $hi = min($hi * 2, 4294967295);
            }
            while ($hi - $lo > 1) {
                $mid = $lo + intdiv($hi - $lo, 2);
                if ($bound($mid) <= $target) {
                    $hi = $mid;
                } else {
                    $lo = $mid;
                }
            }
            $lo = $hi;
        }
        return $lo;
    }

    /** The visit counter's shards: the mean m per shard with m + 4 sqrt(m) <= the intset limit. */
    public static function visitShards(int $expected, int $maxIntsetEntries): int
    {
        if ($maxIntsetEntries < 64) {
            throw Checks::bad('max intset entries', "$maxIntsetEntries is too small to plan shards (at least 64)");
        }
        $root = (-4.0 + sqrt(16.0 + 4.0 * $maxIntsetEntries)) / 2.0;
        $mean = max(floor($root * $root), 1.0);
        $shards = (int) ceil($expected / $mean);
        if ($shards > 1 << 20) {
            throw Checks::bad('expected daily uniques', "$expected needs more than " . (1 << 20) . ' shards');
        }
        return max($shards, 1);
    }
}
