<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\IdOutOfRange;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\ListpackValueTooLong;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Errors\ShardFull;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\Health;
use RedisPatterns\Records\HashPlan;
use RedisPatterns\Records\ImportReport;
use RedisPatterns\Records\ListpackLimits;
use RedisPatterns\Records\Rejection;
use RedisPatterns\Scripts\ShardedHashScripts;

/** The sharded hash's operations (src/sharded_hash, lua/sharded_hash). */
final class ShardedHash
{
    private const LAYOUT_VERSION = 1;
    /** The most rejections an import report lists (the others are counted). */
    private const MAX_REJECTIONS = 100;

    public readonly int $shards;
    public readonly string $metaKey;
    private readonly bool $byId;
    private readonly LayoutClaim $layout;

    public function __construct(
        public readonly string $base,
        int $shards,
        private readonly int $fieldsPerShard,
        private readonly int $maxId,
        private readonly string $separator,
        private readonly bool $strict,
        private readonly int $entriesLimit,
        private readonly int $valueLimit,
        bool $recordLayout,
    ) {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        if ($separator === '') {
            throw Checks::bad('separator', 'must not be empty');
        }
        if (strpbrk($separator, '{}') !== false) {
            throw Checks::bad('separator', "must not contain '{' or '}' (shard keys carry no hash tag)");
        }
        if ($fieldsPerShard === 0 && $shards === 0) {
            throw Checks::bad('shard count', 'must be at least 1');
        }
        if ($fieldsPerShard === 0 && $shards > 4294967295) {
            throw Checks::bad('shard count', 'must be at most 4294967295');
        }
        $this->byId = $fieldsPerShard > 0;
        $this->shards = $this->byId ? intdiv($maxId, $fieldsPerShard) + 1 : $shards;
        $this->metaKey = Contract::key('sharded_hash', 'meta', ['base' => $base]);
        $this->layout = new LayoutClaim($this->metaKey, fn (): array => $this->layoutFields(), $recordLayout);
    }

    /** @return array<string, string> */
    private function layoutFields(): array
    {
        $out = ['pattern' => 'sharded_hash', 'version' => (string) self::LAYOUT_VERSION, 'separator' => ':'];
        if ($this->byId) {
            return $out + ['scheme' => 'by_id', 'fields_per_shard' => (string) $this->fieldsPerShard, 'max_id' => (string) $this->maxId];
        }
        return $out + ['scheme' => 'crc32', 'shards' => (string) $this->shards];
    }

    private function keyOfShard(int $shard): string
    {
        return Contract::key('sharded_hash', 'shard', ['base' => $this->base, 'separator' => $this->separator, 'shard' => $shard]);
    }

    private function shardOf(string $field): int
    {
        if (!$this->byId) {
            return crc32($field) % $this->shards;
        }
        if (preg_match('/^(0|[1-9][0-9]*)$/', $field) !== 1 || strlen($field) > 18) {
            throw Checks::bad('field', "`$field` is not a decimal integer id");
        }
        $n = (int) $field;
        if ($n > $this->maxId) {
            throw new IdOutOfRange($n, $this->maxId);
        }
        return intdiv($n, $this->fieldsPerShard);
    }

    public function shardKey(string $field): string
    {
        return $this->keyOfShard($this->shardOf($field));
    }

    private function checkPair(string $field, string $value): void
    {
        if ($this->strict) {
            foreach (['field' => $field, 'value' => $value] as $what => $b) {
                if (strlen($b) > $this->valueLimit) {
                    throw new ListpackValueTooLong($what, strlen($b), $this->valueLimit);
                }
            }
        }
    }

    public function claimLayout(Runner $run): void
    {
        $this->layout->claim($run);
    }

    /** @param list<array{string, string}> $pairs */
    private function write(Runner $run, array $pairs, bool $onlyAbsent): int
    {
        $byShard = [];
        foreach ($pairs as $i => [$f, $v]) {
            $shard = $this->shardOf($f);
            $this->checkPair($f, $v);
            $byShard[$shard][] = $i;
        }
        $this->layout->beforeWrite($run);
        ksort($byShard);
        $batch = [];
        foreach ($byShard as $shard => $idx) {
            $k = $this->keyOfShard($shard);
            $items = [];
            foreach ($idx as $i) {
                array_push($items, $pairs[$i][0], $pairs[$i][1]);
            }
            if ($this->strict) {
                $batch[] = ShardedHashScripts::put($k, $onlyAbsent, $this->entriesLimit, $items);
            } elseif ($onlyAbsent) {
                foreach ($idx as $i) {
                    $batch[] = Cmd::key('HSETNX', $k, $pairs[$i][0], $pairs[$i][1]);
                }
            } else {
                $batch[] = Cmd::key('HSET', $k, ...$items);
            }
        }
        return array_sum(array_map('intval', $run->batch($batch)));
    }

    public function set(Runner $run, string $field, string $value): bool
    {
        return $this->write($run, [[$field, $value]], false) === 1;
    }

    public function setIfAbsent(Runner $run, string $field, string $value): bool
    {
        return $this->write($run, [[$field, $value]], true) === 1;
    }

    public function setMany(Runner $run, array $pairs): int
    {
        return $this->write($run, $pairs, false);
    }

    public function setIfAbsentMany(Runner $run, array $pairs): int
    {
        return $this->write($run, $pairs, true);
    }

    public function get(Runner $run, string $field): ?string
    {
        $got = $run->one(Cmd::key('HGET', $this->shardKey($field), $field));
        return $got === null ? null : (string) $got;
    }

    /** @param list<string> $fields */
    public function getMany(Runner $run, array $fields): array
    {
        $byShard = [];
        foreach ($fields as $i => $f) {
            $byShard[$this->shardOf($f)][] = $i;
        }
        ksort($byShard);
        $out = array_fill(0, count($fields), null);
        if ($byShard === []) {
            return $out;
        }
        $batch = [];
        foreach ($byShard as $s => $idx) {
            $batch[] = Cmd::key('HMGET', $this->keyOfShard($s), ...array_map(fn (int $i): string => $fields[$i], $idx));
        }
        $replies = $run->batch($batch);
        foreach (array_values($byShard) as $j => $idx) {
            foreach ($idx as $n => $i) {
                $v = $replies[$j][$n] ?? null;
                $out[$i] = $v === null ? null : (string) $v;
            }
        }
        return $out;
    }

    public function delete(Runner $run, string $field): bool
    {
        return (int) $run->one(Cmd::key('HDEL', $this->shardKey($field), $field)) === 1;
    }

    public function exists(Runner $run, string $field): bool
    {
        return (int) $run->one(Cmd::key('HEXISTS', $this->shardKey($field), $field)) === 1;
    }

    private function incrBy(Runner $run, string $field, int $delta, ?string $requestId, int $ttlMs): int
    {
        $k = $this->shardKey($field);
        $this->checkPair($field, '');
        $this->layout->beforeWrite($run);
        if (!$this->strict && $requestId === null) {
            return (int) $run->one(Cmd::key('HINCRBY', $k, $field, $delta));
        }
        $rk = $requestId === null ? self::noRequestKey($k) : self::requestKey($k, $requestId);
        $entries = $this->strict ? $this->entriesLimit : 0;
        return (int) $run->one(ShardedHashScripts::incr($k, $rk, $field, $delta, $entries, $requestId === null ? 0 : $ttlMs));
    }

    public function incr(Runner $run, string $field, int $delta): int
    {
        return $this->incrBy($run, $field, $delta, null, 0);
    }

    public function incrOnce(Runner $run, string $field, int $delta, string $requestId, int $requestTtlMs): int
    {
        return $this->incrBy($run, $field, $delta, $requestId, $requestTtlMs);
    }

    /** The key remembering one call with a request id, in `$k`'s slot (manifest: request_key). */
    public static function requestKey(string $k, string $requestId): string
    {
        if (strlen($requestId) < 1 || strlen($requestId) > 200) {
            throw Checks::bad('request id', 'must be 1 to 200 bytes');
        }
        $open = strpos($k, '{');
        $close = $open === false ? false : strpos($k, '}', $open + 1);
        if ($close !== false && $close > $open + 1) {
            return "$k:req:$requestId";
        }
        if (str_contains($k, '}')) {
            throw Checks::bad('key', "'$k' has no hash tag but contains '}'");
        }
        return '{' . $k . '}:req:' . $requestId;
    }

    public static function noRequestKey(string $k): string
    {
        $open = strpos($k, '{');
        $close = $open === false ? false : strpos($k, '}', $open + 1);
        return ($close !== false && $close > $open + 1) ? "$k:req" : '{' . $k . '}:req';
    }

    public function len(Runner $run): int
    {
        $batch = [];
        for ($s = 0; $s < $this->shards; $s++) {
            $batch[] = Cmd::key('HLEN', $this->keyOfShard($s));
        }
        return array_sum(array_map('intval', $run->batch($batch)));
    }

    public function isEmpty(Runner $run): bool
    {
        return $this->len($run) === 0;
    }

    public function inspect(Runner $run, int $sample): Health
    {
        if ($sample === 0) {
            throw Checks::bad('sample', 'must be at least 1');
        }
        $picks = [];
        for ($i = 0, $n = min($sample, $this->shards); $i < $n; $i++) {
            $picks[] = $sample >= $this->shards ? $i : intdiv($i * $this->shards, $sample);
        }
        $batch = [];
        foreach ($picks as $s) {
            $batch[] = new Cmd(['OBJECT', 'ENCODING'], [$this->keyOfShard($s)]);
            $batch[] = Cmd::key('HLEN', $this->keyOfShard($s));
        }
        $replies = $run->batch($batch);
        $missing = $listpack = $converted = $maxLen = $total = 0;
        $convertedKeys = [];
        foreach ($picks as $i => $s) {
            [$enc, $n] = [$replies[2 * $i], (int) $replies[2 * $i + 1]];
            $maxLen = max($maxLen, $n);
            $total += $n;
            if ($enc === null) {
                $missing++;
            } elseif (in_array($enc, ['listpack', 'ziplist'], true)) {
                $listpack++;
            } else {
                $converted++;
                if (count($convertedKeys) < 100) {
                    $convertedKeys[] = $this->keyOfShard($s);
                }
            }
        }
        return new Health(count($picks), $missing, $listpack, $converted, $convertedKeys, $maxLen, $total);
    }

    /** Why an import rejects an item (null: it goes into the batch). */
    private function stage(string $field, string $value): ?string
    {
        try {
            $this->shardOf($field);
        } catch (RedisPatternsError) {
            return 'bad_field';
        }
        try {
            $this->checkPair($field, $value);
        } catch (ListpackValueTooLong) {
            return 'value_too_long';
        }
        return null;
    }

    /**
     * An import's rejection at `$position`: counted, and listed among the first 100.
     *
     * @param array{items: int, inserted: int, present: int, rejected: int, rejections: list<Rejection>} $t
     */
    private static function reject(array &$t, int $position, string $reason): void
    {
        $t['rejected']++;
        if (count($t['rejections']) < self::MAX_REJECTIONS) {
            $t['rejections'][] = new Rejection($position, $reason);
        }
    }

    /**
     * One batch of an import: one write per shard (strict) or HSETNX per
     * item; a full shard rejects its items. phpredis throws a pipeline's
     * script error without saying which call it answered, so a strict batch
     * first reads its shards' lengths (HLEN, one round trip): a shard the
     * batch could fill is written with a call of its own.
     *
     * @param list<array{int, string, string}> $part (position, field, value)
     * @param array{items: int, inserted: int, present: int, rejected: int, rejections: list<Rejection>} $t
     */
    private function importBatch(Runner $run, array $part, array &$t): void
    {
        $byShard = [];
        foreach ($part as $item) {
            $byShard[$this->shardOf($item[1])][] = $item;
        }
        ksort($byShard);
        $alone = [];
        if ($this->strict) {
            $shards = array_keys($byShard);
            $lens = $run->batch(array_map(fn (int $s) => Cmd::key('HLEN', $this->keyOfShard($s)), $shards));
            foreach ($shards as $i => $s) {
                if ((int) $lens[$i] + count($byShard[$s]) > $this->entriesLimit) {
                    $alone[$s] = true;
                }
            }
        }
        $calls = [];
        $covers = [];
        foreach ($byShard as $shard => $group) {
            $k = $this->keyOfShard($shard);
            if ($this->strict && !isset($alone[$shard])) {
                $calls[] = $this->importPut($k, $group);
                $covers[] = count($group);
            } elseif (!$this->strict) {
                foreach ($group as [, $f, $v]) {
                    $calls[] = Cmd::key('HSETNX', $k, $f, $v);
                    $covers[] = 1;
                }
            }
        }
        foreach ($run->batch($calls) as $i => $reply) {
            $n = max((int) $reply, 0);
            $t['inserted'] += $n;
            $t['present'] += $covers[$i] - $n;
        }
        foreach (array_keys($alone) as $shard) {
            $group = $byShard[$shard];
            try {
                $n = max((int) $run->one($this->importPut($this->keyOfShard($shard), $group)), 0);
                $t['inserted'] += $n;
                $t['present'] += count($group) - $n;
            } catch (ShardFull) {
                foreach ($group as [$position]) {
                    self::reject($t, $position, 'shard_full');
                }
            }
        }
    }

    /** @param list<array{int, string, string}> $group */
    private function importPut(string $key, array $group): \RedisPatterns\Call
    {
        $items = [];
        foreach ($group as [, $f, $v]) {
            array_push($items, $f, $v);
        }
        return ShardedHashScripts::put($key, true, $this->entriesLimit, $items);
    }

    /** @param list<array{string, string}> $items */
    public function importItems(Runner $run, array $items, int $batch): ImportReport
    {
        if ($batch === 0) {
            throw Checks::bad('batch', 'must be at least 1');
        }
        $t = ['items' => 0, 'inserted' => 0, 'present' => 0, 'rejected' => 0, 'rejections' => []];
        $this->layout->beforeWrite($run);
        foreach (array_chunk($items, $batch) as $c => $chunk) {
            $good = [];
            foreach ($chunk as $i => [$f, $v]) {
                $position = $c * $batch + $i + 1;
                $t['items']++;
                $why = $this->stage($f, $v);
                if ($why === null) {
                    $good[] = [$position, $f, $v];
                } else {
                    self::reject($t, $position, $why);
                }
            }
            if ($good !== []) {
                $this->importBatch($run, $good, $t);
            }
        }
        return new ImportReport($t['items'], $t['inserted'], $t['present'], 0, $t['rejected'], $t['rejections']);
    }

    /** @return array{self, HashPlan} */
    public static function planned(Runner $run, string $base, int $expected): array
    {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        [[$entries, $value], $source] = self::limits($run);
        $shards = Plan::hashShards($expected, $entries);
        $h = new self($base, $shards, 0, 0, ':', true, $entries, $value, false);
        $bound = $shards * Plan::binomialTail(max($expected, 1), 1.0 / $shards, $entries);
        return [$h, new HashPlan($shards, $expected, $entries, $value, $source, $expected / $shards, $bound)];
    }

    public static function listpackLimits(Runner $run): ?ListpackLimits
    {
        [[$entries, $value], $source] = self::limits($run);
        return $source === 'server' ? new ListpackLimits($entries, $value) : null;
    }

    public static function open(Runner $run, string $base): self
    {
        [$meta, $stored] = Layouts::existing($run, 'sharded_hash', $base);
        $want = 'a sharded_hash layout of version 1';
        if (($stored['pattern'] ?? null) !== 'sharded_hash' || ($stored['version'] ?? null) !== '1' || ($stored['separator'] ?? null) !== ':') {
            throw new LayoutMismatch($meta, Layouts::describe($stored), $want);
        }
        return match ($stored['scheme'] ?? null) {
            'crc32' => new self($base, (int) $stored['shards'], 0, 0, ':', true, 512, 64, true),
            'by_id' => new self($base, 0, (int) $stored['fields_per_shard'], (int) $stored['max_id'], ':', true, 512, 64, true),
            default => throw new LayoutMismatch($meta, Layouts::describe($stored), $want),
        };
    }

    /** @return array{array{int, int}, string} the server's hash-max-listpack-entries/-value (CONFIG GET), or the defaults, and where they came from */
    private static function limits(Runner $run): array
    {
        try {
            $got = $run->batch([
                new Cmd(['CONFIG', 'GET', 'hash-max-listpack-entries'], node: Cmd::ANY),
                new Cmd(['CONFIG', 'GET', 'hash-max-listpack-value'], node: Cmd::ANY),
            ]);
        } catch (RedisPatternsError) {
            return [[512, 64], 'default_because_denied'];
        }
        $vals = [];
        foreach ($got as $reply) {
            foreach (Layouts::pairs($reply) as $v) {
                $vals[] = (int) $v;
            }
        }
        return count($vals) === 2 ? [[$vals[0], $vals[1]], 'server'] : [[512, 64], 'default_because_unreported'];
    }
}
