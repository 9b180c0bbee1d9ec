<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\IdOutOfRange;
use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Errors\ListpackValueTooLong;
use RedisPatterns\Scripts\ShardedHashScripts;

/** A logical hash in shards <base><separator><shard> (<base>:<shard> by default): crc32(field) % shards, or id / fields_per_shard. */
final class ShardedHash
{
    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $base,
        public readonly ?int $shards = null,
        public readonly ?int $fieldsPerShard = null,
        public readonly ?int $maxId = null,
        public readonly bool $strict = Contract::DEFAULTS['sharded_hash']['strict'],
        public readonly int $maxEntries = Contract::DEFAULTS['sharded_hash']['max_entries'],
        public readonly int $maxValue = Contract::DEFAULTS['sharded_hash']['max_value'],
        public readonly string $separator = Contract::DEFAULTS['sharded_hash']['separator'],
    ) {
        if ($base === '') {
            throw new InvalidArgument('base', 'must not be empty');
        }
        if ($separator === '' || strpbrk($separator, '{}') !== false) {
            throw new InvalidArgument('separator', "must not be empty or contain '{' or '}' (shard keys carry no hash tag)");
        }
        if (($shards === null) === ($fieldsPerShard === null) || ($shards !== null && $shards < 1)
            || ($fieldsPerShard !== null && ($fieldsPerShard < 1 || $maxId === null))) {
            throw new InvalidArgument('sharding', 'give shards >= 1, or fields_per_shard >= 1 with max_id');
        }
    }

    public function shardOf(string $field): int
    {
        if ($this->shards !== null) {
            return crc32($field) % $this->shards;
        }
        if (!preg_match('/^(0|[1-9][0-9]*)$/', $field)) {
            throw new InvalidArgument('field', "\"$field\" is not a decimal integer id");
        }
        if (strlen($field) > 19 || (int) $field > $this->maxId) {
            throw new IdOutOfRange("id $field is above the configured maximum {$this->maxId}");
        }
        return intdiv((int) $field, $this->fieldsPerShard);
    }

    private function keyOf(int $shard): string
    {
        return Contract::key('sharded_hash', 'shard', ['base' => $this->base, 'separator' => $this->separator, 'shard' => $shard]);
    }

    public function shardKey(string $field): string
    {
        return $this->keyOf($this->shardOf($field));
    }

    private function check(string $field, string $value): void
    {
        if ($this->strict) {
            foreach (['field' => $field, 'value' => $value] as $what => $v) {
                if (strlen($v) > $this->maxValue) {
                    throw new ListpackValueTooLong("$what of " . strlen($v) . " bytes exceeds hash-max-listpack-value {$this->maxValue}");
                }
            }
        }
    }

    private function write(array $pairs, bool $onlyAbsent): int
    {
        $byShard = [];
        foreach ($pairs as [$f, $v]) {
            $this->check($f, $v);
            $byShard[$this->shardOf($f)][] = [$f, $v];
        }
        ksort($byShard);
        $reqs = [];
        foreach ($byShard as $shard => $ps) {
            $key = $this->keyOf($shard);
            $flat = array_merge(...$ps);
            if ($this->strict) {
                $reqs[] = ShardedHashScripts::put($key, $onlyAbsent, $this->maxEntries, $flat);
            } elseif ($onlyAbsent) {
                foreach ($ps as [$f, $v]) {
                    $reqs[] = ['HSETNX', $key, $f, $v];
                }
            } else {
                $reqs[] = ['HSET', $key, ...$flat];
            }
        }
        return array_sum(Runtime::all($this->redis, $reqs));
    }

    public function set(string $field, string $value): bool
    {
        return $this->write([[$field, $value]], false) === 1;
    }

    public function setIfAbsent(string $field, string $value): bool
    {
        return $this->write([[$field, $value]], true) === 1;
    }

    /** Sets many [field, value] pairs (one write per shard); the number that were new. */
    public function setMany(array $pairs): int
    {
        return $this->write($pairs, false);
    }

    public function get(string $field): ?string
    {
        $v = Runtime::run($this->redis, ['HGET', $this->shardKey($field), $field]);
        return $v === false ? null : $v;
    }

    public function incr(string $field, int $delta): int
    {
        $this->check($field, '');
        $key = $this->shardKey($field);
        return $this->strict
            ? Runtime::run($this->redis, ShardedHashScripts::incr($key, Runtime::requestKey($key), $field, $delta, $this->maxEntries, 0))
            : Runtime::run($this->redis, ['HINCRBY', $key, $field, (string) $delta]);
    }

    /** incr at most once per request id: a call with the same id returns the first result. */
    public function incrOnce(string $field, int $delta, string $requestId, int $ttlMs = 3600000): int
    {
        $this->check($field, '');
        $key = $this->shardKey($field);
        return Runtime::run($this->redis, ShardedHashScripts::incr(
            $key, Runtime::requestKey($key, $requestId), $field, $delta, $this->strict ? $this->maxEntries : 0, $ttlMs));
    }

    public function len(): int
    {
        $n = $this->shards ?? intdiv($this->maxId, $this->fieldsPerShard) + 1;
        $reqs = [];
        for ($s = 0; $s < $n; $s++) {
            $reqs[] = ['HLEN', $this->keyOf($s)];
        }
        return array_sum(Runtime::all($this->redis, $reqs));
    }
}
