<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\LoginLogScripts;
use RedisPatterns\Scripts\SigninScripts;

/** The monthly login log <prefix><YYYY-MM>_<type>_<uid> with day indexes per type. Days are 'Y-m-d'. */
final class LoginLog
{
    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $prefix = Contract::DEFAULTS['login_log']['prefix'],
        public readonly int $maxUid = Contract::DEFAULTS['login_log']['max_uid'],
        public readonly ?int $retentionS = Contract::DEFAULTS['login_log']['retention_s'],
    ) {
        if (preg_match('/[\s{}]/', $prefix)) {
            throw new InvalidArgument('prefix', "must not contain whitespace, '{' or '}'");
        }
    }

    private static function checkType(string $type): void
    {
        if (!preg_match('/^[A-Za-z0-9-]+$/', $type)) {
            throw new InvalidArgument('user type', "\"$type\" must be non-empty ASCII letters, digits or '-'");
        }
    }

    public function logKey(string $type, int $uid, string $day): string
    {
        return Contract::key('login_log', 'log', ['prefix' => $this->prefix, 'YYYY-MM' => substr($day, 0, 7), 'type' => $type, 'uid' => $uid]);
    }

    public function indexKey(string $type, string $day): string
    {
        return Contract::key('login_log', 'day_index', ['prefix' => $this->prefix, 'YYYY-MM' => substr($day, 0, 7), 'YYYYMMDD' => str_replace('-', '', $day), 'type' => $type]);
    }

    public function typesKey(string $day): string
    {
        return Contract::key('login_log', 'types', ['prefix' => $this->prefix, 'YYYY-MM' => substr($day, 0, 7)]);
    }

    private function tmpKey(string $day): string
    {
        return Contract::key('login_log', 'tmp', ['prefix' => $this->prefix, 'YYYY-MM' => substr($day, 0, 7), 'hex16' => Bitmaps::hex16()]);
    }

    /** Records a login; true when it is the user's first recorded that day. */
    public function record(string $type, int $uid, string $day): bool
    {
        self::checkType($type);
        Bitmaps::checkUid($uid, $this->maxUid);
        $nextMonth = (new \DateTimeImmutable(substr($day, 0, 7) . '-01', new \DateTimeZone('UTC')))->modify('+1 month')->format('Y-m-d');
        $logExp = Bitmaps::expireAt($this->retentionS, $nextMonth);
        $indexExp = Bitmaps::expireAt($this->retentionS, Bitmaps::nextDay($day));
        [$log, $index, $types] = [$this->logKey($type, $uid, $day), $this->indexKey($type, $day), $this->typesKey($day)];
        $d = (int) substr($day, 8, 2);
        if (!($this->redis instanceof \RedisCluster)) {
            return Runtime::run($this->redis, LoginLogScripts::record($log, $index, $types, $d, $uid, $this->maxUid, $type, $logExp, $indexExp)) === 1;
        }
        // The cluster split: the log has no hash tag; both halves are idempotent.
        [$first] = Runtime::all($this->redis, [
            LoginLogScripts::mark($log, $d, $logExp),
            LoginLogScripts::index($index, $types, $uid, $this->maxUid, $type, $indexExp),
        ]);
        return $first === 1;
    }

    public function loggedInOn(string $type, int $uid, string $day): bool
    {
        self::checkType($type);
        return Runtime::run($this->redis, ['GETBIT', $this->logKey($type, $uid, $day), (string) (int) substr($day, 8, 2)]) === 1;
    }

    public function daysInMonth(string $type, int $uid, string $month): int
    {
        self::checkType($type);
        return (int) Runtime::run($this->redis, ['BITCOUNT', $this->logKey($type, $uid, "$month-01")]);
    }

    /** The days ('Y-m-d') of $first..$last on which the user logged in, ascending. */
    public function loginDays(string $type, int $uid, string $first, string $last): array
    {
        self::checkType($type);
        $out = [];
        foreach (Bitmaps::months($first, $last) as [$a, $b]) {
            $days = Runtime::run($this->redis, LoginLogScripts::days($this->logKey($type, $uid, $a), (int) substr($a, 8, 2), (int) substr($b, 8, 2)));
            foreach ($days as $d) {
                $out[] = substr($a, 0, 8) . sprintf('%02d', $d);
            }
        }
        return $out;
    }

    /** Users of $type who logged in on any day of $first..$last, ascending. */
    public function activeUsers(string $type, string $first, string $last): array
    {
        self::checkType($type);
        $calls = [];
        foreach (Bitmaps::months($first, $last) as [$a, $b]) {
            $keys = array_map(fn($d) => $this->indexKey($type, $d), Bitmaps::days($a, $b));
            $calls[] = SigninScripts::combine($this->tmpKey($a), $keys, 'OR');
        }
        return Bitmaps::decodeBits(Bitmaps::fold('OR', Runtime::all($this->redis, $calls)));
    }

    /** [type, uid] of every user active on any day of $first..$last, by type then uid. */
    public function allActiveUsers(string $first, string $last): array
    {
        $types = [];
        foreach (Bitmaps::months($first, $last) as [$a]) {
            foreach (Runtime::run($this->redis, ['SMEMBERS', $this->typesKey($a)]) as $t) {
                $types[$t] = true;
            }
        }
        $types = array_keys($types);
        sort($types, SORT_STRING);
        $out = [];
        foreach ($types as $t) {
            foreach ($this->activeUsers((string) $t, $first, $last) as $uid) {
                $out[] = [(string) $t, $uid];
            }
        }
        return $out;
    }
}
