<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\VisitsScripts;

/** Exact daily unique visitors: keys <prefix>{<name>:<YYYY-MM-DD>}:count and :<shard>. */
final class Visits
{
    private \DateTimeZone $zone;

    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $name,
        public readonly int $shards,
        public readonly string $prefix = Contract::DEFAULTS['visits']['prefix'],
        string $timeZone = Contract::DEFAULTS['visits']['time_zone'],
        public readonly ?int $graceS = Contract::DEFAULTS['visits']['grace_s'],
        public readonly ?int $lateS = Contract::DEFAULTS['visits']['late_s'],
    ) {
        if ($name === '' || strpbrk($name, '{}') !== false) {
            throw new InvalidArgument('counter name', "must not be empty and must not contain '{' or '}'");
        }
        $max = Contract::CONSTANTS['visits']['max_shards'];
        if ($shards < 1 || $shards > $max) {
            throw new InvalidArgument('shards', "must be from 1 to $max, got $shards");
        }
        if ($lateS !== null && $graceS !== null && $lateS > $graceS) {
            throw new InvalidArgument('late window', "$lateS s is longer than the retention's grace of $graceS s");
        }
        $this->zone = new \DateTimeZone($timeZone);
    }

    public static function shardOf(int $member, int $shards): int
    {
        return crc32((string) $member) % $shards;
    }

    private function vars(string $day): array
    {
        return ['prefix' => $this->prefix, 'name' => $this->name, 'YYYY-MM-DD' => $day];
    }

    public function counterKey(string $day): string
    {
        return Contract::key('visits', 'counter', $this->vars($day));
    }

    public function shardKey(string $day, int $index): string
    {
        return Contract::key('visits', 'shard', $this->vars($day) + ['shard' => $index]);
    }

    /** The day's meta key: its layout, written with its first member. */
    public function metaKey(string $day): string
    {
        return Contract::key('visits', 'meta', $this->vars($day));
    }

    /** The scripts' expire_at of a day (YYYY-MM-DD): the next local midnight plus the grace; 0 for never. */
    public function expireAt(string $day): int
    {
        return $this->graceS === null ? 0 : $this->endOfDay($day) + $this->graceS;
    }

    /** The scripts' accept_until of a day: the next local midnight plus the late window; 0: as long as its keys live. */
    public function acceptUntil(string $day): int
    {
        return $this->lateS === null ? 0 : $this->endOfDay($day) + $this->lateS;
    }

    /** The next local midnight after a day (YYYY-MM-DD), as unix seconds. */
    private function endOfDay(string $day): int
    {
        $next = (new \DateTimeImmutable($day, new \DateTimeZone('UTC')))->modify('+1 day')->format('Y-m-d');
        for ($minute = 0; $minute <= 24 * 60; $minute++) {
            $wall = (new \DateTimeImmutable("$next 00:00:00", new \DateTimeZone('UTC')))->modify("+$minute minutes")->format('Y-m-d H:i:s');
            $local = new \DateTimeImmutable($wall, $this->zone);
            if ($local->format('Y-m-d H:i:s') === $wall) {
                // Ambiguous: PHP picks the earlier of the two instants, as the Rust crate does.
                return $local->getTimestamp();
            }
        }
        throw new InvalidArgument('day', "$day: the zone has no valid local time on the next day");
    }

    /** Counts one visit: ['new' => bool, 'count' => int]. */
    public function add(string $day, int $member): array
    {
        [$new, $count] = Runtime::run($this->redis, VisitsScripts::add(
            $this->counterKey($day), $this->shardKey($day, self::shardOf($member, $this->shards)), $this->metaKey($day),
            $this->expireAt($day), $this->acceptUntil($day), $member, $this->shards));
        return ['new' => $new === 1, 'count' => max($count, 0)];
    }

    /** Counts many visits of one day in one script call: ['count' => int, 'new' => bool[] per member]. */
    public function addBatch(string $day, array $members): array
    {
        if ($members === []) {
            return ['count' => $this->count($day), 'new' => []];
        }
        $groups = [];
        $place = [];
        $seen = [];
        foreach ($members as $m) {
            if (isset($seen[$m])) {
                $place[] = null;
                continue;
            }
            $seen[$m] = true;
            $s = self::shardOf($m, $this->shards);
            $groups[$s][] = $m;
            $place[] = [$s, count($groups[$s]) - 1];
        }
        $offset = [];
        $at = 1;
        $args = [];
        $keys = [];
        foreach ($groups as $s => $ms) {
            $offset[$s] = $at;
            $at += count($ms);
            $args[] = count($ms);
            array_push($args, ...$ms);
            $keys[] = $this->shardKey($day, $s);
        }
        $reply = Runtime::run($this->redis, VisitsScripts::add_batch($this->counterKey($day), $this->metaKey($day), $keys, $this->expireAt($day), $this->acceptUntil($day), $this->shards, $args));
        $new = array_map(fn($p) => $p !== null && $reply[$offset[$p[0]] + $p[1]] === 1, $place);
        return ['count' => max($reply[0], 0), 'new' => $new];
    }

    public function count(string $day): int
    {
        return max((int) Runtime::run($this->redis, ['GET', $this->counterKey($day)]), 0);
    }

    public function contains(string $day, int $member): bool
    {
        [$counted] = Runtime::run($this->redis, VisitsScripts::contains(
            $this->counterKey($day), $this->shardKey($day, self::shardOf($member, $this->shards)), $member));
        return $counted === 1;
    }
}
