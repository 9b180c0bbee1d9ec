<?php

declare(strict_types=1);

namespace RedisPatterns;

use RedisPatterns\Errors\InvalidArgument;
use RedisPatterns\Scripts\SigninScripts;

/** Daily sign-in bitmaps <prefix><YYYYMMDD>, or <prefix>{<tag>}:<YYYYMMDD> with a tag. Days are 'Y-m-d'. */
final class SignIn
{
    public function __construct(
        private \Redis|\RedisCluster $redis,
        public readonly string $prefix = Contract::DEFAULTS['signin']['prefix'],
        public readonly ?string $tag = Contract::DEFAULTS['signin']['tag'],
        public readonly int $maxUid = Contract::DEFAULTS['signin']['max_uid'],
        public readonly ?int $retentionS = Contract::DEFAULTS['signin']['retention_s'],
    ) {
        if (preg_match('/\s/', $prefix)) {
            throw new InvalidArgument('prefix', 'must not contain whitespace');
        }
        if ($tag !== null && ($tag === '' || strpbrk($tag, '{}') !== false)) {
            throw new InvalidArgument('tag', "must not be empty and must not contain '{' or '}'");
        }
    }

    public function key(string $day): string
    {
        $date = str_replace('-', '', $day);
        if ($this->tag === null) {
            return Contract::key('signin', 'day', ['prefix' => $this->prefix, 'YYYYMMDD' => $date]);
        }
        return Contract::key('signin', 'day_tagged', ['prefix' => $this->prefix, 'tag' => $this->tag, 'YYYYMMDD' => $date]);
    }

    private function tmp(): string
    {
        $base = $this->tag !== null
            ? rtrim(Contract::key('signin', 'day_tagged', ['prefix' => $this->prefix, 'tag' => $this->tag, 'YYYYMMDD' => '']), ':')
            : rtrim($this->prefix, ':');
        if ($base === '') {
            $base = Contract::CONSTANTS['signin']['tmp_base_bare'];
        }
        return Contract::key('signin', 'tmp', ['base' => $base, 'hex16' => Bitmaps::hex16()]);
    }

    /** Marks $uid signed in on $day; true when it is the first sign-in that day. */
    public function signIn(int $uid, string $day): bool
    {
        Bitmaps::checkUid($uid, $this->maxUid);
        $exp = Bitmaps::expireAt($this->retentionS, Bitmaps::nextDay($day));
        return Runtime::run($this->redis, SigninScripts::mark($this->key($day), $uid, $this->maxUid, $exp)) === 1;
    }

    public function signedIn(int $uid, string $day): bool
    {
        return $uid <= $this->maxUid && Runtime::run($this->redis, ['GETBIT', $this->key($day), (string) $uid]) === 1;
    }

    public function count(string $day): int
    {
        return (int) Runtime::run($this->redis, ['BITCOUNT', $this->key($day)]);
    }

    private function keys(string $first, string $last): array
    {
        return array_map(fn($d) => $this->key($d), Bitmaps::days($first, $last));
    }

    private function combined(string $op, string $first, string $last): string
    {
        $keys = $this->keys($first, $last);
        if ($this->redis instanceof \RedisCluster && $this->tag === null) {
            return Bitmaps::fold($op, Runtime::all($this->redis, array_map(fn($k) => ['GET', $k], $keys)));
        }
        return (string) Runtime::run($this->redis, SigninScripts::combine($this->tmp(), $keys, $op));
    }

    /** Users signed in on at least one day of $first..$last, ascending. */
    public function activeAny(string $first, string $last): array
    {
        return Bitmaps::decodeBits($this->combined('OR', $first, $last));
    }

    /** Users signed in on every day of $first..$last, ascending. */
    public function activeEvery(string $first, string $last): array
    {
        return Bitmaps::decodeBits($this->combined('AND', $first, $last));
    }

    public function countAny(string $first, string $last): int
    {
        return $this->countOf('OR', $first, $last);
    }

    public function countEvery(string $first, string $last): int
    {
        return $this->countOf('AND', $first, $last);
    }

    private function countOf(string $op, string $first, string $last): int
    {
        if ($this->redis instanceof \RedisCluster && $this->tag === null) {
            return count(Bitmaps::decodeBits($this->combined($op, $first, $last)));
        }
        return (int) Runtime::run($this->redis, SigninScripts::count($this->tmp(), $this->keys($first, $last), $op));
    }
}
