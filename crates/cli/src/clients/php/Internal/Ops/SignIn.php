<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Errors\UidOutOfRange;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Days;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\Streak;
use RedisPatterns\Scripts\SigninScripts;

/** Daily sign-in bitmaps (src/signin, src/bitmap, lua/signin). */
final class SignIn
{
    public const MAX_OFFSET = 4294967295;

    public function __construct(
        private readonly string $prefix,
        private readonly ?string $tag,
        private readonly int $maxUid,
        private readonly ?int $retentionS,
    ) {
        self::checkSettings($prefix, $maxUid);
    }

    /** The settings of a bitmap pattern (sign-in, login log, analytics): a prefix that names keys, ids within a bitmap. */
    public static function checkSettings(string $prefix, int $maxUid, string $what = 'max uid'): void
    {
        if (preg_match('/\s/', $prefix) === 1) {
            throw Checks::bad('prefix', 'must not contain whitespace');
        }
        if (strpbrk($prefix, '{}') !== false) {
            throw Checks::bad('prefix', "must not contain '{' or '}'");
        }
        if ($maxUid > self::MAX_OFFSET) {
            throw Checks::bad($what, "$maxUid is above the largest bit offset " . self::MAX_OFFSET);
        }
    }

    public static function checkUid(int $uid, int $maxUid): void
    {
        if ($uid > $maxUid) {
            throw new UidOutOfRange("uid $uid is above the configured maximum $maxUid");
        }
    }

    /** The temporary key of one script over `$keys`, or null when they must be fetched (a cluster, other slots). */
    public static function combined(Runner $run, string $base, array $keys): ?string
    {
        $tmp = $base . ':tmp:' . bin2hex(random_bytes(8));
        if (!$run->cluster) {
            return $tmp;
        }
        $slot = $run->slot($tmp);
        foreach ($keys as $k) {
            if ($run->slot($k) !== $slot) {
                return null;
            }
        }
        return $tmp;
    }

    /**
     * Per [base, keys] group: one signin.combine call, or a GET of each key.
     *
     * @param list<array{string, list<string>}> $groups
     */
    public static function readGroups(Runner $run, string $op, array $groups): array
    {
        $batch = [];
        foreach ($groups as [$base, $keys]) {
            $tmp = self::combined($run, $base, $keys);
            if ($tmp !== null) {
                $batch[] = SigninScripts::combine($tmp, $keys, $op);
            } else {
                foreach ($keys as $k) {
                    $batch[] = Cmd::key('GET', $k);
                }
            }
        }
        return $run->batch($batch);
    }

    public function key(string $day): string
    {
        $d = str_replace('-', '', $day);
        if ($this->tag === null) {
            return Contract::key('signin', 'day', ['prefix' => $this->prefix, 'YYYYMMDD' => $d]);
        }
        return Contract::key('signin', 'day_tagged', ['prefix' => $this->prefix, 'tag' => $this->tag, 'YYYYMMDD' => $d]);
    }

    private function base(): string
    {
        if ($this->tag !== null) {
            return $this->prefix . '{' . $this->tag . '}';
        }
        $base = rtrim($this->prefix, ':');
        return $base === '' ? 'signin' : $base;
    }

    public function signIn(Runner $run, int $uid, string $day): bool
    {
        self::checkUid($uid, $this->maxUid);
        $expire = Days::expireAt($this->retentionS, Days::add($day, 1));
        return (int) $run->one(SigninScripts::mark($this->key($day), $uid, $this->maxUid, $expire)) === 1;
    }

    public function signedIn(Runner $run, int $uid, string $day): bool
    {
        if ($uid > $this->maxUid) {
            return false;
        }
        return (int) $run->one(Cmd::key('GETBIT', $this->key($day), $uid)) === 1;
    }

    public function count(Runner $run, string $day): int
    {
        return max((int) $run->one(Cmd::key('BITCOUNT', $this->key($day))), 0);
    }

    /** @return list<string> */
    private function keys(string $from, string $to): array
    {
        return array_map(fn (string $d): string => $this->key($d), Days::range($from, $to));
    }

    /** @return list<int> */
    private function users(Runner $run, string $op, string $from, string $to): array
    {
        $replies = self::readGroups($run, $op, [[$this->base(), $this->keys($from, $to)]]);
        return Days::decodeBits(Days::fold($op, $replies));
    }

    private function countOf(Runner $run, string $op, string $from, string $to): int
    {
        $keys = $this->keys($from, $to);
        $tmp = self::combined($run, $this->base(), $keys);
        if ($tmp !== null) {
            return max((int) $run->one(SigninScripts::count($tmp, $keys, $op)), 0);
        }
        $replies = $run->batch(array_map(fn (string $k): Cmd => Cmd::key('GET', $k), $keys));
        return count(Days::decodeBits(Days::fold($op, $replies)));
    }

    public function activeAny(Runner $run, string $from, string $to): array
    {
        return $this->users($run, 'OR', $from, $to);
    }

    public function activeEvery(Runner $run, string $from, string $to): array
    {
        return $this->users($run, 'AND', $from, $to);
    }

    public function countAny(Runner $run, string $from, string $to): int
    {
        return $this->countOf($run, 'OR', $from, $to);
    }

    public function countEvery(Runner $run, string $from, string $to): int
    {
        return $this->countOf($run, 'AND', $from, $to);
    }

    /** @return list<string> */
    public function daysSignedIn(Runner $run, int $uid, string $from, string $to): array
    {
        $days = Days::range($from, $to);
        self::checkUid($uid, $this->maxUid);
        $bits = $run->batch(array_map(fn (string $d): Cmd => Cmd::key('GETBIT', $this->key($d), $uid), $days));
        $out = [];
        foreach ($days as $i => $d) {
            if ((int) $bits[$i] === 1) {
                $out[] = $d;
            }
        }
        return $out;
    }

    public function streak(Runner $run, int $uid, string $from, string $to): Streak
    {
        $days = $this->daysSignedIn($run, $uid, $from, $to);
        $longest = 0;
        $ends = null;
        $streak = 0;
        $prev = null;
        foreach ($days as $d) {
            $streak = ($prev !== null && Days::add($prev, 1) === $d) ? $streak + 1 : 1;
            if ($streak > $longest) {
                $longest = $streak;
                $ends = $d;
            }
            $prev = $d;
        }
        return new Streak($longest, $ends, $prev === $to ? $streak : 0);
    }
}
