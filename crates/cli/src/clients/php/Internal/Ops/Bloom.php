<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Call;
use RedisPatterns\Contract;
use RedisPatterns\Errors\BloomConfigMismatch;
use RedisPatterns\Errors\BloomMissing;
use RedisPatterns\Errors\NotEnoughMemory;
use RedisPatterns\Errors\Server;
use RedisPatterns\Hashing;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\BloomInfo;
use RedisPatterns\Records\BloomParams;
use RedisPatterns\Records\LoadProgress;
use RedisPatterns\Scripts\BloomScripts;

/** Sized Bloom filters on plain bitmaps (src/bloom, lua/bloom). */
final class Bloom
{
    private const KEY_OVERHEAD = 256;

    public readonly string $configKey;
    /** @var list<string> */
    public readonly array $blockKeys;

    public function __construct(
        public readonly string $name,
        private readonly string $prefix,
        public readonly BloomParams $params,
        private readonly bool $spread,
        private readonly string $pText,
    ) {
        $this->configKey = Contract::key('bloom', 'config', ['prefix' => $prefix, 'name' => $name]);
        $role = $spread ? 'block_spread' : 'block';
        $keys = [];
        foreach (array_keys($params->blockBits) as $j) {
            $keys[] = Contract::key('bloom', $role, ['prefix' => $prefix, 'name' => $name, 'j' => $j]);
        }
        $this->blockKeys = $keys;
    }

    private static function c(string $name): mixed
    {
        return Contract::CONSTANTS['bloom'][$name];
    }

    private function createCall(): Call
    {
        $p = $this->params;
        return BloomScripts::create($this->configKey, $this->spread ? [] : $this->blockKeys, $p->m, $p->k, $p->n, $this->pText,
            implode(',', $p->blockBits), self::c('scheme'), self::c('scheme_version'), $this->spread);
    }

    public static function create(Runner $run, string $name, int $expected, float $fpRate, string $prefix, bool $spreadBlocks, int $maxMemory): self
    {
        [$m, $k, $blocks] = Hashing::bloomParams($expected, $fpRate);
        $bf = new self($name, $prefix, new BloomParams($expected, $fpRate, $m, $k, $blocks), $spreadBlocks, Hashing::formatP($fpRate));
        $needed = self::KEY_OVERHEAD;
        foreach ($blocks as $b) {
            $needed += intdiv($b + 1 + 7, 8) + self::KEY_OVERHEAD;
        }
        $cfg = self::readConfig($run, $name, $bf->configKey);
        if ($cfg !== []) {
            $stored = self::fromConfig($name, $prefix, $cfg);
            $checks = [
                ['n', $stored->params->n, $expected],
                ['p', $stored->pText, $bf->pText],
                ['m/k', "{$stored->params->m},{$stored->params->k}", "$m,$k"],
                ['spread', (int) $stored->spread, (int) $spreadBlocks],
            ];
            foreach ($checks as [$field, $a, $b]) {
                if ($a !== $b) {
                    throw new BloomConfigMismatch("$field stored $a requested $b");
                }
            }
            $run->one($stored->createCall());
            if ($stored->spread) {
                $stored->initBlocks($run, false);
            }
            return $stored;
        }
        if ($needed > $maxMemory) {
            throw new NotEnoughMemory("bloom filter $name", $needed, $maxMemory, 'ceiling', null);
        }
        if (!$spreadBlocks) {
            $run->one($bf->createCall());
            return $bf;
        }
        $bf->initBlocks($run, true);
        $run->one($bf->createCall());
        return $bf;
    }

    /**
     * The blocks of a spread filter (each in its own slot): one call each, in
     * order; when one fails, the blocks this call created are deleted again.
     */
    private function initBlocks(Runner $run, bool $create): void
    {
        $created = [];
        try {
            foreach ($this->blockKeys as $j => $key) {
                if ((int) $run->one(BloomScripts::initBlock($key, $this->params->blockBits[$j], $create)) === 1) {
                    $created[] = $key;
                }
            }
        } catch (\Throwable $e) {
            if ($created !== []) {
                $run->batch(array_map(fn (string $k): Cmd => Cmd::key('DEL', $k), $created));
            }
            throw $this->blockTaken($j, $e);
        }
    }

    /**
     * Block $j of a spread filter holding another type (WRONGTYPE) is the
     * config of the filter `<name>:<j>`: refused naming both.
     */
    private function blockTaken(int $j, \Throwable $e): \Throwable
    {
        if (!$this->spread || !($e instanceof Server) || $e->errorCode !== 'WRONGTYPE') {
            return $e;
        }
        return new BloomConfigMismatch(Contract::render(self::c('block_is_config'), ['key' => $this->blockKeys[$j], 'j' => $j, 'name' => $this->name]));
    }

    /**
     * The config hash of the filter $name; when $configKey holds another
     * type (WRONGTYPE) and $name ends in `:<j>`, it is block j of the spread
     * filter before it: refused naming both.
     *
     * @return array<string, string>
     */
    private static function readConfig(Runner $run, string $name, string $configKey): array
    {
        try {
            return Layouts::pairs($run->one(Cmd::key('HGETALL', $configKey)));
        } catch (Server $e) {
            $at = strrpos($name, ':');
            $base = $at === false ? '' : substr($name, 0, $at);
            $j = $at === false ? '' : substr($name, $at + 1);
            if ($e->errorCode !== 'WRONGTYPE' || $base === '' || !ctype_digit($j)) {
                throw $e;
            }
            throw new BloomConfigMismatch(Contract::render(self::c('config_holds_block'), ['key' => $configKey, 'name' => $name, 'j' => $j, 'base' => $base]));
        }
    }

    /** @param array<string, string> $cfg */
    private static function fromConfig(string $name, string $prefix, array $cfg): self
    {
        $config = Contract::key('bloom', 'config', ['prefix' => $prefix, 'name' => $name]);
        if (($cfg['scheme'] ?? null) !== self::c('scheme') || ($cfg['version'] ?? null) !== (string) self::c('scheme_version')) {
            throw new BloomConfigMismatch('scheme stored ' . ($cfg['scheme'] ?? '') . ' v' . ($cfg['version'] ?? '') . ' requested ' . self::c('scheme') . ' v' . self::c('scheme_version'));
        }
        foreach (['n', 'p', 'm', 'k', 'block_bits', 'spread'] as $f) {
            if (!isset($cfg[$f])) {
                throw new BloomConfigMismatch("$config is not understood");
            }
        }
        $blocks = array_map('intval', explode(',', $cfg['block_bits']));
        $params = new BloomParams((int) $cfg['n'], (float) $cfg['p'], (int) $cfg['m'], (int) $cfg['k'], $blocks);
        return new self($name, $prefix, $params, $cfg['spread'] === '1', $cfg['p']);
    }

    public static function open(Runner $run, string $name, string $prefix): self
    {
        $config = Contract::key('bloom', 'config', ['prefix' => $prefix, 'name' => $name]);
        $cfg = self::readConfig($run, $name, $config);
        if ($cfg === []) {
            throw new BloomMissing("no config hash $config");
        }
        $bf = self::fromConfig($name, $prefix, $cfg);
        $sentinels = $run->batch(array_map(fn (string $k, int $b): Cmd => Cmd::key('GETBIT', $k, $b), $bf->blockKeys, $bf->params->blockBits));
        foreach ($bf->blockKeys as $j => $k) {
            if ((int) $sentinels[$j] !== 1) {
                throw new BloomMissing("block $k is missing or lost its sentinel bit");
            }
        }
        return $bf;
    }

    /** @return array{int, list<int>} */
    public function locate(string $item): array
    {
        return Hashing::sizedOffsets($item, $this->params->blockBits, $this->params->k);
    }

    /**
     * @param list<string> $items
     * @return list<bool>
     */
    private function items(Runner $run, array $items, bool $add): array
    {
        $perCall = max(1, intdiv(self::c('chunk_offsets'), $this->params->k));
        $groups = [];
        foreach ($items as $i => $item) {
            if (strlen($item) > 512 * 1024 * 1024) {
                throw Checks::bad('item', 'must be at most 512 MiB');
            }
            [$block, $offsets] = $this->locate($item);
            $groups[$block][] = [$i, $offsets];
        }
        ksort($groups);
        $calls = [];
        $owners = [];
        foreach ($groups as $block => $g) {
            foreach (array_chunk($g, $perCall) as $part) {
                $offsets = array_merge(...array_map(fn (array $p): array => $p[1], $part));
                $calls[] = $add
                    ? BloomScripts::add($this->blockKeys[$block], $this->params->blockBits[$block], $this->params->k, $offsets)
                    : BloomScripts::exists($this->blockKeys[$block], $this->params->blockBits[$block], $this->params->k, $offsets);
                $owners[] = array_map(fn (array $p): int => $p[0], $part);
            }
        }
        $out = array_fill(0, count($items), false);
        foreach ($run->batch($calls) as $c => $reply) {
            foreach ($owners[$c] as $n => $i) {
                $out[$i] = (int) $reply[$n] === 1;
            }
        }
        return $out;
    }

    public function add(Runner $run, string $item): bool
    {
        return $this->items($run, [$item], true)[0];
    }

    public function exists(Runner $run, string $item): bool
    {
        return $this->items($run, [$item], false)[0];
    }

    public function multiAdd(Runner $run, array $items): array
    {
        return $this->items($run, $items, true);
    }

    public function multiExists(Runner $run, array $items): array
    {
        return $this->items($run, $items, false);
    }

    /** @return list<int> */
    public function bitsSet(Runner $run): array
    {
        $batch = [];
        foreach ($this->blockKeys as $j => $k) {
            $batch[] = Cmd::key('BITCOUNT', $k);
            $batch[] = Cmd::key('GETBIT', $k, $this->params->blockBits[$j]);
        }
        $got = array_map('intval', $run->batch($batch));
        $out = [];
        foreach ($this->blockKeys as $j => $k) {
            if ($got[2 * $j + 1] !== 1) {
                throw new BloomMissing("block $k is missing or lost its sentinel bit");
            }
            $out[] = $got[2 * $j] - 1;
        }
        return $out;
    }

    private function estimate(array $bitsSet): int
    {
        $k = (float) $this->params->k;
        $total = 0.0;
        foreach ($bitsSet as $j => $x) {
            $bits = $this->params->blockBits[$j];
            $total += -($bits / $k) * log(1.0 - min($x, $bits - 1) / $bits);
        }
        return (int) floor($total + 0.5);
    }

    public function approxCount(Runner $run): int
    {
        return $this->estimate($this->bitsSet($run));
    }

    public function info(Runner $run): BloomInfo
    {
        $bitsSet = $this->bitsSet($run);
        $total = array_sum($this->params->blockBits);
        $fp = 0.0;
        foreach ($bitsSet as $j => $x) {
            $b = $this->params->blockBits[$j];
            $fp += ($b / $total) * (($x / $b) ** $this->params->k);
        }
        return new BloomInfo($this->name, $this->configKey, $this->blockKeys, $this->params, $bitsSet, $this->estimate($bitsSet), $fp);
    }

    public function clear(Runner $run): void
    {
        $bits = $this->params->blockBits;
        if ($this->spread) {
            $run->batch(array_map(fn (string $k, int $b): Call => BloomScripts::clear([$k], [$b]), $this->blockKeys, $bits));
        } else {
            $run->one(BloomScripts::clear($this->blockKeys, $bits));
        }
    }

    /** @param list<?string> $items */
    public function load(Runner $run, array $items, int $batch, int $start): LoadProgress
    {
        return self::loadWith(fn (array $b): array => $this->multiAdd($run, $b), $items, $batch, $start);
    }

    /**
     * A bulk load (Rust: Load::into_op): batches of `$batch` items, one
     * multi-add each, after `$start` skipped positions.
     *
     * @param callable(list<string>): list<?bool> $multiAdd
     * @param list<?string> $items
     */
    public static function loadWith(callable $multiAdd, array $items, int $batch, int $start): LoadProgress
    {
        if ($batch === 0) {
            throw Checks::bad('batch size', 'must be at least 1');
        }
        $n = count($items);
        $done = min($start, $n);
        $added = $unknown = 0;
        while ($done < $n) {
            $buf = [];
            for ($at = $done; $at < $n && count($buf) < $batch; $at++) {
                if ($items[$at] !== null) {
                    $buf[] = $items[$at];
                }
            }
            $flags = $buf === [] ? [] : $multiAdd($buf);
            $done = $at;
            $added += count(array_filter($flags, fn (?bool $f): bool => $f === true));
            $unknown += count(array_filter($flags, fn (?bool $f): bool => $f === null));
        }
        return new LoadProgress($done, $added, $unknown);
    }

    public function destroy(Runner $run): void
    {
        $keys = [$this->configKey, ...$this->blockKeys];
        if ($this->spread) {
            $run->batch(array_map(fn (string $k): Cmd => Cmd::key('DEL', $k), $keys));
        } else {
            $run->one(new Cmd(['DEL'], $keys));
        }
    }
}
