<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\ListpackValueTooLong;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Records\EntriesPage;
use RedisPatterns\Records\Health;
use RedisPatterns\Records\MapEntry;
use RedisPatterns\Records\PutReport;
use RedisPatterns\Records\SweepReport;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Scripts\ExpiringMapScripts;

/**
 * The expiring map's operations (src/expiring_map, lua/expiring_map) on its two paths: portable (each
 * value carries its expiry in its first 6 bytes; the scripts read the server's clock and never return
 * an expired entry) and native (the server's per-field TTL: HPEXPIRE, HPTTL, HPERSIST, and HSETEX in
 * the write's script).
 */
final class ExpiringMap
{
    /** The bytes the portable path adds before each value: its expiry. */
    public const EXPIRY_BYTES = 6;
    /** The longest time to live or max-idle time, in milliseconds (the scripts' bound). */
    public const MAX_TTL_MS = 999999999999999;
    /** The version of the layout fields written in the meta key. */
    public const LAYOUT_VERSION = 1;
    /** What this client can open. */
    private const READABLE_LAYOUT = 'an expiring_map layout of version 1 on the portable or the native path';
    public const PATHS = ['portable', 'native'];

    private readonly int $idle;
    public readonly string $metaKey;
    private readonly LayoutClaim $layout;
    private readonly bool $native;
    /** Whether the server was found to have the native path's commands (asked once). */
    private bool $probed = false;

    public function __construct(
        public readonly string $base,
        public readonly int $shards,
        public readonly int $cap,
        ?int $maxIdleMs,
        private readonly int $entriesLimit,
        private readonly int $valueLimit,
        bool $recordLayout,
        public readonly string $path = 'portable',
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
        if (!in_array($path, self::PATHS, true)) {
            throw Checks::bad('path', 'must be portable or native');
        }
        $this->native = $path === 'native';
        if ($valueLimit <= self::EXPIRY_BYTES && !$this->native) {
            throw Checks::bad('limits', "a value limit of $valueLimit leaves no room for the expiry");
        }
        $this->idle = self::millis('max_idle', $maxIdleMs);
        $this->metaKey = Contract::key('expiring_map', 'meta', ['base' => $base]);
        $this->layout = new LayoutClaim($this->metaKey, fn (): array => $this->layoutFields(), $recordLayout);
    }

    /** @return array<string, string> */
    private function layoutFields(): array
    {
        return [
            'pattern' => 'expiring_map', 'version' => (string) self::LAYOUT_VERSION, 'scheme' => 'crc32',
            'separator' => ':', 'shards' => (string) $this->shards, 'path' => $this->path,
        ];
    }

    public function claimLayout(Runner $run): void
    {
        $this->layout->claim($run);
    }

    public static function open(Runner $run, string $base): self
    {
        [$meta, $stored] = Layouts::existing($run, 'expiring_map', $base);
        $want = ['pattern' => 'expiring_map', 'version' => '1', 'scheme' => 'crc32', 'separator' => ':'];
        $shards = $stored['shards'] ?? '';
        $path = $stored['path'] ?? '';
        foreach ($want as $k => $v) {
            if (($stored[$k] ?? null) !== $v || !ctype_digit($shards) || (int) $shards === 0
                || !in_array($path, self::PATHS, true)) {
                throw new LayoutMismatch($meta, Layouts::describe($stored), self::READABLE_LAYOUT);
            }
        }
        return new self($base, (int) $shards, 0, null, 512, 64, true, $path);
    }

    /**
     * On the native path, the first call asks whether the server has per-field TTLs (native_probe:
     * read-only commands, one batch); without them InvalidArgument (path), nothing else sent.
     */
    private function onPath(Runner $run): void
    {
        if (!$this->native || $this->probed) {
            return;
        }
        $c = Contract::CONSTANTS['expiring_map'];
        $shard = $this->keyOfShard(0);
        try {
            $run->batch(array_map(fn (string $cmd): Cmd => Cmd::key($cmd, $shard, 'FIELDS', 1, 'probe'), $c['native_probe']));
        } catch (RedisPatternsError $e) {
            if (stripos($e->getMessage(), 'unknown command') !== false) {
                throw Checks::bad('path', $c['native_refusal']);
            }
        }
        $this->probed = true;
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
        [$extra, $what] = $this->native ? [0, 'value'] : [self::EXPIRY_BYTES, 'value with its expiry'];
        if (strlen($value) + $extra > $this->valueLimit) {
            throw new ListpackValueTooLong($what, strlen($value) + $extra, $this->valueLimit);
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
        $this->onPath($run);
        $this->layout->beforeWrite($run);
        $batch = [];
        $limit = min($this->entriesLimit, self::MAX_TTL_MS);
        $cap = min($this->cap, self::MAX_TTL_MS);
        foreach ($this->byShard(array_map(fn (array $p): string => $p[0], $pairs)) as $k => $idx) {
            $items = [];
            foreach ($idx as $i) {
                array_push($items, $pairs[$i][0], $pairs[$i][1]);
            }
            // Both scripts take the same arguments and answer new + evicted * 2^32.
            $batch[] = $this->native
                ? ExpiringMapScripts::putNative((string) $k, $onlyAbsent, $ttl, $limit, $cap, $items)
                : ExpiringMapScripts::put((string) $k, $onlyAbsent, $ttl, $limit, $cap, $items);
        }
        $new = $evicted = 0;
        foreach ($run->batch($batch) as $reply) {
            $r = max((int) $reply, 0);
            $new += $r & 0xFFFFFFFF;
            $evicted += $r >> 32;
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
        $this->onPath($run);
        $batch = [];
        foreach ($by as $k => $idx) {
            $part = array_map(fn (int $i): string => $fields[$i], $idx);
            if (!$this->native) {
                $batch[] = ExpiringMapScripts::get((string) $k, $this->idle, $part);
                continue;
            }
            // HMGET never returns an expired field; max-idle: HPEXPIRE ... GT keeps a later expiry or none.
            $batch[] = Cmd::key('HMGET', (string) $k, ...$part);
            if ($this->idle > 0) {
                $batch[] = Cmd::key('HPEXPIRE', (string) $k, $this->idle, 'GT', 'FIELDS', count($part), ...$part);
            }
        }
        $replies = $run->batch($batch);
        if ($this->native && $this->idle > 0) {
            $replies = array_values(array_filter($replies, fn (int $i): bool => $i % 2 === 0, ARRAY_FILTER_USE_KEY));
        }
        foreach (array_values(array_map(null, array_values($by), $replies)) as [$idx, $values]) {
            foreach ($idx as $n => $i) {
                $v = $values[$n] ?? null;
                $out[$i] = ($v === null || $v === false) ? null : (string) $v;
            }
        }
        return $out;
    }

    public function remove(Runner $run, string $field): bool
    {
        $this->onPath($run);
        $k = $this->shardKey($field);
        return (int) $run->one($this->native ? Cmd::key('HDEL', $k, $field) : ExpiringMapScripts::remove($k, [$field])) === 1;
    }

    public function ttlOf(Runner $run, string $field): int
    {
        $this->onPath($run);
        $k = $this->shardKey($field);
        if ($this->native) {
            return (int) $run->one(Cmd::key('HPTTL', $k, 'FIELDS', 1, $field))[0];
        }
        return (int) $run->one(ExpiringMapScripts::ttl($k, $field));
    }

    /** expire.lua, or HPEXPIRE / HPERSIST (ttl 0): 1 set, -1 none to remove, -2 no live entry. */
    private function expiryCall(Runner $run, string $field, int $ttl): int
    {
        $this->onPath($run);
        $k = $this->shardKey($field);
        if (!$this->native) {
            return (int) $run->one(ExpiringMapScripts::expire($k, $field, $ttl));
        }
        $cmd = $ttl > 0 ? Cmd::key('HPEXPIRE', $k, $ttl, 'FIELDS', 1, $field) : Cmd::key('HPERSIST', $k, 'FIELDS', 1, $field);
        return (int) $run->one($cmd)[0];
    }

    public function persist(Runner $run, string $field): ?bool
    {
        $got = $this->expiryCall($run, $field, 0);
        return $got === 1 ? true : ($got === -1 ? false : null);
    }

    public function expire(Runner $run, string $field, int $ttlMs): bool
    {
        return $this->expiryCall($run, $field, self::millis('ttl', $ttlMs)) === 1;
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
        $this->onPath($run);
        $removed = $live = 0;
        if ($this->native) {
            // The server removes expired fields itself: count the live ones.
            foreach ($run->batch(array_map(fn (string $k): Cmd => Cmd::key('HKEYS', $k), $keys)) as $fields) {
                $live += count($fields);
            }
            return new SweepReport(count($keys), 0, $live, $next);
        }
        foreach ($run->batch(array_map(fn (string $k) => ExpiringMapScripts::sweep($k), $keys)) as $reply) {
            $removed += (int) $reply[0];
            $live += (int) $reply[1];
        }
        return new SweepReport(count($keys), $removed, $live, $next);
    }

    public function entries(Runner $run, int $fromShard, int $count): EntriesPage
    {
        [$keys, $next] = $this->range($fromShard, $count);
        $this->onPath($run);
        if ($this->native) {
            return $this->nativeEntries($run, $keys, $next);
        }
        $out = [];
        foreach ($run->batch(array_map(fn (string $k) => ExpiringMapScripts::entries($k), $keys)) as $flat) {
            for ($i = 0; $i + 2 < count($flat); $i += 3) {
                $at = (int) $flat[$i + 2];
                $out[] = new MapEntry((string) $flat[$i], (string) $flat[$i + 1], $at > 0 ? $at : null);
            }
        }
        return new EntriesPage($out, $next);
    }

    /**
     * HGETALL of each shard, then HPEXPIRETIME of the fields read (one gone since, -2, is left out).
     *
     * @param list<string> $keys
     */
    private function nativeEntries(Runner $run, array $keys, ?int $next): EntriesPage
    {
        $asked = [];
        foreach (array_map(null, $keys, $run->batch(array_map(fn (string $k): Cmd => Cmd::key('HGETALL', $k), $keys))) as [$k, $flat]) {
            $pairs = [];
            for ($i = 0; $i + 1 < count($flat); $i += 2) {
                $pairs[] = [(string) $flat[$i], (string) $flat[$i + 1]];
            }
            if ($pairs !== []) {
                $asked[] = [$k, $pairs];
            }
        }
        $out = [];
        if ($asked === []) {
            return new EntriesPage($out, $next);
        }
        $batch = array_map(fn (array $a): Cmd => Cmd::key('HPEXPIRETIME', $a[0], 'FIELDS', count($a[1]), ...array_column($a[1], 0)), $asked);
        foreach (array_map(null, $asked, $run->batch($batch)) as [[, $pairs], $ats]) {
            foreach ($pairs as $n => [$f, $v]) {
                $at = (int) $ats[$n];
                if ($at !== -2) {
                    $out[] = new MapEntry($f, $v, $at > 0 ? $at : null);
                }
            }
        }
        return new EntriesPage($out, $next);
    }
}
