<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\ScriptError;
use RedisPatterns\Scripts\RollingScripts;

/** The newest $limit records of each logical key in a ring of ceil(limit / shard_size) + 1 hash shards (JSON values). */
final class Rolling
{
    public readonly int $shards;
    private array $heads = [];

    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly int $limit,
        public readonly int $shardSize,
        public readonly int $ttlMs,
        public readonly string $prefix = Contract::DEFAULTS['rolling']['prefix'],
        public readonly int $indexMarginMs = Contract::DEFAULTS['rolling']['index_margin_ms'],
    ) {
        $c = Contract::CONSTANTS['rolling'];
        if ($shardSize < 1) {
            throw new InvalidArgument('shard_size', 'must be at least 1');
        }
        if ($limit < $shardSize) {
            throw new InvalidArgument('limit', "must be at least shard_size ($shardSize), got $limit");
        }
        $this->shards = intdiv($limit + $shardSize - 1, $shardSize) + 1;
        if ($this->shards > $c['max_shards']) {
            throw new InvalidArgument('limit', "limit / shard_size gives {$this->shards} shards, at most {$c['max_shards']} are allowed");
        }
        if ($ttlMs < 1 || $indexMarginMs < 0 || $ttlMs + $indexMarginMs > $c['max_ttl_ms']) {
            throw new InvalidArgument('ttl', "ttl must be at least 1 ms and ttl plus the index margin at most {$c['max_ttl_ms']} ms");
        }
    }

    public function capacity(): int
    {
        return $this->shards * $this->shardSize;
    }

    public function metaKey(string $key): string
    {
        if ($key === '' || strpbrk($key, '{}') !== false) {
            throw new InvalidArgument('key', "must not be empty and must not contain '{' or '}'");
        }
        return Contract::key('rolling', 'meta', ['prefix' => $this->prefix, 'key' => $key]);
    }

    private function window(string $key, int $first, int $count): array
    {
        $out = [];
        for ($i = 0; $i < $count; $i++) {
            $v = ['prefix' => $this->prefix, 'key' => $key, 'slot' => ($first + $i) % $this->shards];
            $out[] = Contract::key('rolling', 'slot_hash', $v);
            $out[] = Contract::key('rolling', 'slot_order', $v);
        }
        return $out;
    }

    private function hashes(string $key): array
    {
        $out = [];
        for ($s = 0; $s < $this->shards; $s++) {
            $out[] = Contract::key('rolling', 'slot_hash', ['prefix' => $this->prefix, 'key' => $key, 'slot' => $s]);
        }
        return $out;
    }

    /** Adds (or replaces) record $field of $key as json_encode($value): ['slot', 'generation', 'replaced', 'evicted', 'misses']. */
    public function add(string $key, string $field, mixed $value): array
    {
        $meta = $this->metaKey($key);
        $json = json_encode($value, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR);
        $windows = Contract::CONSTANTS['rolling']['windows'];
        $guess = $this->heads[$key] ?? 0;
        for ($attempt = 0; $attempt <= count($windows); $attempt++) {
            [$first, $count] = $attempt < count($windows) && $windows[$attempt] < $this->shards
                ? [$guess, $windows[$attempt]] : [0, $this->shards];
            [$status, $head, $gen, $evicted] = Runtime::run($this->redis, RollingScripts::add(
                $meta, $this->window($key, $first, $count), $first, $this->shards, $this->shardSize,
                $field, $json, $this->ttlMs, $this->ttlMs + $this->indexMarginMs));
            $this->heads[$key] = $head;
            if ($status !== 0) {
                return ['slot' => $head, 'generation' => $gen, 'replaced' => $status === 2, 'evicted' => $evicted, 'misses' => $attempt];
            }
            $guess = $head; // the head moved: retry from where it is now
        }
        throw new ScriptError('rolling.add', 'the head was not found even with the whole ring passed');
    }

    public function get(string $key, string $field): mixed
    {
        $v = Runtime::run($this->redis, RollingScripts::get($this->metaKey($key), $this->hashes($key), $field));
        return $v === false ? null : json_decode($v, true, 512, JSON_THROW_ON_ERROR);
    }

    /** The newest $n records as [field, value], newest first. */
    public function recent(string $key, int $n): array
    {
        $flat = Runtime::run($this->redis, RollingScripts::recent($this->metaKey($key), $this->window($key, 0, $this->shards), min($n, $this->capacity())));
        $out = [];
        for ($i = 0; $i + 1 < count($flat); $i += 2) {
            $out[] = [$flat[$i], json_decode($flat[$i + 1], true, 512, JSON_THROW_ON_ERROR)];
        }
        return $out;
    }

    public function len(string $key): int
    {
        return Runtime::run($this->redis, RollingScripts::len($this->metaKey($key), $this->hashes($key)));
    }

    public function clear(string $key): int
    {
        return Runtime::run($this->redis, RollingScripts::clear($this->metaKey($key), $this->window($key, 0, $this->shards)));
    }
}
