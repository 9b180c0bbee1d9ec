<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\UnexpectedReply;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\Added;
use RedisPatterns\Scripts\RollingScripts;

/** The rolling store (src/rolling, lua/rolling): the add's retry when another writer moved the head (the rolling retry). */
final class RollingStore
{
    private const MAX_SHARDS = 65_536;
    private const JSON = JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION | JSON_THROW_ON_ERROR;

    public readonly int $shards;
    public readonly int $capacity;
    /** @var array<string, int> the head slot last seen per logical key */
    private array $heads = [];

    public function __construct(
        private readonly int $limit,
        private readonly int $shardSize,
        private readonly int $ttlMs,
        private readonly string $prefix,
        private readonly int $marginMs,
    ) {
        if ($shardSize < 1) {
            throw Checks::bad('shard_size', 'must be at least 1');
        }
        if ($limit < $shardSize) {
            throw Checks::bad('limit', "must be at least shard_size ($shardSize), got $limit");
        }
        $this->shards = intdiv($limit + $shardSize - 1, $shardSize) + 1;
        if ($this->shards > self::MAX_SHARDS) {
            throw Checks::bad('limit', "limit / shard_size gives {$this->shards} shards, at most " . self::MAX_SHARDS . ' are allowed');
        }
        $maxTtlMs = Contract::CONSTANTS['rolling']['max_ttl_ms'];
        if ($ttlMs + $marginMs > $maxTtlMs) {
            throw Checks::bad('ttl', "ttl plus the index margin must be at most $maxTtlMs ms");
        }
        $this->capacity = $this->shards * $shardSize;
    }

    public function metaKey(string $key): string
    {
        return Contract::key('rolling', 'meta', ['prefix' => $this->prefix, 'key' => Checks::name('key', $key)]);
    }

    /** @return list<string> */
    private function window(string $key, int $first, int $count): array
    {
        $out = [];
        for ($i = 0; $i < $count; $i++) {
            $slot = ($first + $i) % $this->shards;
            $vars = ['prefix' => $this->prefix, 'key' => $key, 'slot' => $slot];
            $out[] = Contract::key('rolling', 'slot_hash', $vars);
            $out[] = Contract::key('rolling', 'slot_order', $vars);
        }
        return $out;
    }

    /** @return list<string> */
    private function hashes(string $key): array
    {
        $out = [];
        for ($s = 0; $s < $this->shards; $s++) {
            $out[] = Contract::key('rolling', 'slot_hash', ['prefix' => $this->prefix, 'key' => $key, 'slot' => $s]);
        }
        return $out;
    }

    public function add(Runner $run, string $key, string $field, mixed $value): Added
    {
        $meta = $this->metaKey($key);
        $encoded = json_encode($value, self::JSON);
        $guess = $this->heads[$key] ?? 0;
        $windows = Contract::CONSTANTS['rolling']['windows'];
        for ($attempt = 0; $attempt <= count($windows); $attempt++) {
            [$first, $count] = ($attempt < count($windows) && $windows[$attempt] < $this->shards) ? [$guess, $windows[$attempt]] : [0, $this->shards];
            [$status, $head, $gen, $evicted] = array_map('intval', $run->one(RollingScripts::add(
                $meta, $this->window($key, $first, $count), $first, $this->shards, $this->shardSize, $field, $encoded,
                $this->ttlMs, $this->ttlMs + $this->marginMs)));
            $this->heads[$key] = $head;
            if ($status !== 0) {
                return new Added($head, $gen, $status === 2, $evicted, $attempt);
            }
            $guess = $head;
            if ($count === $this->shards) {
                break;
            }
        }
        throw new UnexpectedReply('rolling.add found no head even with the whole ring passed');
    }

    public function get(Runner $run, string $key, string $field): mixed
    {
        $v = $run->one(RollingScripts::get($this->metaKey($key), $this->hashes($key), $field));
        return $v === null ? null : json_decode((string) $v, true, 512, JSON_THROW_ON_ERROR);
    }

    /** @return list<array{string, mixed}> */
    public function recent(Runner $run, string $key, int $n): array
    {
        $flat = $run->one(RollingScripts::recent($this->metaKey($key), $this->window($key, 0, $this->shards), min($n, $this->capacity)));
        $out = [];
        for ($i = 0; $i + 1 < count($flat); $i += 2) {
            $out[] = [(string) $flat[$i], json_decode((string) $flat[$i + 1], true, 512, JSON_THROW_ON_ERROR)];
        }
        return $out;
    }

    public function len(Runner $run, string $key): int
    {
        return (int) $run->one(RollingScripts::len($this->metaKey($key), $this->hashes($key)));
    }

    public function clear(Runner $run, string $key): int
    {
        return (int) $run->one(RollingScripts::clear($this->metaKey($key), $this->window($key, 0, $this->shards)));
    }
}
