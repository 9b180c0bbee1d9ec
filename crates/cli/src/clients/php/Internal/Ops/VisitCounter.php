<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Call;
use RedisPatterns\Contract;
use RedisPatterns\Errors\DayEnded;
use RedisPatterns\Errors\DayExpired;
use RedisPatterns\Errors\DayOpen;
use RedisPatterns\Errors\LayoutMismatch;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Days;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\BatchVisits;
use RedisPatterns\Records\ShardPlan;
use RedisPatterns\Records\Visit;
use RedisPatterns\Scripts\VisitsScripts;

/** The visit counter's operations (src/visits, lua/visits). */
final class VisitCounter
{
    private const MAX_GRACE_S = 366 * 86400;
    private const UNION_SETS = 512;

    private readonly \DateTimeZone $zone;

    public function __construct(
        public readonly string $name,
        public readonly int $shards,
        private readonly string $timeZone,
        private readonly string $prefix,
        private readonly ?int $retentionS,
        private readonly ?int $lateWindowS,
    ) {
        if ($retentionS !== null && $retentionS > self::MAX_GRACE_S) {
            throw Checks::bad('retention', 'must be whole seconds, at most 366 days');
        }
        if ($lateWindowS !== null) {
            if ($lateWindowS > self::MAX_GRACE_S) {
                throw Checks::bad('late window', 'must be whole seconds, at most 366 days');
            }
            if ($retentionS !== null && $lateWindowS > $retentionS) {
                throw Checks::bad('late window', "$lateWindowS s is longer than the retention's grace of $retentionS s: late visits would find their day's keys gone");
            }
        }
        $this->zone = Days::zone($timeZone);
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

    private function metaKey(string $day): string
    {
        return Contract::key('visits', 'meta', $this->vars($day));
    }

    public function shardKey(string $day, int $index): string
    {
        return Contract::key('visits', 'shard', $this->vars($day) + ['shard' => $index]);
    }

    private function expireAt(string $day): int
    {
        return $this->retentionS === null ? 0 : Days::endOfDay($day, $this->zone) + $this->retentionS;
    }

    private function acceptUntil(string $day): int
    {
        return $this->lateWindowS === null ? 0 : Days::endOfDay($day, $this->zone) + $this->lateWindowS;
    }

    private function addCall(string $day, int $member, int $expire, int $accept): Call
    {
        return VisitsScripts::add($this->counterKey($day), $this->shardKey($day, self::shardOf($member, $this->shards)),
            $this->metaKey($day), $expire, $accept, $member, $this->shards);
    }

    public function add(Runner $run, string $day, int $member): Visit
    {
        [$new, $count] = $run->one($this->addCall($day, $member, $this->expireAt($day), $this->acceptUntil($day)));
        return new Visit((int) $new === 1, max((int) $count, 0));
    }

    public function addNow(Runner $run, int $member): Visit
    {
        return $this->add($run, Days::today($this->zone), $member);
    }

    public function addAt(Runner $run, int $atMs, int $member): Visit
    {
        return $this->add($run, $this->dayOf($atMs), $member);
    }

    public function dayOf(int $atMs): string
    {
        return Days::at(intdiv($atMs, 1000), $this->zone);
    }

    public function memberFromStringId(string $id): int
    {
        $c = crc32($id);
        return $c >= 0x80000000 ? $c - 0x100000000 : $c;
    }

    /** @param list<int> $members */
    public function addPipelined(Runner $run, string $day, array $members): array
    {
        $expire = $this->expireAt($day);
        $accept = $this->acceptUntil($day);
        $replies = $run->batch(array_map(fn (int $m): Call => $this->addCall($day, $m, $expire, $accept), $members));
        return array_map(fn (array $r): Visit => new Visit((int) $r[0] === 1, max((int) $r[1], 0)), $replies);
    }

    /** @param list<int> $members */
    public function addBatch(Runner $run, string $day, array $members): BatchVisits
    {
        $expire = $this->expireAt($day);
        $accept = $this->acceptUntil($day);
        if ($members === []) {
            return new BatchVisits($this->count($run, $day), []);
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
        $reply = $run->one(VisitsScripts::addBatch($this->counterKey($day), $this->metaKey($day), $keys, $expire, $accept, $this->shards, $args));
        $new = array_map(fn (?array $p): bool => $p !== null && (int) $reply[$offset[$p[0]] + $p[1]] === 1, $place);
        return new BatchVisits(max((int) $reply[0], 0), $new);
    }

    public function count(Runner $run, string $day): int
    {
        return max((int) $run->one(Cmd::key('GET', $this->counterKey($day))), 0);
    }

    public function finalCount(Runner $run, string $day): int
    {
        $end = Days::endOfDay($day, $this->zone);
        [$now, $count] = $run->batch([new Cmd(['TIME'], node: Cmd::ANY), Cmd::key('GET', $this->counterKey($day))]);
        $now = (int) $now[0];
        $when = fn (int $at): string => gmdate('Y-m-d\TH:i:s+00:00', $at);
        if ($this->lateWindowS === null) {
            throw new DayOpen("$day accepts visits as long as its keys live (the counter has no late window)");
        }
        if ($now < $end + $this->lateWindowS) {
            throw new DayOpen("$day accepts visits until " . $when($end + $this->lateWindowS) . ' (its end plus the late window)');
        }
        if ($this->retentionS !== null && $now >= $end + $this->retentionS) {
            throw new DayExpired("$day's keys expired at " . $when($end + $this->retentionS) . " (its end plus the retention's grace)");
        }
        return max((int) $count, 0);
    }

    public function contains(Runner $run, string $day, int $member): bool
    {
        $reply = $run->one(VisitsScripts::contains($this->counterKey($day), $this->shardKey($day, self::shardOf($member, $this->shards)), $member));
        return is_array($reply) && $reply !== [] && (int) $reply[0] === 1;
    }

    /** @return list<int> */
    public function shardSizes(Runner $run, string $day): array
    {
        $batch = [];
        for ($i = 0; $i < $this->shards; $i++) {
            $batch[] = Cmd::key('SCARD', $this->shardKey($day, $i));
        }
        return array_map('intval', $run->batch($batch));
    }

    /** @param list<string> $days */
    public function distinctOver(Runner $run, array $days): int
    {
        $distinct = array_values(array_unique($days));
        sort($distinct);
        if ($distinct === []) {
            return 0;
        }
        if (count($distinct) === 1) {
            return $this->count($run, $distinct[0]);
        }
        $per = max(intdiv(self::UNION_SETS, count($distinct)), 1);
        $total = 0;
        for ($first = 0; $first < $this->shards; $first += $per) {
            $idx = range($first, min($first + $per, $this->shards) - 1);
            $batch = [];
            foreach ($idx as $i) {
                foreach ($distinct as $d) {
                    $batch[] = Cmd::key('SMEMBERS', $this->shardKey($d, $i));
                }
            }
            $sets = $run->batch($batch);
            foreach (array_chunk($sets, count($distinct)) as $group) {
                $union = [];
                foreach ($group as $members) {
                    foreach ($members as $m) {
                        $union[$m] = true;
                    }
                }
                $total += count($union);
            }
        }
        return $total;
    }

    public function distinctBetween(Runner $run, string $from, string $to): int
    {
        return $this->distinctOver($run, Days::range($from, $to));
    }

    public function storedShards(Runner $run, string $day): ?int
    {
        return $this->storedShardsBetween($run, $day, $day);
    }

    public function storedShardsBetween(Runner $run, string $from, string $to): ?int
    {
        $keys = array_map(fn (string $d): string => $this->metaKey($d), Days::range($from, $to));
        $got = $run->batch(array_map(fn (string $k): Cmd => Cmd::key('HGET', $k, 'shards'), $keys));
        $found = null;
        foreach ($keys as $i => $k) {
            if ($got[$i] === null) {
                continue;
            }
            $n = (int) $got[$i];
            if ($found !== null && $found[1] !== $n) {
                throw new LayoutMismatch($k, "shards=$n", "shards={$found[1]} (stored at {$found[0]})");
            }
            $found ??= [$k, $n];
        }
        return $found === null ? null : $found[1];
    }

    /** @return array{self, ShardPlan} */
    public static function planned(Runner $run, string $name, int $expectedDailyUniques, string $timeZone): array
    {
        if ($expectedDailyUniques === 0) {
            throw Checks::bad('expected daily uniques', 'must be at least 1');
        }
        try {
            $pairs = Layouts::pairs($run->one(new Cmd(['CONFIG', 'GET', 'set-max-intset-entries'], node: Cmd::ANY)));
            [$limit, $source] = $pairs === [] ? [512, 'default_because_unreported'] : [(int) array_values($pairs)[0], 'server'];
        } catch (RedisPatternsError) {
            [$limit, $source] = [512, 'default_because_denied'];
        }
        $shards = Plan::visitShards($expectedDailyUniques, $limit);
        $d = Contract::DEFAULTS['visits'];
        return [new self($name, $shards, $timeZone, $d['prefix'], $d['grace_s'], $d['late_s']), new ShardPlan($shards, $limit, $source)];
    }
}
