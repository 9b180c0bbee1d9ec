<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Days;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\ActiveUser;
use RedisPatterns\Records\Expiry;
use RedisPatterns\Records\MonthLogins;
use RedisPatterns\Records\ReindexReport;
use RedisPatterns\Scripts\LoginLogScripts;

/** The monthly login log of the PHP recipe (src/login_log, lua/login_log). */
final class LoginLog
{
    private const MIN_RETENTION_DAYS = 32;

    public function __construct(private readonly string $prefix, private readonly int $maxUid, private readonly ?int $retentionS)
    {
        SignIn::checkSettings($prefix, $maxUid);
    }

    public static function checkType(string $userType): void
    {
        if (preg_match('/^[A-Za-z0-9-]+$/', $userType) !== 1) {
            throw Checks::bad('user type', "`$userType` must be non-empty ASCII letters, digits or '-'");
        }
    }

    private static function month(int $year, int $month): string
    {
        if ($year < 0 || $year > 9999 || !checkdate($month, 1, $year)) {
            throw Checks::bad('month', sprintf('%d-%02d is not a valid month', $year, $month));
        }
        return sprintf('%04d-%02d-01', $year, $month);
    }

    public function monthOf(string $day): string
    {
        return Days::monthStart($day);
    }

    /** @return list<string> */
    public function syncMonths(string $today): array
    {
        $this_ = Days::monthStart($today);
        $before = Days::dom($today) < 8 ? [Days::monthStart(Days::add($this_, -1))] : [];
        return [...$before, $this_];
    }

    public function logKey(string $userType, int $uid, string $day): string
    {
        return Contract::key('login_log', 'log', ['prefix' => $this->prefix, 'type' => $userType, 'uid' => $uid, 'YYYY-MM' => substr($day, 0, 7)]);
    }

    public function indexKey(string $userType, string $day): string
    {
        return Contract::key('login_log', 'day_index', ['prefix' => $this->prefix, 'type' => $userType,
            'YYYYMMDD' => str_replace('-', '', $day), 'YYYY-MM' => substr($day, 0, 7)]);
    }

    public function typesKey(string $day): string
    {
        return Contract::key('login_log', 'types', ['prefix' => $this->prefix, 'YYYY-MM' => substr($day, 0, 7)]);
    }

    private function tag(string $day): string
    {
        return $this->prefix . '{' . substr($day, 0, 7) . '}';
    }

    public function record(Runner $run, string $userType, int $uid, string $day): bool
    {
        self::checkType($userType);
        SignIn::checkUid($uid, $this->maxUid);
        $logExp = Days::expireAt($this->retentionS, Days::nextMonth($day));
        $indexExp = Days::expireAt($this->retentionS, Days::add($day, 1));
        $log = $this->logKey($userType, $uid, $day);
        $index = $this->indexKey($userType, $day);
        $types = $this->typesKey($day);
        if (!$run->cluster || $run->slot($log) === $run->slot($index)) {
            return (int) $run->one(LoginLogScripts::record($log, $index, $types, Days::dom($day), $uid, $this->maxUid, $userType, $logExp, $indexExp)) === 1;
        }
        [$first] = $run->batch([
            LoginLogScripts::mark($log, Days::dom($day), $logExp),
            LoginLogScripts::index($index, $types, $uid, $this->maxUid, $userType, $indexExp),
        ]);
        return (int) $first === 1;
    }

    public function loggedInOn(Runner $run, string $userType, int $uid, string $day): bool
    {
        self::checkType($userType);
        return (int) $run->one(Cmd::key('GETBIT', $this->logKey($userType, $uid, $day), Days::dom($day))) === 1;
    }

    public function daysInMonth(Runner $run, string $userType, int $uid, int $year, int $month): int
    {
        self::checkType($userType);
        return max((int) $run->one(Cmd::key('BITCOUNT', $this->logKey($userType, $uid, self::month($year, $month)))), 0);
    }

    public function loggedInInMonth(Runner $run, string $userType, int $uid, int $year, int $month): bool
    {
        return $this->daysInMonth($run, $userType, $uid, $year, $month) > 0;
    }

    public function loggedInBetween(Runner $run, string $userType, int $uid, string $from, string $to): bool
    {
        self::checkType($userType);
        $batch = [];
        foreach (Days::months($from, $to) as [$a, $b]) {
            $batch[] = Cmd::key('BITCOUNT', $this->logKey($userType, $uid, $a), Days::dom($a), Days::dom($b), 'BIT');
        }
        foreach ($run->batch($batch) as $n) {
            if ((int) $n > 0) {
                return true;
            }
        }
        return false;
    }

    /** @return list<string> */
    public function loginDays(Runner $run, string $userType, int $uid, string $from, string $to): array
    {
        self::checkType($userType);
        $months = Days::months($from, $to);
        $batch = array_map(fn (array $m) => LoginLogScripts::days($this->logKey($userType, $uid, $m[0]), Days::dom($m[0]), Days::dom($m[1])), $months);
        $out = [];
        foreach ($run->batch($batch) as $i => $days) {
            foreach ($days as $d) {
                $out[] = substr($months[$i][0], 0, 8) . sprintf('%02d', (int) $d);
            }
        }
        return $out;
    }

    private function union(Runner $run, string $userType, array $months): string
    {
        $groups = [];
        foreach ($months as [$a, $b]) {
            $groups[] = [$this->tag($a), array_map(fn (string $d): string => $this->indexKey($userType, $d), Days::range($a, $b))];
        }
        return Days::fold('OR', SignIn::readGroups($run, 'OR', $groups));
    }

    /** @return list<int> */
    public function activeUsers(Runner $run, string $userType, string $from, string $to): array
    {
        self::checkType($userType);
        return Days::decodeBits($this->union($run, $userType, Days::months($from, $to)));
    }

    /** @return list<string> */
    private function types(Runner $run, array $months): array
    {
        $sets = $run->batch(array_map(fn (array $m): Cmd => Cmd::key('SMEMBERS', $this->typesKey($m[0])), $months));
        $out = [];
        foreach ($sets as $set) {
            foreach ($set as $t) {
                $out[(string) $t] = true;
            }
        }
        $out = array_map('strval', array_keys($out));
        sort($out, SORT_STRING);
        return $out;
    }

    public function typesBetween(Runner $run, string $from, string $to): array
    {
        return $this->types($run, Days::months($from, $to));
    }

    /** @return list<ActiveUser> */
    public function allActiveUsers(Runner $run, string $from, string $to): array
    {
        $months = Days::months($from, $to);
        $out = [];
        foreach ($this->types($run, $months) as $t) {
            foreach (Days::decodeBits($this->union($run, $t, $months)) as $uid) {
                $out[] = new ActiveUser($t, $uid);
            }
        }
        return $out;
    }

    public function monthUsers(Runner $run, string $month): array
    {
        $first = Days::monthStart($month);
        return $this->allActiveUsers($run, $first, Days::add(Days::nextMonth($first), -1));
    }

    /**
     * @param list<ActiveUser> $users
     * @return list<MonthLogins>
     */
    public function monthLogins(Runner $run, string $month, array $users): array
    {
        $first = Days::monthStart($month);
        $logs = $run->batch(array_map(fn (ActiveUser $u): Cmd => Cmd::key('GET', $this->logKey($u->userType, $u->uid, $first)), $users));
        $out = [];
        foreach ($users as $i => $u) {
            $days = array_values(array_filter(Days::decodeBits($logs[$i]), fn (int $d): bool => $d >= 1 && $d <= 31));
            $out[] = new MonthLogins(substr($first, 0, 7), $u->userType, $u->uid, $days);
        }
        return $out;
    }

    private function exportsKey(): string
    {
        return $this->prefix . 'exports';
    }

    public function markExported(Runner $run, string $month, string $on): void
    {
        $run->one(Cmd::key('HSET', $this->exportsKey(), substr($month, 0, 7), $on));
    }

    /** @return list<array{string, string}> */
    public function exports(Runner $run): array
    {
        $out = [];
        foreach (Layouts::pairs($run->one(Cmd::key('HGETALL', $this->exportsKey()))) as $m => $d) {
            $first = $m . '-01';
            try {
                $out[] = [Checks::date('month', $first), Checks::date('export', $d)];
            } catch (\RedisPatterns\Errors\InvalidArgument) {
                continue;
            }
        }
        sort($out);
        return $out;
    }

    public function expireMonth(Runner $run, string $month, int $keepDays, string $today): Expiry
    {
        if ($keepDays < self::MIN_RETENTION_DAYS) {
            throw Checks::bad('retention', 'must be at least ' . self::MIN_RETENTION_DAYS . ' days after a month ends');
        }
        $first = Days::monthStart($month);
        $end = Days::nextMonth($first);
        $label = substr($first, 0, 7);
        if (Days::number($today) - Days::number($end) < $keepDays) {
            return new Expiry('kept', $label, null, null);
        }
        $last = $run->one(Cmd::key('HGET', $this->exportsKey(), $label));
        if ($last === null || (string) $last < $end) {
            return new Expiry('not_exported', $label, null, $last === null ? null : (string) $last);
        }
        $doomed = array_map(fn (ActiveUser $u): string => $this->logKey($u->userType, $u->uid, $first), $this->monthUsers($run, $first));
        foreach ($this->types($run, [[$first, $first]]) as $t) {
            foreach (Days::range($first, Days::add($end, -1)) as $d) {
                $doomed[] = $this->indexKey($t, $d);
            }
        }
        $doomed[] = $this->typesKey($first);
        $batch = array_map(fn (string $k): Cmd => Cmd::key('DEL', $k), $doomed);
        $batch[] = Cmd::key('HDEL', $this->exportsKey(), $label);
        $got = $run->batch($batch);
        array_pop($got);
        return new Expiry('deleted', $label, array_sum(array_map('intval', $got)), null);
    }

    /** @return array{string, string} the month's first day and the prefix of its log keys */
    private function monthPrefix(int $year, int $month, int $count): array
    {
        $first = self::month($year, $month);
        if ($count === 0) {
            throw Checks::bad('count', 'must be at least 1');
        }
        return [$first, $this->prefix . substr($first, 0, 7) . '_'];
    }

    /**
     * One page of a reindex: a SCAN on every node not done (`$at` moves
     * on: a cursor, or null when done), then the logs found.
     *
     * @param array<string, ?string> $at
     * @return array{int, int, int, int} logs, days, new, skipped
     */
    private function page(Runner $run, string $first, string $monthPrefix, int $count, array &$at): array
    {
        $pattern = preg_replace('/([*?\[\]\\\\])/', '\\\\$1', $run->prefix . $monthPrefix) . '*';
        $todo = array_keys(array_filter($at, fn (?string $c): bool => $c !== null));
        $pages = $run->batch(array_map(fn (string $n): Cmd => new Cmd(['SCAN', (string) $at[$n], 'MATCH', $pattern, 'COUNT', (string) $count, 'TYPE', 'string'],
            node: $run->cluster ? $n : null), $todo));
        $found = [];
        $skipped = 0;
        foreach ($todo as $i => $n) {
            [$next, $keys] = $pages[$i];
            $at[$n] = (string) $next === '0' ? null : (string) $next;
            foreach ($keys as $k) {
                $parsed = $this->parse(substr((string) $k, strlen($run->prefix)), $monthPrefix);
                if ($parsed === null) {
                    $skipped++;
                } else {
                    $found[] = $parsed;
                }
            }
        }
        if ($found === []) {
            return [0, 0, 0, $skipped];
        }
        [$year, $month] = [(int) substr($first, 0, 4), (int) substr($first, 5, 2)];
        $bits = $run->batch(array_map(fn (array $f): Cmd => Cmd::key('GETRANGE', $f[0], 0, 3), $found));
        $calls = [];
        foreach ($found as $i => [, $userType, $uid]) {
            foreach (Days::decodeBits($bits[$i]) as $d) {
                if ($d >= 1 && $d <= 31 && checkdate($month, $d, $year)) {
                    $day = substr($first, 0, 8) . sprintf('%02d', $d);
                    $exp = Days::expireAt($this->retentionS, Days::add($day, 1));
                    $calls[] = LoginLogScripts::index($this->indexKey($userType, $day), $this->typesKey($day), $uid, $this->maxUid, $userType, $exp);
                }
            }
        }
        $got = $calls === [] ? [] : $run->batch($calls);
        return [count($found), count($got), array_sum(array_map('intval', $got)), $skipped];
    }

    public function reindex(Runner $run, int $year, int $month, int $count): ReindexReport
    {
        [$first, $monthPrefix] = $this->monthPrefix($year, $month, $count);
        $at = array_fill_keys($run->nodes(), '0');
        $total = [0, 0, 0, 0];
        while (array_filter($at, fn (?string $c): bool => $c !== null) !== []) {
            foreach ($this->page($run, $first, $monthPrefix, $count, $at) as $i => $n) {
                $total[$i] += $n;
            }
        }
        [$logs, $days, $new, $skipped] = $total;
        return new ReindexReport($logs, $days, $new, 0, $skipped, true, self::cursorText($at));
    }

    public function reindexPage(Runner $run, int $year, int $month, string $cursor, int $count): ReindexReport
    {
        $named = self::cursorOf($cursor);
        [$first, $monthPrefix] = $this->monthPrefix($year, $month, $count);
        $at = [];
        foreach ($run->nodes() as $n) {
            $at[$n] = array_key_exists($n, $named) ? $named[$n] : '0';
        }
        $page = [0, 0, 0, 0];
        if (array_filter($at, fn (?string $c): bool => $c !== null) !== []) {
            $page = $this->page($run, $first, $monthPrefix, $count, $at);
        }
        [$logs, $days, $new, $skipped] = $page;
        $done = $at !== [] && !in_array(false, array_map(fn (?string $c): bool => $c === null, $at), true);
        return new ReindexReport($logs, $days, $new, 0, $skipped, $done, self::cursorText($at));
    }

    /** @param array<string, ?string> $at a reindex cursor as text (Rust: ReindexCursor's Display) */
    private static function cursorText(array $at): string
    {
        if ($at === []) {
            return '0';
        }
        $parts = [];
        foreach ($at as $n => $c) {
            $parts[] = $n . '@' . ($c ?? 'done');
        }
        return implode(',', $parts);
    }

    /** @return array<string, ?string> the nodes of a reindex cursor's text (Rust: ReindexCursor::from_str) */
    private static function cursorOf(string $s): array
    {
        if ($s === '0') {
            return [];
        }
        $bad = Checks::bad('reindex cursor', json_encode($s) . ' is not 0 or <node>@<cursor>|done,...');
        $out = [];
        foreach (explode(',', $s) as $part) {
            $at = strrpos($part, '@');
            if ($at === false) {
                throw $bad;
            }
            $node = substr($part, 0, $at);
            $c = substr($part, $at + 1);
            if ($node === '' || str_contains($node, '@')) {
                throw $bad;
            }
            if ($c === 'done') {
                $out[$node] = null;
            } elseif (preg_match('/^[0-9]{1,20}$/', $c) === 1 && (strlen($c) < 20 || strcmp($c, '18446744073709551615') <= 0)) {
                $out[$node] = $c;
            } else {
                throw $bad;
            }
        }
        return $out;
    }

    /** @return array{string, string, int}|null [key, user type, uid] of a log key of this month, null for another key */
    private function parse(string $k, string $monthPrefix): ?array
    {
        if (!str_starts_with($k, $monthPrefix)) {
            return null;
        }
        $rest = substr($k, strlen($monthPrefix));
        $at = strrpos($rest, '_');
        if ($at === false) {
            return null;
        }
        $userType = substr($rest, 0, $at);
        $uid = substr($rest, $at + 1);
        if (preg_match('/^[A-Za-z0-9-]+$/', $userType) !== 1 || preg_match('/^(0|[1-9][0-9]{0,17})$/', $uid) !== 1) {
            return null;
        }
        $n = (int) $uid;
        return $n <= $this->maxUid ? [$k, $userType, $n] : null;
    }
}
