<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\IdOutOfRange;
use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\PackedScripts;

/** Records of $width bytes for ids 0..max_id at (id % ids_per_shard) * width of <base>:<id / ids_per_shard>. */
final class Packed
{
    public readonly int $idsPerShard;

    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $base,
        public readonly int $width,
        public readonly int $maxId,
        ?int $idsPerShard = null,
        public readonly bool $dense = Contract::DEFAULTS['packed']['dense'],
    ) {
        $c = Contract::CONSTANTS['packed'];
        if ($base === '' || $width < 1 || $width > $c['max_shard_bytes']) {
            throw new InvalidArgument('width', 'a non-empty base and a width of at least 1 byte');
        }
        $this->idsPerShard = $idsPerShard ?? max(1, intdiv($c['default_shard_bytes'], $width));
        if ($this->idsPerShard < 1 || $this->idsPerShard * $width > $c['max_shard_bytes']) {
            throw new InvalidArgument('ids per shard', "{$this->idsPerShard} records of $width bytes exceed the string limit");
        }
    }

    /** [shard key, byte offset] of an id. */
    public function locate(int $id): array
    {
        if ($id < 0 || $id > $this->maxId) {
            throw new IdOutOfRange("id $id is above the configured maximum {$this->maxId}");
        }
        return [Contract::key('packed', 'shard', ['base' => $this->base, 'shard' => intdiv($id, $this->idsPerShard)]),
            ($id % $this->idsPerShard) * $this->width];
    }

    private function reserve(): int
    {
        return $this->dense ? $this->idsPerShard * $this->width : 0;
    }

    public function get(int $id): string
    {
        [$key, $off] = $this->locate($id);
        $raw = (string) Runtime::run($this->redis, ['GETRANGE', $key, (string) $off, (string) ($off + $this->width - 1)]);
        return str_pad($raw, $this->width, "\0");
    }

    /** Writes [id => record bytes]: one packed.put per shard. */
    public function setMany(array $records): void
    {
        $byShard = [];
        foreach ($records as $id => $rec) {
            if (strlen($rec) !== $this->width) {
                throw new InvalidArgument('record', 'is ' . strlen($rec) . " bytes, the width is {$this->width}");
            }
            [$key, $off] = $this->locate($id);
            $byShard[$key] ??= [];
            array_push($byShard[$key], (string) $off, $rec);
        }
        ksort($byShard);
        $calls = [];
        foreach ($byShard as $key => $items) {
            $calls[] = PackedScripts::put($key, $this->reserve(), $items);
        }
        Runtime::all($this->redis, $calls);
    }

    public function set(int $id, string $record): void
    {
        $this->setMany([$id => $record]);
    }

    /** Adds $delta to the little-endian integer field ($offset, $size, $signed) of a record; the new value. */
    public function add(int $id, int $offset, int $size, bool $signed, int $delta): int
    {
        if ($size < 1 || $size > 6 || $offset + $size > $this->width) {
            throw new InvalidArgument('field', "bytes $offset.." . ($offset + $size) . " lie outside the {$this->width}-byte record");
        }
        [$key, $off] = $this->locate($id);
        return Runtime::run($this->redis, PackedScripts::add(
            $key, Runtime::requestKey($key), $this->reserve(), $off + $offset, $size, $signed, $delta, 0));
    }

    /** add at most once per request id: a call with the same id returns the first result. */
    public function addOnce(int $id, int $offset, int $size, bool $signed, int $delta, string $requestId, int $ttlMs = 3600000): int
    {
        if ($size < 1 || $size > 6 || $offset + $size > $this->width) {
            throw new InvalidArgument('field', "bytes $offset.." . ($offset + $size) . " lie outside the {$this->width}-byte record");
        }
        [$key, $off] = $this->locate($id);
        return Runtime::run($this->redis, PackedScripts::add(
            $key, Runtime::requestKey($key, $requestId), $this->reserve(), $off + $offset, $size, $signed, $delta, $ttlMs));
    }

    /** [true, previous] when written, [false, current] when it held something else. */
    public function compareAndSet(int $id, string $expected, string $new): array
    {
        [$key, $off] = $this->locate($id);
        [$done, $current] = Runtime::run($this->redis, PackedScripts::swap($key, $this->reserve(), $off, $expected, $new));
        return [$done === 1, (string) $current];
    }
}
