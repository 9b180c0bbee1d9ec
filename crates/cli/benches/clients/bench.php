<?php
// The PHP client's part of `cargo bench --bench clients` (phpredis), run by
// crates/cli/benches/clients.rs against the servers it started on loopback:
//
//   php bench.php DIR figures PORT ROUNDS PAIRS
//   php bench.php DIR fanout URL [URL...] [--cluster]
//
// figures prints one JSON line: the hot PING round trip (median of 2,000),
// one PING after an idle pause of 2 to 11 ms (median of ROUNDS), ROUNDS lock
// handoffs (a holder process releases; this process, blocked in acquire:
// notified waiting, returns: microseconds from just before the release is
// sent; hrtime is CLOCK_MONOTONIC, shared by both processes), and 5 rounds
// of PAIRS acquire + release pairs/s (tryAcquire + release) and of
// phpredis's raw SET NX PX + EVALSHA compare-and-delete, interleaved (a b,
// b a, ...) after a warm-up of each.
//
// fanout builds a ShardedHash of 2,048 shards, calls len once (the client's
// first use: connections, script loads), prints "ready", reads a line,
// calls len again (the call the driver counts on the servers: one pipeline
// per node, multi(Redis::PIPELINE)) and prints its JSON.

declare(strict_types=1);

use RedisPatterns\{Lock, ShardedHash};

[$dir, $mode] = [$argv[1], $argv[2]];
require $dir . '/autoload.php';

function connect(int $port): Redis
{
    $r = new Redis();
    $r->connect('127.0.0.1', $port, 5.0);
    return $r;
}

function nowUs(): float
{
    return hrtime(true) / 1000;
}

function median(array $xs): float
{
    sort($xs);
    return (float) $xs[intdiv(count($xs), 2)];
}

function pauseUs(int $i): int
{
    return 2000 + ($i * 7 % 10) * 1000;
}

/** The holder is a process of its own, the waiter this one. */
function handoffs(int $port, int $rounds): array
{
    $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === 0) {
        $lock = new Lock(connect($port), 'bench-handoff', 30000);
        for ($i = 0; $i < $rounds; $i++) {
            $lease = $lock->tryAcquire();
            fwrite($pair[1], "held\n");
            fgets($pair[1]); // the waiter is about to wait
            usleep(20000 + ($i * 7 % 10) * 1000);
            $t = nowUs();
            $lock->release($lease->token);
            fwrite($pair[1], "$t\n");
            fgets($pair[1]); // the waiter has it and gave it back
        }
        posix_kill(getmypid(), SIGKILL);
    }
    $lock = new Lock(connect($port), 'bench-handoff', 30000);
    $waits = [];
    for ($i = 0; $i < $rounds; $i++) {
        fgets($pair[0]);
        fwrite($pair[0], "waiting\n");
        $lease = $lock->acquire(10000);
        $done = nowUs();
        $waits[] = $done - (float) trim((string) fgets($pair[0]));
        $lock->release($lease->token);
        fwrite($pair[0], "next\n");
    }
    pcntl_waitpid($pid, $status);
    return $waits;
}

function pairs(Redis $r, int $n): array
{
    $lock = new Lock($r, 'bench-pairs', 30000);
    $cad = $r->script('load', "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");
    $oursPairs = function (int $k) use ($lock): void {
        for ($i = 0; $i < $k; $i++) {
            $lease = $lock->tryAcquire();
            $lock->release($lease->token);
        }
    };
    $rawPairs = function (int $k) use ($r, $cad): void {
        for ($i = 0; $i < $k; $i++) {
            $token = bin2hex(random_bytes(16));
            $r->set('bench-raw', $token, ['nx', 'px' => 30000]) or throw new RuntimeException('SET NX');
            $r->evalSha($cad, ['bench-raw', $token], 1) === 1 or throw new RuntimeException('CAD');
        }
    };
    $timed = function (callable $f) use ($n): float {
        $t = hrtime(true);
        $f($n);
        return $n / ((hrtime(true) - $t) / 1e9);
    };
    $oursPairs(intdiv($n, 10));
    $rawPairs(intdiv($n, 10));
    [$ours, $raw] = [[], []];
    for ($round = 0; $round < 5; $round++) {
        if ($round % 2 === 0) {
            $ours[] = $timed($oursPairs);
            $raw[] = $timed($rawPairs);
        } else {
            $raw[] = $timed($rawPairs);
            $ours[] = $timed($oursPairs);
        }
    }
    return [$ours, $raw];
}

function figures(int $port, int $rounds, int $n): void
{
    $r = connect($port);
    $pings = [];
    for ($i = 0; $i < 2000; $i++) {
        $t = nowUs();
        $r->ping();
        $pings[] = nowUs() - $t;
    }
    $idle = [];
    for ($i = 0; $i < $rounds; $i++) {
        usleep(pauseUs($i));
        $t = nowUs();
        $r->ping();
        $idle[] = nowUs() - $t;
    }
    $waits = handoffs($port, $rounds);
    [$ours, $raw] = pairs($r, $n);
    echo json_encode([
        'ping_us' => median($pings),
        'idle_ping_us' => median($idle),
        'handoffs_us' => $waits,
        'ours_pairs_s' => $ours,
        'raw_pairs_s' => $raw,
    ]), "\n";
}

function fanout(array $urls, bool $cluster): void
{
    $nodes = array_map(fn (string $u) => parse_url($u)['host'] . ':' . parse_url($u)['port'], $urls);
    if ($cluster) {
        $r = new RedisCluster(null, $nodes, 5.0, 5.0);
    } else {
        $r = new Redis();
        $r->connect(parse_url($urls[0])['host'], parse_url($urls[0])['port'], 5.0);
    }
    $h = new ShardedHash($r, 'bench-fan', 2048);
    $h->len();
    echo "ready\n";
    fgets(STDIN);
    echo json_encode(['len' => $h->len()]), "\n";
}

if ($mode === 'figures') {
    figures((int) $argv[3], (int) $argv[4], (int) $argv[5]);
} else {
    $rest = array_slice($argv, 3);
    fanout(array_values(array_filter($rest, fn ($a) => !str_starts_with($a, '--'))), in_array('--cluster', $rest, true));
}
