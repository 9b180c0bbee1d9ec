<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\UidOutOfRange;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Expr;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\Cohort;
use RedisPatterns\Records\EventStreak;
use RedisPatterns\Records\Page;
use RedisPatterns\Scripts\AnalyticsScripts;

/** Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC. */
final class Analytics
{
    public const MAX_OFFSET = 4294967295;
    public const MAX_RANGE = 1000;
    private const GRANULARITY = ['H' => 'hour', 'D' => 'day', 'W' => 'week', 'M' => 'month', 'Y' => 'year'];
    private const ORDER = ['hour', 'day', 'week', 'month', 'year'];

    /** @var list<string> */
    private array $granularities;

    /** @param list<string>|null $granularities */
    public function __construct(
        private readonly string $prefix,
        private readonly ?string $tag,
        private readonly int $maxId,
        ?array $granularities,
        private readonly bool $hll = false,
    ) {
        SignIn::checkSettings($prefix, $maxId, 'max id');
        $gs = $granularities ?? ['day', 'week', 'month'];
        $this->granularities = array_values(array_filter(self::ORDER, fn ($g) => in_array($g, $gs, true)));
        if ($this->granularities === []) {
            throw Checks::bad('granularities', 'must not be empty');
        }
    }

    /**
     * The period labels of the UTC instant `$atS`, one per granularity, finest first.
     *
     * @param list<string> $granularities
     * @return list<string>
     */
    public static function labels(int $atS, array $granularities): array
    {
        $by = [
            'hour' => gmdate('\H:Y-m-d\TH', $atS),
            'day' => gmdate('\D:Y-m-d', $atS),
            'week' => gmdate('\W:o-\WW', $atS),
            'month' => gmdate('\M:Y-m', $atS),
            'year' => gmdate('\Y:Y', $atS),
        ];
        return array_map(fn ($g) => $by[$g], $granularities);
    }

    public function key(string $event, string $period): string
    {
        if (preg_match('/\s/', $event) === 1) {
            throw Checks::bad('event', "`$event` must not contain whitespace");
        }
        if ($this->tag === null) {
            return Contract::key('analytics', 'event', ['prefix' => $this->prefix, 'event' => $event, 'period' => $period]);
        }
        return Contract::key('analytics', 'event_tagged', ['prefix' => $this->prefix, 'tag' => $this->tag, 'event' => $event, 'period' => $period]);
    }

    public function mark(Runner $run, string $event, int $id, int $atS): bool
    {
        $keys = array_map(fn ($p) => $this->key($event, $p), self::labels($atS, $this->granularities));
        if ($id > $this->maxId) {
            throw new UidOutOfRange("id $id is above the configured maximum {$this->maxId}");
        }
        if ($this->hll) {
            $values = array_merge(array_fill(0, count($keys) + 1, '0'), [(string) $id]);
            $reply = $run->one(AnalyticsScripts::markHll($keys[0] . ':hll', $keys, $this->maxId, $values));
            return (int) $reply[1] === 1;
        }
        $values = array_merge(array_fill(0, count($keys), 0), [$id]);
        return (int) $run->one(AnalyticsScripts::mark($keys, $this->maxId, $values)) === 1;
    }

    public function markString(Runner $run, string $event, string $id, int $atS): bool
    {
        $finest = $this->key($event, self::labels($atS, $this->granularities)[0]);
        $reply = $run->one(AnalyticsScripts::markHll($finest . ':hll', [], $this->maxId, ['0', $id]));
        return (int) $reply[0] === 1;
    }

    public function markUniqueString(Runner $run, string $event, string $id): bool
    {
        $unique = $this->key($event, 'U');
        $reply = $run->one(AnalyticsScripts::markHll($unique . ':hll', [], $this->maxId, ['0', $id]));
        return (int) $reply[0] === 1;
    }

    public function countUniques(Runner $run, string $event, string $first, ?string $last): int
    {
        if ($first === 'U' || $last === 'U') {
            if ($first !== 'U' || ($last !== null && $last !== 'U')) {
                throw Checks::bad('range', 'the unique event (U) is no range: first U, last null or U');
            }
            return max((int) $run->one(Cmd::key('PFCOUNT', $this->key($event, 'U') . ':hll')), 0);
        }
        $last ??= $first;
        if (substr($first, 0, 1) !== substr($last, 0, 1)) {
            throw Checks::bad('range', "$first and $last are periods of different granularities");
        }
        [$begin, $end] = [self::start($first, 'range'), self::start(self::offset($last, 1), 'range')];
        if ($begin > self::start($last, 'range')) {
            throw Checks::bad('range', "$first is after $last");
        }
        $finest = $this->granularities[0];
        if (!self::divides($finest, self::GRANULARITY[$first[0]])) {
            throw Checks::bad('period', "$first is not made of whole periods of the finest granularity ($finest), where the HyperLogLogs are");
        }
        $keys = [];
        $p = self::labels($begin, [$finest])[0];
        while (self::start($p, 'range') < $end) {
            if (count($keys) === self::MAX_RANGE) {
                throw Checks::bad('range', "$first to $last is more than " . self::MAX_RANGE . " $finest periods");
            }
            $keys[] = $this->key($event, $p) . ':hll';
            $p = self::offset($p, 1);
        }
        return max((int) $run->one(Cmd::key('PFCOUNT', $keys[0], ...array_slice($keys, 1))), 0);
    }

    /** Whether every period of granularity `$coarse` is made of whole periods of `$fine`. */
    private static function divides(string $fine, string $coarse): bool
    {
        [$f, $c] = [array_search($fine, self::ORDER, true), array_search($coarse, self::ORDER, true)];
        return $f === $c || ($f < $c && (in_array($fine, ['hour', 'day'], true) || [$fine, $coarse] === ['month', 'year']));
    }

    /** Where the period labelled `$label` starts (unix seconds, UTC). */
    public static function start(string $label, string $name): int
    {
        if (preg_match(Expr::LABEL, $label) !== 1 || $label === 'U') {
            throw Checks::bad($name, "`$label` is not a period label (H:, D:, W:, M: or Y:)");
        }
        // offset() checks the label against the calendar.
        self::offset($label, 0);
        [$kind, $text] = [$label[0], substr($label, 2)];
        $t = self::parsed($kind, $text);
        return $t === false ? 0 : $t->getTimestamp();
    }

    /**
     * The labels from `$first` to `$last` inclusive (one granularity, at most MAX_RANGE).
     *
     * @return list<string>
     */
    private static function periods(string $first, string $last): array
    {
        if (self::start($first, 'range') > self::start($last, 'range')) {
            throw Checks::bad('range', "$first is after $last");
        }
        if ($first[0] !== $last[0]) {
            throw Checks::bad('range', "$first and $last are periods of different granularities");
        }
        $out = [$first];
        while ($out[count($out) - 1] !== $last) {
            if (count($out) === self::MAX_RANGE) {
                throw Checks::bad('range', "$first to $last is more than " . self::MAX_RANGE . ' periods');
            }
            $out[] = self::offset($out[count($out) - 1], 1);
        }
        return $out;
    }

    public function streak(Runner $run, string $event, int $id, string $first, string $last): EventStreak
    {
        $this->key($event, $first);
        $ps = self::periods($first, $last);
        if ($id > $this->maxId) {
            return new EventStreak(0, null, 0, 0);
        }
        $call = AnalyticsScripts::streak(array_map(fn ($p) => $this->key($event, $p), $ps), $id);
        $r = array_map('intval', $run->one($call));
        return new EventStreak($r[0], $r[1] > 0 ? $ps[$r[1] - 1] : null, $r[2], $r[3]);
    }

    /** The expression of "at least `$atLeast` of the `$ofLast` periods ending with `$last`" (AND when they are equal). */
    private static function active(string $event, int $atLeast, int $ofLast, string $last): mixed
    {
        $leaves = [];
        for ($i = $ofLast - 1; $i >= 0; $i--) {
            $leaves[] = ['event' => $event, 'period' => self::offset($last, -$i)];
        }
        return $atLeast === $ofLast ? ['and' => $leaves] : ['at_least' => $atLeast, 'of' => $leaves];
    }

    public function activeCount(Runner $run, string $event, int $atLeast, int $ofLast, string $last): int
    {
        return $this->queryCount($run, self::active($event, $atLeast, $ofLast, $last), null, 60000);
    }

    public function activeContains(Runner $run, string $event, int $atLeast, int $ofLast, string $last, int $id): bool
    {
        return $this->queryContains($run, self::active($event, $atLeast, $ofLast, $last), $id, null, 60000);
    }

    public function activeMembers(Runner $run, string $event, int $atLeast, int $ofLast, string $last, int $from, int $limit): Page
    {
        return $this->queryMembers($run, self::active($event, $atLeast, $ofLast, $last), $from, $limit, null, 60000);
    }

    public function markUnique(Runner $run, string $event, int $id): bool
    {
        $keys = [$this->key($event, 'U')];
        if ($id > $this->maxId) {
            throw new UidOutOfRange("id $id is above the configured maximum {$this->maxId}");
        }
        if ($this->hll) {
            $reply = $run->one(AnalyticsScripts::markHll($keys[0] . ':hll', $keys, $this->maxId, ['0', '0', (string) $id]));
            return (int) $reply[1] === 1;
        }
        return (int) $run->one(AnalyticsScripts::mark($keys, $this->maxId, [0, $id])) === 1;
    }

    public function count(Runner $run, string $event, string $period): int
    {
        return max((int) $run->one(Cmd::key('BITCOUNT', $this->key($event, $period))), 0);
    }

    /** The start of the period `$text` of kind `$kind` (H, D, W, M, Y) in UTC; false when it is none. */
    private static function parsed(string $kind, string $text): \DateTimeImmutable|false
    {
        $utc = new \DateTimeZone('UTC');
        return match ($kind) {
            'H' => \DateTimeImmutable::createFromFormat('!Y-m-d\\TH', $text, $utc),
            'D' => \DateTimeImmutable::createFromFormat('!Y-m-d', $text, $utc),
            'W' => (new \DateTimeImmutable('@0'))->setISODate((int) substr($text, 0, 4), (int) substr($text, 6), 1),
            'M' => \DateTimeImmutable::createFromFormat('!Y-m', $text, $utc),
            default => \DateTimeImmutable::createFromFormat('!Y', $text, $utc),
        };
    }

    /** The label of the period `$n` periods after the one labelled `$label` (hour, day, ISO week, month or year). */
    public static function offset(string $label, int $n): string
    {
        if (preg_match(Expr::LABEL, $label) !== 1 || $label === 'U') {
            throw Checks::bad('first', "`$label` is not a period label (H:, D:, W:, M: or Y:)");
        }
        [$kind, $text] = [$label[0], substr($label, 2)];
        $parsed = self::parsed($kind, $text);
        $format = ['H' => '\\H:Y-m-d\\TH', 'D' => '\\D:Y-m-d', 'W' => '\\W:o-\\WW', 'M' => '\\M:Y-m', 'Y' => '\\Y:Y'][$kind];
        if ($parsed === false || $parsed->format($format) !== $label) {
            throw Checks::bad('first', "`$label` is not a period of the calendar");
        }
        $unit = ['H' => 'hours', 'D' => 'days', 'W' => 'weeks', 'M' => 'months', 'Y' => 'years'][$kind];
        return $parsed->modify(sprintf('%+d %s', $n, $unit))->format($format);
    }

    private static function tmpKey(string $base): string
    {
        return $base . ':tmp:' . bin2hex(random_bytes(8));
    }

    private function base(string $event): string
    {
        return $this->prefix . '{' . ($this->tag ?? $event) . '}';
    }

    /** @param list<string> $keys */
    private static function oneSlot(Runner $run, string $key, array $keys): bool
    {
        if (!$run->cluster) {
            return true;
        }
        foreach ($keys as $k) {
            if ($run->slot($k) !== $run->slot($key)) {
                return false;
            }
        }
        return true;
    }

    /** @return list<int> analytics.query's reply, or the same computed client-side */
    private function query(Runner $run, mixed $e, string $answer, int $at, int $limit, ?string $cache, int $ttlMs): array
    {
        $events = [];
        [$node, $leaves] = Expr::read($e, function (string $event, string $period) use (&$events): string {
            if ($event === '' || strpbrk($event, '{}') !== false) {
                throw Checks::bad('event', "must not be empty and must not contain '{' or '}'");
            }
            $events[] = $event;
            return $this->key($event, $period);
        });
        $base = $this->base($events[0]);
        if ($cache !== null && preg_match('/\s/', $cache) === 1) {
            throw Checks::bad('cache', "`$cache` must not contain whitespace");
        }
        [$result, $ttl] = $cache !== null ? ["$base:cache:$cache", $ttlMs] : [self::tmpKey($base), 0];
        if (self::oneSlot($run, $result, $leaves)) {
            $p = Expr::compile($node);
            $operands = [];
            for ($i = 0; $i < $p->registers; $i++) {
                $operands[] = self::tmpKey($base);
            }
            $call = AnalyticsScripts::query($result, [...$operands, ...$p->inputs], false, $p->registers, $answer, $at, $limit, $ttl, $p->steps());
            return array_map('intval', $run->one($call));
        }
        $keys = array_values(array_unique($leaves));
        sort($keys);
        [$bitmaps, $len] = Expr::padded($run->batch(array_map(fn ($k) => Cmd::key('GET', $k), $keys)));
        return Expr::answer(Expr::evaluate($node, array_combine($keys, $bitmaps), $len), $answer, $at, $limit);
    }

    public function queryCount(Runner $run, mixed $e, ?string $cache, int $ttlMs): int
    {
        return max($this->query($run, $e, 'COUNT', 0, 0, $cache, $ttlMs)[0], 0);
    }

    public function queryContains(Runner $run, mixed $e, int $id, ?string $cache, int $ttlMs): bool
    {
        if ($id > self::MAX_OFFSET) {
            Expr::read($e, fn (string $event, string $period): string => $this->key($event, $period));
            return false;
        }
        return $this->query($run, $e, 'MEMBER', $id, 0, $cache, $ttlMs)[0] === 1;
    }

    public function queryMembers(Runner $run, mixed $e, int $from, int $limit, ?string $cache, int $ttlMs): Page
    {
        if ($from > self::MAX_OFFSET) {
            Expr::read($e, fn (string $event, string $period): string => $this->key($event, $period));
            return new Page([], null);
        }
        $reply = $this->query($run, $e, 'MEMBERS', $from, $limit, $cache, $ttlMs);
        return new Page(array_slice($reply, 1), $reply[0] >= 0 ? $reply[0] : null);
    }

    public function cohort(Runner $run, string $cohortEvent, string $returnEvent, string $first, int $rows, int $columns): Cohort
    {
        $periods = [];
        for ($i = 0; $i < $rows + $columns - 1; $i++) {
            $periods[] = self::offset($first, $i);
        }
        $labels = array_slice($periods, 0, $rows);
        $bitmaps = [
            ...array_map(fn ($p) => $this->key($cohortEvent, $p), $labels),
            ...array_map(fn ($p) => $this->key($returnEvent, $p), $periods),
        ];
        $tmp = self::tmpKey($this->base($cohortEvent));
        if (self::oneSlot($run, $tmp, $bitmaps)) {
            $flat = array_map('intval', $run->one(AnalyticsScripts::cohort($tmp, $bitmaps, $rows, $columns)));
            return self::table($labels, $rows, $columns, $flat);
        }
        [$blobs] = Expr::padded($run->batch(array_map(fn ($k) => Cmd::key('GET', $k), $bitmaps)));
        [$cohorts, $back] = [array_slice($blobs, 0, $rows), array_slice($blobs, $rows)];
        $flat = array_map([Expr::class, 'popcount'], $back);
        foreach ($cohorts as $i => $c) {
            $flat[] = Expr::popcount($c);
            foreach (array_slice($back, $i, $columns) as $r) {
                $flat[] = Expr::popcount($c & $r);
            }
        }
        return self::table($labels, $rows, $columns, $flat);
    }

    /**
     * The table of analytics.cohort's reply: every return bitmap's count, then per row its size and cells.
     *
     * @param list<string> $periods
     * @param list<int> $flat
     */
    private static function table(array $periods, int $rows, int $columns, array $flat): Cohort
    {
        $returns = $rows + $columns - 1;
        $at = $returns;
        [$sizes, $counts] = [[], []];
        for ($i = 0; $i < $rows; $i++) {
            $size = max($flat[$at], 0);
            $at++;
            $cells = min($columns, $returns - $i);
            $row = [];
            for ($k = 0; $k < $cells; $k++) {
                $row[] = $size > 0 && $flat[$i + $k] > 0 ? max($flat[$at + $k], 0) : null;
            }
            $at += $cells;
            $sizes[] = $size;
            $counts[] = $row;
        }
        return new Cohort($periods, $sizes, $counts);
    }
}
