<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\BloomScripts;

/** A bitmap of the PHP BloomFilter::JSHash recipe: one bit per item at JSHash(item). */
final class JsHashBloom
{
    public readonly string $key;

    public function __construct(private \Redis|\RedisCluster $redis, string $bitmapKey,
        public readonly bool $limitMemory = Contract::DEFAULTS['bloom']['limit_memory'])
    {
        if ($bitmapKey === '') {
            throw new InvalidArgument('key', 'must not be empty');
        }
        $this->key = Contract::key('bloom', 'bitmap', ['key' => $bitmapKey]);
    }

    public function offset(string $item): int
    {
        if ($item === '') {
            throw new InvalidArgument('item', 'must not be empty in a JSHash filter');
        }
        return Hashing::jsHash($item, $this->limitMemory);
    }

    private function op(bool $add, array $items): array
    {
        $offsets = array_map(fn($i) => $this->offset((string) $i), array_values($items));
        if ($offsets === []) {
            return [];
        }
        $call = $add ? BloomScripts::jshash_add($this->key, $offsets) : BloomScripts::jshash_exists($this->key, $offsets);
        return array_map(fn($f) => $f === 1, Runtime::run($this->redis, $call));
    }

    public function multiAdd(array $items): array
    {
        return $this->op(true, $items);
    }

    public function multiExists(array $items): array
    {
        return $this->op(false, $items);
    }

    public function add(string $item): bool
    {
        return $this->op(true, [$item])[0];
    }

    public function exists(string $item): bool
    {
        return $this->op(false, [$item])[0];
    }
}
