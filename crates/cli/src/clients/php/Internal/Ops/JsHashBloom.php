<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Hashing;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\LoadProgress;
use RedisPatterns\Scripts\BloomScripts;

/** The PHP BloomFilter::JSHash recipe's bitmap: one bit per item at JSHash(item). */
final class JsHashBloom
{
    public readonly string $key;

    public function __construct(string $key, string $prefix, private readonly bool $limitMemory)
    {
        if ($key === '') {
            throw Checks::bad('key', 'must not be empty');
        }
        $this->key = $prefix . $key;
    }

    public function offset(string $item): int
    {
        if ($item === '') {
            throw Checks::bad('item', 'must not be empty in a JSHash filter');
        }
        return Hashing::jsHash($item, $this->limitMemory);
    }

    /** @return list<bool> */
    public function multiAdd(Runner $run, array $items): array
    {
        $offsets = array_map(fn (string $i): int => $this->offset($i), $items);
        if ($offsets === []) {
            return [];
        }
        return array_map(fn ($f): bool => (int) $f === 1, $run->one(BloomScripts::jshashAdd($this->key, $offsets)));
    }

    /** @return list<bool> */
    public function multiExists(Runner $run, array $items): array
    {
        $offsets = array_map(fn (string $i): int => $this->offset($i), $items);
        if ($offsets === []) {
            return [];
        }
        return array_map(fn ($f): bool => (int) $f === 1, $run->one(BloomScripts::jshashExists($this->key, $offsets)));
    }

    public function add(Runner $run, string $item): bool
    {
        return $this->multiAdd($run, [$item])[0];
    }

    public function exists(Runner $run, string $item): bool
    {
        return $this->multiExists($run, [$item])[0];
    }

    /** @param list<?string> $items */
    public function load(Runner $run, array $items, int $batch, int $start): LoadProgress
    {
        return Bloom::loadWith(fn (array $b): array => $this->multiAdd($run, $b), $items, $batch, $start);
    }
}
