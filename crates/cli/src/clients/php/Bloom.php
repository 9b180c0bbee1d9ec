<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\BloomConfigMismatch;
use RedisPatterns\Errors\BloomMissing;
use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\BloomScripts;

/**
 * A sized Bloom filter: config <prefix>{<name>}, blocks <prefix>{<name>}:<j> (or
 * <prefix>{<name>:<j>} with spread), the same layout and bits as the Rust crate.
 * Made by Bloom::create or Bloom::open.
 */
final class Bloom
{
    public readonly string $configKey;
    public readonly array $blockKeys;

    private function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $name,
        public readonly int $n,
        public readonly string $p,
        public readonly int $m,
        public readonly int $k,
        public readonly array $blockBits,
        public readonly bool $spread,
        public readonly string $prefix,
    ) {
        $this->configKey = Contract::key('bloom', 'config', ['prefix' => $prefix, 'name' => $name]);
        $role = $spread ? 'block_spread' : 'block';
        $keys = [];
        foreach ($blockBits as $j => $_) {
            $keys[] = Contract::key('bloom', $role, ['prefix' => $prefix, 'name' => $name, 'j' => $j]);
        }
        $this->blockKeys = $keys;
    }

    private static function checkName(string $name): void
    {
        if ($name === '' || strpbrk($name, '{}') !== false) {
            throw new InvalidArgument('filter name', "must not be empty and must not contain '{' or '}'");
        }
    }

    /** Creates the filter, or opens it when it exists with exactly these parameters (BloomConfigMismatch otherwise). */
    public static function create(\Redis|\RedisCluster $redis, string $name, int $expected, float $fpRate,
        bool $spread = Contract::DEFAULTS['bloom']['spread'], string $prefix = Contract::DEFAULTS['bloom']['prefix'],
        ?int $maxBits = null, ?int $maxBlockBytes = null): self
    {
        self::checkName($name);
        [$m, $k, $blocks] = Hashing::bloomParams($expected, $fpRate, $maxBits, $maxBlockBytes);
        $bf = new self($redis, $name, $expected, Hashing::formatP($fpRate), $m, $k, $blocks, $spread, $prefix);
        if (!$spread) {
            Runtime::run($redis, $bf->createCall());
            return $bf;
        }
        $exists = Runtime::run($redis, ['EXISTS', $bf->configKey]) === 1;
        if (!$exists) {
            try {
                $bf->initBlocks(true);
            } catch (BloomConfigMismatch $e) {
                // Another creator finished first: open its filter.
                if (Runtime::run($redis, ['EXISTS', $bf->configKey]) !== 1) {
                    throw $e;
                }
                $exists = true;
            }
        }
        Runtime::run($redis, $bf->createCall());
        if ($exists) {
            $bf->initBlocks(false);
        }
        return $bf;
    }

    private function createCall(): Call
    {
        $c = Contract::CONSTANTS['bloom'];
        return BloomScripts::create($this->configKey, $this->spread ? [] : $this->blockKeys, $this->m, $this->k, $this->n,
            $this->p, implode(',', $this->blockBits), $c['scheme'], $c['scheme_version'], $this->spread);
    }

    private function initBlocks(bool $create): void
    {
        $calls = [];
        foreach ($this->blockKeys as $j => $key) {
            $calls[] = BloomScripts::init_block($key, $this->blockBits[$j], $create);
        }
        Runtime::all($this->redis, $calls);
    }

    /** Opens an existing filter from its config (BloomMissing when there is none). */
    public static function open(\Redis|\RedisCluster $redis, string $name, string $prefix = Contract::DEFAULTS['bloom']['prefix']): self
    {
        self::checkName($name);
        $config = Contract::key('bloom', 'config', ['prefix' => $prefix, 'name' => $name]);
        $raw = Runtime::run($redis, ['HGETALL', $config]);
        $cfg = [];
        for ($i = 0; $i + 1 < count($raw); $i += 2) {
            $cfg[$raw[$i]] = $raw[$i + 1];
        }
        if ($cfg === []) {
            throw new BloomMissing(null, "no config hash $config");
        }
        $c = Contract::CONSTANTS['bloom'];
        if (($cfg['scheme'] ?? null) !== $c['scheme'] || ($cfg['version'] ?? null) !== (string) $c['scheme_version']) {
            throw new BloomConfigMismatch(null, 'scheme stored ' . ($cfg['scheme'] ?? '') . ' v' . ($cfg['version'] ?? ''));
        }
        $blocks = array_map('intval', explode(',', $cfg['block_bits']));
        $bf = new self($redis, $name, (int) $cfg['n'], $cfg['p'], (int) $cfg['m'], (int) $cfg['k'], $blocks, $cfg['spread'] === '1', $prefix);
        foreach ($bf->blockKeys as $j => $key) {
            if (Runtime::run($redis, ['GETBIT', $key, (string) $blocks[$j]]) !== 1) {
                throw new BloomMissing(null, "block $key is missing or lost its sentinel bit");
            }
        }
        return $bf;
    }

    /** [block, offsets] of an item. */
    public function locate(string $item): array
    {
        return Hashing::sizedOffsets($item, $this->blockBits, $this->k);
    }

    private function items(array $items, bool $add): array
    {
        $perCall = max(1, intdiv(Contract::CONSTANTS['bloom']['chunk_offsets'], $this->k));
        $groups = [];
        foreach (array_values($items) as $i => $item) {
            [$block, $offsets] = $this->locate((string) $item);
            $groups[$block][] = [$i, $offsets];
        }
        ksort($groups);
        $out = array_fill(0, count($items), false);
        foreach ($groups as $block => $g) {
            foreach (array_chunk($g, $perCall) as $part) {
                $offsets = array_merge(...array_map(fn($x) => $x[1], $part));
                $call = $add
                    ? BloomScripts::add($this->blockKeys[$block], $this->blockBits[$block], $this->k, $offsets)
                    : BloomScripts::exists($this->blockKeys[$block], $this->blockBits[$block], $this->k, $offsets);
                foreach (Runtime::run($this->redis, $call) as $at => $flag) {
                    $out[$part[$at][0]] = $flag === 1;
                }
            }
        }
        return $out;
    }

    /** Per item true when newly added. */
    public function multiAdd(array $items): array
    {
        return $this->items($items, true);
    }

    /** Per item true when it may be present. */
    public function multiExists(array $items): array
    {
        return $this->items($items, false);
    }

    public function add(string $item): bool
    {
        return $this->items([$item], true)[0];
    }

    public function exists(string $item): bool
    {
        return $this->items([$item], false)[0];
    }
}
