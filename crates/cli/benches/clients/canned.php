<?php
// The PHP client's own CPU per tryAcquire + release pair, without a server:
// a \Redis subclass answers rawCommand from a table (a fence, then 1); see
// canned.py. One exported client per process (its classes would clash):
//
//   php canned.php DIR [PAIRS] [ROUNDS]
declare(strict_types=1);

require $argv[1] . '/autoload.php';

use RedisPatterns\Lock;

final class CannedRedis extends \Redis
{
    private int $flip = 0;

    // lock/acquire's fence, then lock/release's 1.
    public function rawCommand($command, ...$args): mixed
    {
        $this->flip ^= 1;
        return $this->flip ? 17 : 1;
    }

    public function getOption($option): mixed
    {
        return null;
    }

    public function getMode(): mixed
    {
        return \Redis::ATOMIC;
    }

    public function clearLastError(): bool
    {
        return true;
    }

    public function getLastError(): ?string
    {
        return null;
    }
}

$n = (int) ($argv[2] ?? 20000);
$rounds = (int) ($argv[3] ?? 15);
$r = new CannedRedis();
$lock = new Lock($r, 'canned-pairs', 30000);
$kinds = [
    'client' => function (int $k) use ($lock): void {
        for ($i = 0; $i < $k; $i++) {
            $lock->release($lock->tryAcquire()->token);
        }
    },
    'hand' => function (int $k) use ($r): void {
        for ($i = 0; $i < $k; $i++) {
            $token = bin2hex(random_bytes(16));
            if ((int) $r->rawCommand('EVALSHA', str_repeat('a', 40), '4', 'k', 'f', 'q', 'p', $token, '30000', '0', '0') <= 0) {
                throw new \RuntimeException('fence');
            }
            if ($r->rawCommand('EVALSHA', str_repeat('b', 40), '3', 'k', 'q', 'p', $token, 'c') !== 1) {
                throw new \RuntimeException('release');
            }
        }
    },
];
$cpu = function (): float {
    $u = getrusage();
    return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1e6 + $u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec'];
};
$best = [];
foreach ($kinds as $name => $f) {
    $f(intdiv($n, 5));
    $best[$name] = INF;
}
for ($round = 0; $round < $rounds; $round++) {
    foreach ($kinds as $name => $f) {
        $c = $cpu();
        $f($n);
        $best[$name] = min($best[$name], ($cpu() - $c) / $n);
    }
}
printf("%s: client CPU per pair %.2f us (min of %d rounds of %d; canned calls by hand %.2f us)\n", $argv[1], $best['client'] - $best['hand'], $rounds, $n, $best['hand']);
