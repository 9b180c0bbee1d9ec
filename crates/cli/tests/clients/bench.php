<?php
// The PHP client's figures of issue 20's benchmark, against a server you
// start (loopback only):
//
//   php bench.php CLIENT_DIR PORT [ROUNDS]
//
// * PING round trip (median of 2,000), the floor of the figures below;
// * one PING after an idle pause of 2 to 11 ms, and the floor of a woken
//   handoff (a raw subscriber woken by SPUBLISH sends one PING);
// * lock handoff: a holder process releases, the waiter (blocked in
//   acquire: notified waiting) returns; p50 / p99 of ROUNDS handoffs, also as
//   multiples of the round trips above (hrtime is CLOCK_MONOTONIC, shared by
//   both processes);
// * acquire + release pairs/s (tryAcquire + release) against phpredis's raw
//   SET NX PX + an EVALSHA compare-and-delete, and the ratio;
// * ShardedHash::len over 2,048 shards: the server's read events and HLEN
//   calls (INFO stats / commandstats) around it, and its time.

declare(strict_types=1);

use RedisPatterns\{Lock, ShardedHash};

[$dir, $port] = [$argv[1], (int) $argv[2]];
$rounds = (int) ($argv[3] ?? 200);
require $dir . '/autoload.php';

function connect(int $port): Redis
{
    $r = new Redis();
    $r->connect('127.0.0.1', $port, 5.0);
    return $r;
}

function pct(array $xs, float $p): float
{
    sort($xs);
    return $xs[(int) min(count($xs) - 1, floor($p * count($xs)))];
}

function info(Redis $r, string $section, string $field): int
{
    foreach (explode("\n", (string) $r->rawCommand('INFO', $section)) as $l) {
        if (str_starts_with($l, "$field:")) {
            $v = trim(substr($l, strlen($field) + 1));
            return (int) (str_starts_with($v, 'calls=') ? substr(explode(',', $v)[0], 6) : $v);
        }
    }
    return 0;
}

$r = connect($port);
$r->flushAll();
$pings = [];
for ($i = 0; $i < 2000; $i++) {
    $t = hrtime(true);
    $r->ping();
    $pings[] = (hrtime(true) - $t) / 1000;
}
$ping = pct($pings, 0.5);
printf("php PING round trip: %.1f us (median of 2000)\n", $ping);

// A handoff wakes an idle process, so besides the hot round trip two
// baselines are measured like the handoffs (as benches/lock.rs does): one
// PING after the same idle pause, and the floor of any woken handoff: a
// raw subscriber (SSUBSCRIBE on a socket of its own) woken by an SPUBLISH
// sends one PING.
$pause = fn (int $i): int => 2000 + ($i * 7 % 10) * 1000;
$idle = [];
for ($i = 0; $i < $rounds; $i++) {
    usleep($pause($i));
    $t = hrtime(true);
    $r->ping();
    $idle[] = (hrtime(true) - $t) / 1000;
}
$idlePing = pct($idle, 0.5);
$floorPair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
$pid = pcntl_fork();
if ($pid === 0) {
    $sub = RedisPatterns\Internal\Subscription::open(new RedisPatterns\Internal\Endpoint('127.0.0.1', $port), 'bench:{raw}');
    $own = connect($port);
    fwrite($floorPair[1], "ready\n");
    for ($i = 0; $i < $rounds; $i++) {
        $sub->wait(10000);
        $own->ping();
        fwrite($floorPair[1], hrtime(true) . "\n");
    }
    posix_kill(getmypid(), SIGKILL);
}
fgets($floorPair[0]);
$floor = [];
for ($i = 0; $i < $rounds; $i++) {
    usleep($pause($i));
    $t = hrtime(true);
    $r->rawCommand('SPUBLISH', 'bench:{raw}', 'x');
    $floor[] = ((int) fgets($floorPair[0]) - $t) / 1000;
}
pcntl_waitpid($pid, $status);
printf("php one round trip after the same idle pause: %.1f us; floor (raw SPUBLISH wakes a subscriber, which sends one PING): p50 %.1f us, p99 %.1f us\n",
    $idlePing, pct($floor, 0.5), pct($floor, 0.99));

// Handoff: the holder takes the lock, tells the waiter, waits until the waiter
// is blocked, stamps the time and releases.
$pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
$pid = pcntl_fork();
if ($pid === 0) {
    $own = connect($port);
    $lock = new Lock($own, 'bench-handoff', 30000);
    for ($i = 0; $i < $rounds; $i++) {
        $own->rawCommand('DEL', 'redis:lock:{bench-handoff}');
        $lease = $lock->tryAcquire();
        fwrite($pair[1], "held\n");
        fgets($pair[1]); // the waiter is about to wait
        usleep(20000 + $i * 7 % 10 * 1000);
        $t = hrtime(true);
        $lock->release($lease->token);
        fwrite($pair[1], "$t\n");
        fgets($pair[1]); // the waiter has it and gave it back
    }
    posix_kill(getmypid(), SIGKILL);
}
$lock = new Lock($r, 'bench-handoff', 30000);
$handoffs = [];
for ($i = 0; $i < $rounds; $i++) {
    fgets($pair[0]);
    fwrite($pair[0], "waiting\n");
    $lease = $lock->acquire(10000);
    $done = hrtime(true);
    $released = (int) trim((string) fgets($pair[0]));
    $handoffs[] = ($done - $released) / 1000;
    $lock->release($lease->token);
    fwrite($pair[0], "next\n");
}
pcntl_waitpid($pid, $status);
[$p50, $p99] = [pct($handoffs, 0.5), pct($handoffs, 0.99)];
printf("php lock handoff (%d rounds): p50 %.1f us = %.2f x hot PING = %.2f x idle PING = %.2f x floor, p99 %.1f us = %.2f x hot PING\n",
    $rounds, $p50, $p50 / $ping, $p50 / $idlePing, $p50 / pct($floor, 0.5), $p99, $p99 / $ping);

// Pairs per second.
$n = 5000;
$t = hrtime(true);
$l = new Lock($r, 'bench-pairs', 30000);
for ($i = 0; $i < $n; $i++) {
    $lease = $l->tryAcquire();
    $l->release($lease->token);
}
$ours = $n / ((hrtime(true) - $t) / 1e9);
$cad = $r->script('load', "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");
$t = hrtime(true);
for ($i = 0; $i < $n; $i++) {
    $token = bin2hex(random_bytes(16));
    $r->set('bench-raw', $token, ['nx', 'px' => 30000]);
    $r->evalSha($cad, ['bench-raw', $token], 1);
}
$raw = $n / ((hrtime(true) - $t) / 1e9);
printf("php acquire+release: %.0f pairs/s, raw SET NX + compare-and-delete: %.0f pairs/s, ratio %.2f\n", $ours, $raw, $ours / $raw);

// ShardedHash::len over 2,048 shards.
$h = new ShardedHash($r, 'bench-fan', 2048);
$h->len(); // the runner's first use
$side = connect($port);
$side->rawCommand('CONFIG', 'RESETSTAT');
$reads = info($side, 'stats', 'total_reads_processed');
$t = hrtime(true);
$h->len();
$us = (hrtime(true) - $t) / 1000;
$reads = info($side, 'stats', 'total_reads_processed') - $reads - 1;
printf("php ShardedHash::len over 2048 shards: %d HLEN in %d server read events, %.0f us\n", info($side, 'commandstats', 'cmdstat_hlen'), $reads, $us);
