<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;

/**
 * The client-side functions of the manifest, bit for bit as the Rust crate
 * computes them: crc32 shard ids, MurmurHash3 x86 32-bit, the sized Bloom
 * filters' offsets, block selection, parameters and size-class block
 * planning, and the PHP recipe's BloomFilter::JSHash. Every constant comes
 * from the generated Contract.
 */
final class Hashing
{
    private static function c(string $name): mixed
    {
        return Contract::CONSTANTS['bloom'][$name];
    }

    public static function crc32(string $data): int
    {
        return crc32($data);
    }

    /** MurmurHash3_x86_32 of $data with initial hash state $h (PHP's murmur3a). */
    public static function murmur3(string $data, int $h): int
    {
        return (int) hexdec(hash('murmur3a', $data, false, ['seed' => $h]));
    }

    /** [h1, h2, hb] of an item under the sized filters' scheme. */
    public static function sizedHashes(string $item): array
    {
        return [self::murmur3($item, self::c('h1_init')), self::murmur3($item, self::c('h2_init')), self::murmur3($item, self::c('hb_init'))];
    }

    /** The block j with S_j <= floor(hb * M / 2^32) < S_(j+1) (exact for M < 2^47). */
    public static function selectBlock(int $hb, array $blockBits): int
    {
        $total = array_sum($blockBits);
        $x = ((($hb >> 16) * $total) + ((($hb & 0xFFFF) * $total) >> 16)) >> 16;
        $start = 0;
        foreach ($blockBits as $j => $bits) {
            if ($x < $start + $bits) {
                return $j;
            }
            $start += $bits;
        }
        throw new \LogicException('block point beyond the last block');
    }

    /** [block, offsets] of an item. */
    public static function sizedOffsets(string $item, array $blockBits, int $k): array
    {
        [$h1, $h2, $hb] = self::sizedHashes($item);
        $block = self::selectBlock($hb, $blockBits);
        $bits = $blockBits[$block];
        $out = [];
        for ($i = 0; $i < $k; $i++) {
            $out[] = ($h1 + $i * $h2) % $bits;
        }
        return [$block, $out];
    }

    /** The PHP recipe's BloomFilter::JSHash($string, $limitMemory), as PHP computes it. */
    public static function jsHash(string $string, bool $limitMemory = true): int
    {
        $hash = self::c('jshash_init');
        $len = strlen($string);
        $previous = error_reporting(error_reporting() & ~E_DEPRECATED);
        try {
            for ($i = 0; $i < $len; $i++) {
                // PHP's own arithmetic: an overflowing + becomes a float, ^= converts it back.
                $hash ^= (($hash << 5) + ord($string[$i]) + ($hash >> 2));
            }
        } finally {
            error_reporting($previous);
        }
        $num = ($hash % 0xFFFFFFFF) & 0xFFFFFFFF;
        if ($limitMemory) {
            foreach (self::c('jshash_folds') as [$above, $by]) {
                if ($num > $above) {
                    $num = intdiv($num, $by);
                    break;
                }
            }
        }
        return $num;
    }

    private static function sizeClass(int $size): int
    {
        $min = self::c('min_class');
        if ($size <= $min) {
            return $min;
        }
        $lg = intdiv(strlen(decbin($size - 1)) - 1, 1);
        $step = 1 << max($lg - self::c('lg_classes_per_doubling'), self::c('lg_quantum'));
        return intdiv($size + $step - 1, $step) * $step;
    }

    private static function classBelow(int $c): int
    {
        $min = self::c('min_class');
        if ($c <= $min) {
            return 0;
        }
        if ($c <= 2 * $min) {
            return $min;
        }
        $lg = strlen(decbin($c - 1)) - 1;
        return $c - (1 << max($lg - self::c('lg_classes_per_doubling'), self::c('lg_quantum')));
    }

    private static function sdsOverhead(int $n): int
    {
        $h = self::c('sds_headers');
        return 1 + ($n < 1 << 8 ? $h[0] : ($n < 1 << 16 ? $h[1] : ($n < 1 << 32 ? $h[2] : $h[3])));
    }

    private static function payloadOfClass(int $c): int
    {
        foreach (self::c('sds_headers') as $h) {
            $p = max(0, $c - 1 - $h);
            if ($p + self::sdsOverhead($p) <= $c) {
                return $p;
            }
        }
        return 0;
    }

    /** The usable bits of each block of a filter of $m bits. */
    public static function planBlocks(int $m, int $maxBlockBytes): array
    {
        $ceil8 = fn(int $x) => intdiv($x + 7, 8);
        $total = $ceil8($m + 1);
        $tolerance = max(intdiv($total, self::c('waste_divisor')), self::c('min_waste'));
        $maxBlocks = intdiv($total + $maxBlockBytes - 1, $maxBlockBytes) + self::c('extra_blocks');
        $blocks = [];
        $need = $m;
        while (true) {
            $needBytes = $ceil8($need + 1);
            $class = self::sizeClass($needBytes + self::sdsOverhead($needBytes));
            $fill = min(max(self::payloadOfClass($class), $needBytes), max($maxBlockBytes, $needBytes));
            $waste = $class - $needBytes - self::sdsOverhead($needBytes);
            if ($needBytes <= $maxBlockBytes && ($waste <= $tolerance || count($blocks) + 1 >= $maxBlocks)) {
                $blocks[] = min($fill, $maxBlockBytes) * 8 - 1;
                return $blocks;
            }
            $cap = min($needBytes, $maxBlockBytes);
            $c = self::sizeClass($cap + self::sdsOverhead($cap));
            while (self::payloadOfClass($c) > $cap) {
                $c = self::classBelow($c);
            }
            $bytes = max(self::payloadOfClass($c), self::c('min_class'));
            $blocks[] = $bytes * 8 - 1;
            $need = max(0, $need - ($bytes * 8 - 1));
            if ($need === 0) {
                return $blocks;
            }
        }
    }

    /** [m, k, blockBits] of a sized filter for $n items at false-positive rate $p. */
    public static function bloomParams(int $n, float $p, ?int $maxBits = null, ?int $maxBlockBytes = null): array
    {
        $maxBits ??= Contract::DEFAULTS['bloom']['max_bits'];
        $maxBlockBytes ??= self::c('max_block_bytes');
        if ($n < 1) {
            throw new InvalidArgument('expected items', 'must be at least 1', null);
        }
        if (!($p > 0.0 && $p < 1.0)) {
            throw new InvalidArgument('false-positive rate', "$p is not strictly between 0 and 1", null);
        }
        if ($maxBlockBytes < 64 || $maxBlockBytes > self::c('max_block_bytes')) {
            throw new InvalidArgument('max block bytes', 'must be from 64 to ' . self::c('max_block_bytes'), null);
        }
        $ln2 = self::c('ln2');
        $mf = ceil(-(float) $n * log($p) / ($ln2 * $ln2));
        if ($mf > $maxBits) {
            throw new InvalidArgument('filter size', "m = $mf bits exceeds the configured bound of $maxBits bits", null);
        }
        $m = max(1, (int) $mf);
        $x = ((float) $m / (float) $n) * $ln2;
        $r = floor($x);
        $k = max(1, (int) ($x - $r >= 0.5 ? $r + 1 : $r));
        if ($k > self::c('max_k')) {
            throw new InvalidArgument('false-positive rate', "$p needs k = $k > " . self::c('max_k') . ' hash functions', null);
        }
        return [$m, $k, self::planBlocks($m, $maxBlockBytes)];
    }

    /** The config's p field: the shortest round-trip decimal, as Rust's {:?} writes it. */
    public static function formatP(float $p): string
    {
        $previous = ini_get('serialize_precision');
        ini_set('serialize_precision', '-1');
        try {
            $s = json_encode($p);
        } finally {
            ini_set('serialize_precision', (string) $previous);
        }
        $s = strtolower((string) $s);
        if (str_contains($s, 'e')) {
            [$mant, $exp] = explode('e', $s);
            if (str_ends_with($mant, '.0')) {
                $mant = substr($mant, 0, -2);
            }
            return $mant . 'e' . (int) $exp;
        }
        return $s;
    }
}
