<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\IdOutOfRange;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\LayoutMissing;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\PackedLayout;
use RedisPatterns\Scripts\PackedScripts;

/** Packed records (src/packed.rs, lua/packed). */
final class PackedRecords
{
    private const MAX_SHARD_BYTES = 512 * 1024 * 1024;
    private const DEFAULT_SHARD_BYTES = 65_530;
    private const SCAN_BATCH_BYTES = 16 << 20;

    public readonly int $idsPerShard;
    public readonly int $shards;
    public readonly string $metaKey;
    private readonly bool $dense;
    private readonly LayoutClaim $layout;

    public function __construct(
        public readonly string $base,
        public readonly int $width,
        private readonly int $maxId,
        int $idsPerShard,
        string $layout,
        bool $recordLayout,
    ) {
        if ($base === '') {
            throw Checks::bad('base', 'must not be empty');
        }
        if ($width === 0) {
            throw Checks::bad('width', 'must be at least 1 byte');
        }
        if ($width > self::MAX_SHARD_BYTES) {
            throw Checks::bad('width', 'must be at most ' . self::MAX_SHARD_BYTES . ' bytes');
        }
        $ids = $idsPerShard ?: max(intdiv(self::DEFAULT_SHARD_BYTES, $width), 1);
        if ($ids * $width > self::MAX_SHARD_BYTES) {
            throw Checks::bad('ids per shard', "$ids records of $width bytes exceed the " . self::MAX_SHARD_BYTES . '-byte string limit');
        }
        $this->idsPerShard = $ids;
        $this->dense = $layout === 'dense';
        $this->shards = intdiv($maxId, $ids) + 1;
        $this->metaKey = Contract::key('packed', 'meta', ['base' => $base]);
        $this->layout = new LayoutClaim($this->metaKey, fn (): array => $this->fields(), $recordLayout);
    }

    /** @return array<string, string> */
    private function fields(): array
    {
        return ['pattern' => 'packed', 'version' => '1', 'width' => (string) $this->width, 'ids_per_shard' => (string) $this->idsPerShard];
    }

    private function keyOfShard(int $shard): string
    {
        return Contract::key('packed', 'shard', ['base' => $this->base, 'shard' => $shard]);
    }

    /** @return array{string, int} */
    public function locate(int $id): array
    {
        if ($id > $this->maxId) {
            throw new IdOutOfRange($id, $this->maxId);
        }
        return [$this->keyOfShard(intdiv($id, $this->idsPerShard)), ($id % $this->idsPerShard) * $this->width];
    }

    private function reserve(): int
    {
        return $this->dense ? $this->idsPerShard * $this->width : 0;
    }

    private function padded(?string $b): string
    {
        return substr(str_pad((string) $b, $this->width, "\0"), 0, $this->width);
    }

    private function record(string $v): string
    {
        if (strlen($v) !== $this->width) {
            throw Checks::bad('record', 'is ' . strlen($v) . " bytes, the width is {$this->width}");
        }
        return $v;
    }

    public function claimLayout(Runner $run): void
    {
        $this->layout->claim($run);
    }

    public function get(Runner $run, int $id): string
    {
        [$k, $off] = $this->locate($id);
        return $this->padded($run->one(Cmd::key('GETRANGE', $k, $off, $off + $this->width - 1)));
    }

    /** @param list<int> $ids */
    public function getMany(Runner $run, array $ids): array
    {
        $batch = [];
        foreach ($ids as $id) {
            [$k, $off] = $this->locate($id);
            $batch[] = Cmd::key('GETRANGE', $k, $off, $off + $this->width - 1);
        }
        return array_map(fn (?string $b): string => $this->padded($b), $run->batch($batch));
    }

    public function set(Runner $run, int $id, string $value): void
    {
        $this->setMany($run, [[$id, $value]]);
    }

    /** @param list<array{int, string}> $items */
    public function setMany(Runner $run, array $items): void
    {
        $byShard = [];
        foreach ($items as [$id, $value]) {
            [, $off] = $this->locate($id);
            $s = intdiv($id, $this->idsPerShard);
            $byShard[$s] ??= [];
            array_push($byShard[$s], (string) $off, $this->record($value));
        }
        $this->layout->beforeWrite($run);
        ksort($byShard);
        $batch = [];
        foreach ($byShard as $s => $args) {
            $batch[] = PackedScripts::put($this->keyOfShard($s), $this->reserve(), $args);
        }
        $run->batch($batch);
    }

    private function addTo(Runner $run, int $id, int $offset, int $size, bool $signed, int $delta, ?string $requestId, int $ttlMs): int
    {
        if ($offset + $size > $this->width) {
            throw Checks::bad('field', "bytes $offset.." . ($offset + $size) . " lie outside the {$this->width}-byte record");
        }
        if (abs($delta) > 1 << 53) {
            throw Checks::bad('delta', 'must be within +-2^53');
        }
        [$k, $off] = $this->locate($id);
        $rk = $requestId === null ? ShardedHash::noRequestKey($k) : ShardedHash::requestKey($k, $requestId);
        $this->layout->beforeWrite($run);
        return (int) $run->one(PackedScripts::add($k, $rk, $this->reserve(), $off + $offset, $size, $signed, $delta, $requestId === null ? 0 : $ttlMs));
    }

    public function add(Runner $run, int $id, int $offset, int $size, bool $signed, int $delta): int
    {
        return $this->addTo($run, $id, $offset, $size, $signed, $delta, null, 0);
    }

    public function addOnce(Runner $run, int $id, int $offset, int $size, bool $signed, int $delta, string $requestId, int $requestTtlMs): int
    {
        return $this->addTo($run, $id, $offset, $size, $signed, $delta, $requestId, $requestTtlMs);
    }

    public function compareAndSet(Runner $run, int $id, string $expected, string $new): ?string
    {
        [$k, $off] = $this->locate($id);
        $exp = $this->record($expected);
        $nw = $this->record($new);
        $this->layout->beforeWrite($run);
        [$done, $current] = $run->one(PackedScripts::swap($k, $this->reserve(), $off, $exp, $nw));
        return (int) $done === 1 ? null : $this->padded($current);
    }

    /** @return list<array{int, int}> (value, records), ascending by value */
    public function countBy(Runner $run, int $offset, int $size, bool $signed): array
    {
        if ($offset + $size > $this->width) {
            throw Checks::bad('field', "bytes $offset.." . ($offset + $size) . " lie outside the {$this->width}-byte record");
        }
        $counts = [];
        foreach ($this->scan($run) as [, $rec]) {
            if (trim($rec, "\0") === '') {
                continue;
            }
            $v = 0;
            for ($i = $size - 1; $i >= 0; $i--) {
                $v = ($v << 8) | ord($rec[$offset + $i]);
            }
            if ($signed && $v >= 1 << (8 * $size - 1)) {
                $v -= 1 << (8 * $size);
            }
            $counts[$v] = ($counts[$v] ?? 0) + 1;
        }
        ksort($counts);
        $out = [];
        foreach ($counts as $v => $n) {
            $out[] = [$v, $n];
        }
        return $out;
    }

    /** @return list<array{int, string}> */
    public function scan(Runner $run): array
    {
        $per = max(intdiv(self::SCAN_BATCH_BYTES, $this->idsPerShard * $this->width), 1);
        $out = [];
        for ($first = 0; $first < $this->shards; $first += $per) {
            $shards = range($first, min($first + $per, $this->shards) - 1);
            $got = $run->batch(array_map(fn (int $s): Cmd => Cmd::key('GET', $this->keyOfShard($s)), $shards));
            foreach ($shards as $j => $s) {
                $b = $got[$j];
                if ($b === null) {
                    continue;
                }
                for ($i = 0, $n = intdiv(strlen($b), $this->width); $i < $n; $i++) {
                    $id = $s * $this->idsPerShard + $i;
                    if ($id > $this->maxId) {
                        break;
                    }
                    $out[] = [$id, substr($b, $i * $this->width, $this->width)];
                }
            }
        }
        return $out;
    }

    public static function storedLayout(Runner $run, string $base): ?PackedLayout
    {
        [$meta, $stored] = Layouts::stored($run, 'packed', $base);
        if ($stored === null) {
            return null;
        }
        if (!isset($stored['width'], $stored['ids_per_shard']) || !ctype_digit($stored['width']) || !ctype_digit($stored['ids_per_shard'])) {
            throw new LayoutMismatch($meta, Layouts::describe($stored), 'a packed layout of version 1');
        }
        return new PackedLayout((int) $stored['width'], (int) $stored['ids_per_shard']);
    }

    public static function open(Runner $run, string $base, int $width, int $maxId): self
    {
        $meta = $base === '' ? '' : Contract::key('packed', 'meta', ['base' => $base]);
        $stored = self::storedLayout($run, $base);
        if ($stored === null) {
            throw new LayoutMissing($meta);
        }
        if ($stored->width !== $width) {
            throw new LayoutMismatch($meta, "ids_per_shard={$stored->idsPerShard}, width={$stored->width}, version=1",
                "ids_per_shard={$stored->idsPerShard}, width=$width, version=1");
        }
        return new self($base, $width, $maxId, $stored->idsPerShard, 'dense', true);
    }
}
