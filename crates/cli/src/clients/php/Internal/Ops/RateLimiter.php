<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Contract;
use RedisPatterns\Internal\Checks;
use RedisPatterns\Internal\Cmd;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Records\Decision;
use RedisPatterns\Scripts\RateLimitScripts;

/** The rate limiters' operations (src/rate_limit, lua/rate_limit). */
final class RateLimiter
{
    private const MAX_TOLERANCE_US = 10 ** 15;

    private int $maxQuantity;

    public function __construct(
        public readonly string $kind,
        private readonly int $limit,
        private readonly int $windowMs,
        private readonly int $maxBurst,
        private readonly int $countPerPeriod,
        private readonly int $periodMs,
        public readonly string $prefix,
    ) {
        if ($kind === 'gcra') {
            self::within('max_burst', $maxBurst, 0, 999_999_999);
            self::within('count_per_period', $countPerPeriod, 1, 999_999_999);
            if ($periodMs < 1 || $periodMs > 999_999_999_999) {
                throw Checks::bad('period', 'must be from 1 to 999999999999 ms');
            }
            if ($countPerPeriod > $periodMs * 1000) {
                throw Checks::bad('count_per_period', 'must be at most one per microsecond of the period (' . ($periodMs * 1000) . ')');
            }
            $interval = intdiv($periodMs * 1000 + $countPerPeriod - 1, $countPerPeriod);
            if ($interval * ($maxBurst + 1) > self::MAX_TOLERANCE_US) {
                throw Checks::bad('max_burst', '(max_burst + 1) emission intervals must not exceed 10^15 microseconds');
            }
            $this->maxQuantity = $maxBurst + 1;
        } else {
            $most = $kind === 'sliding_counter' ? 1_000_000 : 100_000;
            $longest = $kind === 'sliding_counter' ? 2_592_000_000 : 999_999_999_999;
            self::within('limit', $limit, 1, $most);
            if ($windowMs < 1 || $windowMs > $longest) {
                throw Checks::bad('window', "must be from 1 to $longest ms");
            }
            $this->maxQuantity = $limit;
        }
    }

    private static function within(string $what, int $v, int $lo, int $hi): void
    {
        if ($v < $lo || $v > $hi) {
            throw Checks::bad($what, "must be from $lo to $hi");
        }
    }

    public function key(string $subject): string
    {
        $role = ['gcra' => 'tat', 'sliding_counter' => 'counter', 'sliding_log' => 'log'][$this->kind];
        return Contract::key('rate_limit', $role, ['prefix' => $this->prefix, 'subject' => Checks::name('subject', $subject)]);
    }

    /** @param list<int|string> $reply */
    private static function decision(array $reply): Decision
    {
        [$limited, $limit, $remaining, $retry, $reset] = array_map('intval', $reply);
        return new Decision($limited === 1, $limit, $remaining, $retry === -1 ? null : $retry, $reset);
    }

    public function throttle(Runner $run, string $subject, int $quantity): Decision
    {
        $k = $this->key($subject);
        if ($quantity > $this->maxQuantity) {
            throw Checks::bad('quantity', "must be at most {$this->maxQuantity}, the most one call may take");
        }
        $call = match ($this->kind) {
            'gcra' => RateLimitScripts::throttle($k, $this->maxBurst, $this->countPerPeriod, $this->periodMs, $quantity, []),
            'sliding_counter' => RateLimitScripts::windowCounter($k, $this->limit, $this->windowMs, $quantity, []),
            default => RateLimitScripts::windowLog($k, $this->limit, $this->windowMs, $quantity, []),
        };
        return self::decision($run->one($call));
    }

    public function peek(Runner $run, string $subject): Decision
    {
        return $this->throttle($run, $subject, 0);
    }

    public function reset(Runner $run, string $subject): bool
    {
        return (int) $run->one(Cmd::key('DEL', $this->key($subject))) > 0;
    }

    public static function throttleOnce(Runner $run, string $subject, int $maxBurst, int $countPerPeriod, int $periodMs, int $quantity): Decision
    {
        return (new self('gcra', 0, 0, $maxBurst, $countPerPeriod, $periodMs, 'rate:'))->throttle($run, $subject, $quantity);
    }

    public static function allowOncePer(Runner $run, string $subject, int $intervalMs): Decision
    {
        return (new self('gcra', 0, 0, 0, 1, $intervalMs, 'rate:'))->throttle($run, $subject, 1);
    }
}
