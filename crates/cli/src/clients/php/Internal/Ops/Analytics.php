<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\UidOutOfRange;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Scripts\AnalyticsScripts;

/** Bitmap analytics (src/analytics, lua/analytics): marks in one bitmap per period, periods in UTC. */
final class Analytics
{
    public const MAX_OFFSET = 4294967295;
    private const ORDER = ['hour', 'day', 'week', 'month', 'year'];

    /** @var list<string> */
    private array $granularities;

    /** @param list<string>|null $granularities */
    public function __construct(
        private readonly string $prefix,
        private readonly ?string $tag,
        private readonly int $maxId,
        ?array $granularities,
    ) {
        if (preg_match('/\s/', $prefix) === 1) {
            throw Checks::bad('prefix', 'must not contain whitespace');
        }
        if (strpbrk($prefix, '{}') !== false) {
            throw Checks::bad('prefix', "must not contain '{' or '}'");
        }
        if ($maxId > self::MAX_OFFSET) {
            throw Checks::bad('max id', "$maxId is above the largest bit offset " . self::MAX_OFFSET);
        }
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
        $values = array_merge(array_fill(0, count($keys), 0), [$id]);
        return (int) $run->one(AnalyticsScripts::mark($keys, $this->maxId, $values)) === 1;
    }

    public function count(Runner $run, string $event, string $period): int
    {
        return max((int) $run->one(Cmd::key('BITCOUNT', $this->key($event, $period))), 0);
    }
}
