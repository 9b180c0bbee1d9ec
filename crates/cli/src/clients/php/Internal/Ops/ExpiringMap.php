<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\LayoutMissing;
use RedisPatterns\Errors\ListpackValueTooLong;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Records\EntriesPage;
use RedisPatterns\Records\Health;
use RedisPatterns\Records\MapEntry;
use RedisPatterns\Records\PutReport;
use RedisPatterns\Records\SweepReport;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Scripts\ExpiringMapScripts;

/**
 * The expiring map's operations on the portable path (src/expiring_map, lua/expiring_map): each value
 * carries its expiry in its first 6 bytes; the scripts read the server's clock and never return an
 * expired entry.
 */
final class ExpiringMap
{
    /** The bytes the portable path adds before each value: its expiry. */
    public const EXPIRY_BYTES = 6;
    /** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
    public const MAX_TTL_MS = 999999999999999;
    /** The version of the layout fields written in the meta key. */
    public const LAYOUT_VERSION = 1;
    /** What a client of the portable path can open (a native layout is the Rust crate's). */
    private const PORTABLE_LAYOUT = 'an expiring_map layout of version 1 on the portable path (this client has no native path)';

    private readonly int $idle;
    public readonly string $metaKey;
    private bool $claimed = false;

    public function __construct(
        public readonly string $base,
        public readonly int $shards,
        public readonly int $cap,
        ?int $maxIdleMs,
        private readonly int $entriesLimit,
        private readonly int $valueLimit,
        private readonly bool $recordLayout,
    ) {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        if ($shards === 0) {
            throw Checks::bad('shard count', 'must be at least 1');
        }
        if ($shards > 4294967295) {
            throw Checks::bad('shard count', 'must be at most 4294967295');
        }
        if ($valueLimit <= self::EXPIRY_BYTES) {
            throw Checks::bad('limits', "a value limit of $valueLimit leaves no room for the expiry");
        }
        $this->idle = self::millis('max_idle', $maxIdleMs);
        $this->metaKey = Contract::key('expiring_map', 'meta', ['base' => $base]);
    }

    /** @return array<string, string> */
    private function layoutFields(): array
    {
        return [
            'pattern' => 'expiring_map', 'version' => (string) self::LAYOUT_VERSION, 'scheme' => 'crc32',
            'separator' => ':', 'shards' => (string) $this->shards, 'path' => 'portable',
        ];
    }

    public function claimLayout(Runner $run): void
    {
        Layouts::claim($run, $this->metaKey, $this->layoutFields());
        $this->claimed = true;
    }

    public static function open(Runner $run, string $base): self
    {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        $meta = Contract::key('expiring_map', 'meta', ['base' => $base]);
        $stored = Layouts::read($run, $meta);
        if ($stored === null) {
            throw new LayoutMissing($meta);
        }
        $want = ['pattern' => 'expiring_map', 'version' => '1', 'scheme' => 'crc32', 'separator' => ':', 'path' => 'portable'];
        $shards = $stored['shards'] ?? '';
        foreach ($want as $k => $v) {
            if (($stored[$k] ?? null) !== $v || !ctype_digit($shards) || (int) $shards === 0) {
                throw new LayoutMismatch($meta, Layouts::describe($stored), self::PORTABLE_LAYOUT);
            }
        }
        return new self($base, (int) $shards, 0, null, 512, 64, true);
    }

    /** A duration as the scripts take it (0 for none), refused outside 1 ..= MAX_TTL_MS. */
    private static function millis(string $name, ?int $ms): int
    {
        if ($ms === null) {
            return 0;
        }
        if ($ms < 1 || $ms > self::MAX_TTL_MS) {
            throw Checks::bad($name, 'must be from 1 ms to ' . self::MAX_TTL_MS . ' ms');
        }
        return $ms;
    }

    private function keyOfShard(int $shard): string
    {
        return Contract::key('expiring_map', 'shard', ['base' => $this->base, 'shard' => $shard]);
    }

    public function shardKey(string $field): string
    {
        return $this->keyOfShard(crc32($field) % $this->shards);
    }

    private function checkPair(string $field, string $value): void
    {
        if (strlen($field) > $this->valueLimit) {
            throw new ListpackValueTooLong('field', strlen($field), $this->valueLimit);
        }
        if (strlen($value) + self::EXPIRY_BYTES > $this->valueLimit) {
            throw new ListpackValueTooLong('value with its expiry', strlen($value) + self::EXPIRY_BYTES, $this->valueLimit);
        }
    }

    /**
     * Positions by shard key, shards in order.
     *
     * @param list<string> $fields
     * @return array<string, list<int>>
     */
    private function byShard(array $fields): array
    {
        $by = [];
        foreach ($fields as $i => $f) {
            $by[crc32($f) % $this->shards][] = $i;
        }
        ksort($by);
        $out = [];
        foreach ($by as $s => $idx) {
            $out[$this->keyOfShard($s)] = $idx;
        }
        return $out;
    }

    /** @param list<array{string, string}> $pairs */
    private function write(Runner $run, array $pairs, ?int $ttlMs, bool $onlyAbsent): PutReport
    {
        $ttl = self::millis('ttl', $ttlMs);
        foreach ($pairs as [$f, $v]) {
            $this->checkPair($f, $v);
        }
        if ($pairs === []) {
            throw Checks::bad('pairs', 'must not be empty');
        }
        if ($this->recordLayout && !$this->claimed) {
            $this->claimLayout($run);
        }
        $batch = [];
        $limit = min($this->entriesLimit, self::MAX_TTL_MS);
        $cap = min($this->cap, self::MAX_TTL_MS);
        foreach ($this->byShard(array_map(fn (array $p): string => $p[0], $pairs)) as $k => $idx) {
            $items = [];
            foreach ($idx as $i) {
                array_push($items, $pairs[$i][0], $pairs[$i][1]);
            }
            $batch[] = ExpiringMapScripts::put((string) $k, $onlyAbsent, $ttl, $limit, $cap, $items);
        }
        $new = $evicted = 0;
        foreach ($run->batch($batch) as $reply) {
            $new += max((int) $reply[0], 0);
            $evicted += max((int) $reply[1], 0);
        }
        return new PutReport($new, $evicted);
    }

    public function put(Runner $run, string $field, string $value, ?int $ttlMs): bool
    {
        return $this->write($run, [[$field, $value]], $ttlMs, false)->new === 1;
    }

    public function putIfAbsent(Runner $run, string $field, string $value, ?int $ttlMs): bool
    {
        return $this->write($run, [[$field, $value]], $ttlMs, true)->new === 1;
    }

    /** @param list<array{string, string}> $pairs */
    public function putMany(Runner $run, array $pairs, ?int $ttlMs): PutReport
    {
        return $this->write($run, $pairs, $ttlMs, false);
    }

    /** @param list<array{string, string}> $pairs */
    public function putIfAbsentMany(Runner $run, array $pairs, ?int $ttlMs): PutReport
    {
        return $this->write($run, $pairs, $ttlMs, true);
    }

    public function get(Runner $run, string $field): ?string
    {
        return $this->getMany($run, [$field])[0];
    }

    /**
     * @param list<string> $fields
     * @return list<?string>
     */
    public function getMany(Runner $run, array $fields): array
    {
        $out = array_fill(0, count($fields), null);
        $by = $this->byShard($fields);
        if ($by === []) {
            return $out;
        }
        $batch = [];
        foreach ($by as $k => $idx) {
            $batch[] = ExpiringMapScripts::get((string) $k, $this->idle, array_map(fn (int $i): string => $fields[$i], $idx));
        }
        foreach (array_values(array_map(null, array_values($by), $run->batch($batch))) as [$idx, $values]) {
            foreach ($idx as $n => $i) {
                $v = $values[$n] ?? null;
                $out[$i] = ($v === null || $v === false) ? null : (string) $v;
            }
        }
        return $out;
    }

    public function remove(Runner $run, string $field): bool
    {
        return (int) $run->one(ExpiringMapScripts::remove($this->shardKey($field), [$field])) === 1;
    }

    public function ttlOf(Runner $run, string $field): int
    {
        return (int) $run->one(ExpiringMapScripts::ttl($this->shardKey($field), $field));
    }

    public function persist(Runner $run, string $field): ?bool
    {
        $got = (int) $run->one(ExpiringMapScripts::expire($this->shardKey($field), $field, 0));
        return $got === 1 ? true : ($got === -1 ? false : null);
    }

    public function expire(Runner $run, string $field, int $ttlMs): bool
    {
        $ttl = self::millis('ttl', $ttlMs);
        return (int) $run->one(ExpiringMapScripts::expire($this->shardKey($field), $field, $ttl)) === 1;
    }

    private function asHash(): ShardedHash
    {
        return new ShardedHash($this->base, $this->shards, 0, 0, ':', false, $this->entriesLimit, $this->valueLimit, false);
    }

    public function len(Runner $run): int
    {
        return $this->asHash()->len($run);
    }

    public function inspect(Runner $run, int $sample): Health
    {
        return $this->asHash()->inspect($run, $sample);
    }

    /** @return array{list<string>, ?int} the keys of the shards from `$from`, and the next start */
    private function range(int $from, int $count): array
    {
        if ($count === 0) {
            throw Checks::bad('count', 'must be at least 1');
        }
        if ($from >= $this->shards) {
            throw Checks::bad('from', "must be a shard below {$this->shards}");
        }
        $end = min($from + $count, $this->shards);
        $keys = [];
        for ($s = $from; $s < $end; $s++) {
            $keys[] = $this->keyOfShard($s);
        }
        return [$keys, $end < $this->shards ? $end : null];
    }

    public function sweep(Runner $run, int $fromShard, int $count): SweepReport
    {
        [$keys, $next] = $this->range($fromShard, $count);
        $removed = $live = 0;
        foreach ($run->batch(array_map(fn (string $k) => ExpiringMapScripts::sweep($k), $keys)) as $reply) {
            $removed += (int) $reply[0];
            $live += (int) $reply[1];
        }
        return new SweepReport(count($keys), $removed, $live, $next);
    }

    public function entries(Runner $run, int $fromShard, int $count): EntriesPage
    {
        [$keys, $next] = $this->range($fromShard, $count);
        $out = [];
        foreach ($run->batch(array_map(fn (string $k) => ExpiringMapScripts::entries($k), $keys)) as $flat) {
            for ($i = 0; $i + 2 < count($flat); $i += 3) {
                $at = (int) $flat[$i + 2];
                $out[] = new MapEntry((string) $flat[$i], (string) $flat[$i + 1], $at > 0 ? $at : null);
            }
        }
        return new EntriesPage($out, $next);
    }
}
