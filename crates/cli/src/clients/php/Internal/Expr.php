<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Errors\InvalidArgument;

/**
 * Set expressions over event bitmaps (src/analytics/expr.rs, compile.rs, eval.rs): the JSON form (arrays) read
 * and checked, compiled to the BITOP program analytics.query runs (AND, OR, XOR only: the same result on every
 * server), or evaluated client-side over fetched bitmaps (a cluster where they are in several slots).
 *
 * A checked node: ['event', key], [op, list of nodes] for and/or/xor/one/diff, ['not', node],
 * ['at_least', n, list of nodes].
 */
final class Expr
{
    public const MAX_LEAVES = 1000;
    public const MAX_AT_LEAST = 32;
    public const LABEL = '/^(H:\d{4}-\d{2}-\d{2}T\d{2}|D:\d{4}-\d{2}-\d{2}|W:\d{4}-W\d{2}|M:\d{4}-\d{2}|Y:\d{4}|U)$/';
    private const NARY = ['and', 'or', 'xor', 'one', 'diff'];

    /** @var list<string> */
    public array $inputs = [];
    public int $registers = 0;
    /** @var list<array{string, int|string, list<int|string>}> */
    private array $raw = [];
    /** @var list<int> */
    private array $free = [];

    private static function bad(string $why): InvalidArgument
    {
        return new InvalidArgument('expression', $why, null);
    }

    /**
     * The checked expression and the key of each leaf, in order.
     *
     * @param callable(string, string): string $keyOf
     * @return array{array<int, mixed>, list<string>}
     */
    public static function read(mixed $v, callable $keyOf): array
    {
        $leaves = [];
        $node = self::node($v, $keyOf, $leaves);
        if (count($leaves) > self::MAX_LEAVES) {
            throw self::bad('names more than ' . self::MAX_LEAVES . ' bitmaps');
        }
        self::check($node, false);
        return [$node, $leaves];
    }

    /** @param list<string> $leaves */
    private static function items(mixed $v, string $op, callable $keyOf, array &$leaves): array
    {
        if (!is_array($v) || !array_is_list($v)) {
            throw self::bad("`$op` takes a list of expressions");
        }
        $out = [];
        foreach ($v as $x) {
            $out[] = self::node($x, $keyOf, $leaves);
        }
        return $out;
    }

    /** @param list<string> $leaves */
    private static function node(mixed $v, callable $keyOf, array &$leaves): array
    {
        $text = json_encode($v);
        if (!is_array($v) || ($v !== [] && array_is_list($v))) {
            throw self::bad("$text is not an object");
        }
        if (array_key_exists('event', $v)) {
            $period = $v['period'] ?? null;
            if (!is_string($v['event']) || !is_string($period)) {
                throw self::bad("$text: an event takes a name and a period label");
            }
            if (preg_match(self::LABEL, $period) !== 1) {
                throw self::bad("`$period` is not a period label (H:, D:, W:, M:, Y: or U)");
            }
            $leaves[] = $keyOf($v['event'], $period);
            return ['event', $leaves[count($leaves) - 1]];
        }
        if (array_key_exists('at_least', $v)) {
            $n = $v['at_least'];
            if (!is_int($n) || $n < 0) {
                throw self::bad("$text: at_least takes a count");
            }
            return ['at_least', $n, self::items($v['of'] ?? null, 'of', $keyOf, $leaves)];
        }
        if (count($v) !== 1) {
            throw self::bad("$text: one operator per object");
        }
        $op = (string) array_key_first($v);
        if ($op === 'not') {
            return ['not', self::node($v[$op], $keyOf, $leaves)];
        }
        if (!in_array($op, self::NARY, true)) {
            throw self::bad("unknown operator `$op`");
        }
        $of = self::items($v[$op], $op, $keyOf, $leaves);
        if ($op === 'diff' && $of === []) {
            throw self::bad('`diff` of nothing');
        }
        return [$op, $of];
    }

    private static function check(array $n, bool $inAnd): void
    {
        [$op] = $n;
        if ($op === 'event') {
            return;
        }
        if ($op === 'not') {
            if (!$inAnd) {
                throw self::bad('NOT is only allowed as an operand of AND');
            }
            self::check($n[1], false);
            return;
        }
        if ($op === 'at_least') {
            [, $k, $v] = $n;
            if ($k === 0 || $k > self::MAX_AT_LEAST || $k > count($v)) {
                throw self::bad("at least $k of " . count($v) . ' (n from 1 to ' . self::MAX_AT_LEAST . ' and at most the operands)');
            }
            self::checkAll($v, false);
            return;
        }
        $v = $n[1];
        if ($v === []) {
            throw self::bad('an operator of nothing');
        }
        if ($op === 'and') {
            if (count(array_filter($v, fn ($x) => $x[0] !== 'not')) === 0) {
                throw self::bad('AND of NOTs alone');
            }
            self::checkAll($v, true);
            return;
        }
        if ($op === 'diff' && count($v) < 2) {
            throw self::bad('DIFF of nothing to subtract');
        }
        self::checkAll($v, false);
    }

    private static function checkAll(array $v, bool $inAnd): void
    {
        foreach ($v as $x) {
            self::check($x, $inAnd);
        }
    }

    /**
     * An AND's positive part (one node) and what its NOTs subtract.
     *
     * @return array{array, list<array>}
     */
    private static function splitAnd(array $v): array
    {
        $pos = array_values(array_filter($v, fn ($x) => $x[0] !== 'not'));
        $neg = array_values(array_map(fn ($x) => $x[1], array_filter($v, fn ($x) => $x[0] === 'not')));
        return [count($pos) === 1 ? $pos[0] : ['and', $pos], $neg];
    }

    /** The program of a checked node: the result is -1, a register an int >= 0, an input 'i<index>'. */
    public static function compile(array $node): self
    {
        $p = new self();
        $p->eval($node, -1);
        return $p;
    }

    private function reg(): int
    {
        return array_pop($this->free) ?? $this->registers++;
    }

    private function release(int|string $o): void
    {
        if (is_int($o) && $o >= 0) {
            $this->free[] = $o;
        }
    }

    /** @param list<int|string> $srcs */
    private function step(string $op, int|string $dst, array $srcs): void
    {
        $this->raw[] = [$op, $dst, $srcs];
    }

    private function leaf(string $key): string
    {
        $i = array_search($key, $this->inputs, true);
        if ($i === false) {
            $this->inputs[] = $key;
            $i = count($this->inputs) - 1;
        }
        return "i$i";
    }

    private function operand(array $n): int|string
    {
        if ($n[0] === 'event') {
            return $this->leaf($n[1]);
        }
        $r = $this->reg();
        $this->eval($n, $r);
        return $r;
    }

    private function nary(string $op, array $v, int|string $dst): void
    {
        $srcs = array_map(fn ($x) => $this->operand($x), $v);
        $this->step($op, $dst, $srcs);
        foreach ($srcs as $s) {
            $this->release($s);
        }
    }

    private function eval(array $n, int|string $dst): void
    {
        match ($n[0]) {
            'event' => $this->step('OR', $dst, [$this->leaf($n[1])]),
            'or', 'xor' => $this->nary(strtoupper($n[0]), $n[1], $dst),
            'and' => $this->and($n[1], $dst),
            'diff' => $this->diff($n[1][0], array_slice($n[1], 1), $dst),
            'one' => $this->one($n[1], $dst),
            'at_least' => $this->atLeast($n[1], $n[2], $dst),
        };
    }

    private function and(array $v, int|string $dst): void
    {
        [$first, $neg] = self::splitAnd($v);
        if ($neg !== []) {
            $this->diff($first, $neg, $dst);
        } else {
            $this->nary('AND', $v, $dst);
        }
    }

    /** a AND NOT (OR rest) as a XOR (a AND (OR rest)). */
    private function diff(array $a, array $rest, int|string $dst): void
    {
        $x = $dst;
        if ($a[0] === 'event') {
            $x = $this->leaf($a[1]);
        } else {
            $this->eval($a, $dst);
        }
        if (count($rest) === 1) {
            $y = $this->operand($rest[0]);
        } else {
            $y = $this->reg();
            $this->nary('OR', $rest, $y);
        }
        if ($x !== $dst) {
            $this->step('AND', $dst, [$x, $y]);
            $this->step('XOR', $dst, [$dst, $x]);
        } else {
            $t = is_int($y) ? $y : $this->reg();
            $this->step('AND', $t, [$dst, $y]);
            $this->step('XOR', $dst, [$dst, $t]);
            if ($t !== $y) {
                $this->release($t);
            }
        }
        $this->release($y);
    }

    /** In exactly one: ones XOR-ed, twos OR-ed from ones AND x, then ones AND NOT twos. */
    private function one(array $v, int|string $dst): void
    {
        if (count($v) === 1) {
            $this->nary('OR', $v, $dst);
            return;
        }
        $this->eval($v[0], $dst);
        [$twos, $t] = [$this->reg(), $this->reg()];
        foreach (array_slice($v, 1) as $i => $e) {
            $x = $this->operand($e);
            if ($i === 0) {
                $this->step('AND', $twos, [$dst, $x]);
            } else {
                $this->step('AND', $t, [$dst, $x]);
                $this->step('OR', $twos, [$twos, $t]);
            }
            $this->step('XOR', $dst, [$dst, $x]);
            $this->release($x);
        }
        $this->step('AND', $t, [$dst, $twos]);
        $this->step('XOR', $dst, [$dst, $t]);
        $this->release($t);
        $this->release($twos);
    }

    /** at[j]: the ids in at least j+1 of the operands so far; at[n-1] is dst. */
    private function atLeast(int $n, array $v, int|string $dst): void
    {
        if ($n === 1) {
            $this->nary('OR', $v, $dst);
            return;
        }
        $at = [];
        for ($j = 0; $j < $n - 1; $j++) {
            $at[] = $this->reg();
        }
        $at[] = $dst;
        $t = $this->reg();
        foreach ($v as $i => $e) {
            $x = $this->operand($e);
            for ($j = min($i, $n - 1); $j > 0; $j--) {
                if ($j === $i) {
                    $this->step('AND', $at[$j], [$at[$j - 1], $x]);
                } else {
                    $this->step('AND', $t, [$at[$j - 1], $x]);
                    $this->step('OR', $at[$j], [$at[$j], $t]);
                }
            }
            $this->step('OR', $at[0], $i === 0 ? [$x] : [$at[0], $x]);
            $this->release($x);
        }
        $this->release($t);
        foreach ($at as $r) {
            $this->release($r);
        }
    }

    /** @return list<string> the steps over KEYS indices: 1 the result, then the registers, then the inputs */
    public function steps(): array
    {
        $index = fn (int|string $o): int => is_string($o)
            ? 2 + $this->registers + (int) substr($o, 1)
            : ($o === -1 ? 1 : 2 + $o);
        return array_map(
            fn ($s) => implode(' ', [$s[0], $index($s[1]), ...array_map($index, $s[2])]),
            $this->raw,
        );
    }

    /**
     * The bitmap of a node over fetched bitmaps of one length.
     *
     * @param array<string, string> $bitmapOf
     */
    public static function evaluate(array $n, array $bitmapOf, int $len): string
    {
        $all = fn (array $v): array => array_map(fn ($e) => self::evaluate($e, $bitmapOf, $len), $v);
        $or = fn (array $bs): string => array_reduce(array_slice($bs, 1), fn ($a, $b) => $a | $b, $bs[0]);
        $empty = str_repeat("\0", $len);
        switch ($n[0]) {
            case 'event':
                return $bitmapOf[$n[1]];
            case 'or':
                return $or($all($n[1]));
            case 'xor':
                $bs = $all($n[1]);
                return array_reduce(array_slice($bs, 1), fn ($a, $b) => $a ^ $b, $bs[0]);
            case 'and':
                [$first, $neg] = self::splitAnd($n[1]);
                if ($neg !== []) {
                    return self::evaluate(['diff', [$first, ...$neg]], $bitmapOf, $len);
                }
                $bs = $all($n[1]);
                return array_reduce(array_slice($bs, 1), fn ($a, $b) => $a & $b, $bs[0]);
            case 'diff':
                $bs = $all($n[1]);
                return $bs[0] & ~$or(array_slice($bs, 1));
            case 'one':
                [$ones, $twos] = [$empty, $empty];
                foreach ($all($n[1]) as $x) {
                    $twos |= $ones & $x;
                    $ones ^= $x;
                }
                return $ones & ~$twos;
            default:
                $at = array_fill(0, $n[1], $empty);
                foreach ($all($n[2]) as $x) {
                    for ($j = $n[1] - 1; $j > 0; $j--) {
                        $at[$j] |= $at[$j - 1] & $x;
                    }
                    $at[0] |= $x;
                }
                return $at[$n[1] - 1];
        }
    }

    /** How many bits are set. */
    public static function popcount(string $b): int
    {
        $n = 0;
        foreach (count_chars($b, 1) as $byte => $times) {
            $n += substr_count(decbin($byte), '1') * $times;
        }
        return $n;
    }

    /** @return list<int> the reply analytics.query gives for the result bitmap */
    public static function answer(string $result, string $what, int $at, int $limit): array
    {
        $bits = strlen($result) * 8;
        $has = fn (int $i): bool => $i < $bits && ((ord($result[intdiv($i, 8)]) >> (7 - $i % 8)) & 1) === 1;
        if ($what === 'COUNT') {
            return [self::popcount($result)];
        }
        if ($what === 'MEMBER') {
            return [$has($at) ? 1 : 0];
        }
        $out = [-1];
        $pos = $at;
        while (count($out) <= $limit && $pos < $bits) {
            if ($has($pos)) {
                $out[] = $pos;
            }
            $pos++;
        }
        if ($pos < $bits) {
            $out[0] = $pos;
        }
        return $out;
    }

    /**
     * Fetched bitmaps (null or false: missing) padded to one length, and that length.
     *
     * @param list<mixed> $blobs
     * @return array{list<string>, int}
     */
    public static function padded(array $blobs): array
    {
        $strings = array_map(fn ($b) => is_string($b) ? $b : '', $blobs);
        $len = $strings === [] ? 0 : max(array_map('strlen', $strings));
        return [array_map(fn ($s) => str_pad($s, $len, "\0"), $strings), $len];
    }
}
