<?php
// The PHP client's part of `cargo bench --bench clients` (phpredis), run by
// crates/cli/benches/clients.rs against the servers it started on loopback:
//
//   php bench.php DIR figures PORT ROUNDS PAIRS
//   php bench.php DIR fanout URL [URL...] [--cluster]
//
// figures prints one JSON line: the hot PING round trip (median of 2,000),
// one PING after an idle pause as long as a handoff's hold, 20 to 29 ms
// (median of ROUNDS: the server and this process idle as before a release),
// ROUNDS lock
// handoffs (a holder process releases; this process, blocked in acquire:
// notified waiting, returns: microseconds from just before the release is
// sent; hrtime is CLOCK_MONOTONIC, shared by both processes), ROUNDS
// handoffs of the floor (the same two processes without the client: the
// holder's raw phpredis EVALSHA of the shipped lock/release, whose SPUBLISH
// wakes this process blocked in stream_select on a bare socket's SSUBSCRIBE
// (phpredis 5 has no SSUBSCRIBE; the client waits on such a socket too),
// then its raw phpredis EVALSHA of lock/acquire; the waiter's refused
// attempt before puts it in the queue, as a client's does), and 5 rounds of PAIRS
// acquire + release pairs/s (tryAcquire + release), of phpredis's raw SET
// NX PX + EVALSHA compare-and-delete and of raw EVALSHAs of the same two
// shipped lock scripts the client sends, interleaved (the order turns each
// round) after a warm-up of each.
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

/** The idle pause before the i-th idle PING: the i-th handoff's hold, 20 to 29 ms. */
function pauseUs(int $i): int
{
    return 20000 + ($i * 7 % 10) * 1000;
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

/** The shipped lock scripts sent by phpredis alone (EVALSHA), on the client's keys. */
final class RawLock
{
    public readonly string $channel;
    private array $acquireKeys;
    private array $releaseKeys;
    private string $acquireSha;
    private string $releaseSha;

    public function __construct(private Redis $r, string $dir, string $name)
    {
        $keys = new Lock($r, $name, 30000);
        $this->channel = $keys->channel;
        $this->acquireKeys = [$keys->key, $keys->fenceKey, $keys->queueKey, $keys->placesKey];
        $this->releaseKeys = [$keys->key, $keys->queueKey, $keys->placesKey];
        $this->acquireSha = $r->script('load', file_get_contents("$dir/lua/lock/acquire.lua"));
        $this->releaseSha = $r->script('load', file_get_contents("$dir/lua/lock/release.lua"));
    }

    /** lock/acquire: the fence (> 0), or a refusal (<= 0; with a place the token waits in the queue). */
    public function attempt(string $token, int $placeMs = 0): int
    {
        return (int) $this->r->rawCommand('EVALSHA', $this->acquireSha, 4, ...$this->acquireKeys, ...[$token, 30000, $placeMs, 0]);
    }

    public function acquire(string $token, int $placeMs = 0): void
    {
        $fence = $this->attempt($token, $placeMs);
        $fence > 0 or throw new RuntimeException("acquire: $fence");
    }

    public function release(string $token): void
    {
        $this->r->rawCommand('EVALSHA', $this->releaseSha, 3, ...$this->releaseKeys, ...[$token, $this->channel]) === 1
            or throw new RuntimeException('release');
    }
}

/** Reads from a bare socket until `$what` came (a RESP reply is small: no framing needed here). */
function readUntil($sock, string $what): void
{
    $buf = '';
    while (!str_contains($buf, $what)) {
        $r = [$sock];
        $w = $e = null;
        stream_select($r, $w, $e, 10) === 1 or throw new RuntimeException("no $what within 10 s");
        $buf .= fread($sock, 65536);
    }
}

/** The handoff without the client: the same exchange on raw connections. */
function floorHandoffs(string $dir, int $port, int $rounds): array
{
    $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === 0) {
        $lock = new RawLock(connect($port), $dir, 'bench-floor');
        for ($i = 0; $i < $rounds; $i++) {
            $token = bin2hex(random_bytes(16));
            $lock->acquire($token);
            fwrite($pair[1], "held\n");
            fgets($pair[1]); // the waiter is about to wait
            usleep(20000 + ($i * 7 % 10) * 1000);
            $t = nowUs();
            $lock->release($token);
            fwrite($pair[1], "$t\n");
            fgets($pair[1]); // the waiter has it and gave it back
        }
        posix_kill(getmypid(), SIGKILL);
    }
    $lock = new RawLock(connect($port), $dir, 'bench-floor');
    $sock = stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 5.0);
    $ch = $lock->channel;
    fwrite($sock, "*2\r\n\$10\r\nSSUBSCRIBE\r\n\$" . strlen($ch) . "\r\n$ch\r\n");
    readUntil($sock, 'ssubscribe');
    $waits = [];
    for ($i = 0; $i < $rounds; $i++) {
        fgets($pair[0]);
        $token = bin2hex(random_bytes(16));
        // refused: the token waits in the queue (a third of the lease), as a waiter's does
        $lock->attempt($token, 10000) <= 0 or throw new RuntimeException('the floor waiter got a held lock');
        fwrite($pair[0], "waiting\n");
        readUntil($sock, 'smessage');
        $lock->acquire($token, 10000);
        $done = nowUs();
        $waits[] = $done - (float) trim((string) fgets($pair[0]));
        $lock->release($token);
        readUntil($sock, 'smessage'); // its own release's message
        fwrite($pair[0], "next\n");
    }
    pcntl_waitpid($pid, $status);
    fclose($sock);
    return $waits;
}

/** This process's CPU time (user + system) in microseconds. */
function cpuUs(): float
{
    $u = getrusage();
    return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1e6 + $u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec'];
}

function pairs(Redis $r, string $dir, int $n): array
{
    $lock = new Lock($r, 'bench-pairs', 30000);
    $scripts = new RawLock($r, $dir, 'bench-scripts');
    $cad = $r->script('load', "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0");
    $kinds = [
        'ours' => function (int $k) use ($lock): void {
            for ($i = 0; $i < $k; $i++) {
                $lease = $lock->tryAcquire();
                $lock->release($lease->token);
            }
        },
        'raw' => function (int $k) use ($r, $cad): void {
            for ($i = 0; $i < $k; $i++) {
                $token = bin2hex(random_bytes(16));
                $r->set('bench-raw', $token, ['nx', 'px' => 30000]) or throw new RuntimeException('SET NX');
                $r->evalSha($cad, ['bench-raw', $token], 1) === 1 or throw new RuntimeException('CAD');
            }
        },
        'scripts' => function (int $k) use ($scripts): void {
            for ($i = 0; $i < $k; $i++) {
                $token = bin2hex(random_bytes(16));
                $scripts->acquire($token);
                $scripts->release($token);
            }
        },
    ];
    $timed = function (callable $f) use ($n): array {
        [$c, $t] = [cpuUs(), hrtime(true)];
        $f($n);
        return [$n / ((hrtime(true) - $t) / 1e9), (cpuUs() - $c) / $n];
    };
    $names = array_keys($kinds);
    $got = [];
    foreach ($names as $name) {
        $kinds[$name](intdiv($n, 10));
        $got[$name] = $got["{$name}_cpu"] = [];
    }
    for ($round = 0; $round < 5; $round++) {
        $turn = $round % 3;
        foreach ([...array_slice($names, $turn), ...array_slice($names, 0, $turn)] as $name) {
            [$got[$name][], $got["{$name}_cpu"][]] = $timed($kinds[$name]);
        }
    }
    return $got;
}

function figures(string $dir, int $port, int $rounds, int $n): void
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
    $floor = floorHandoffs($dir, $port, $rounds);
    $got = pairs($r, $dir, $n);
    echo json_encode([
        'ping_us' => median($pings),
        'idle_ping_us' => median($idle),
        'handoffs_us' => $waits,
        'ours_pairs_s' => $got['ours'],
        'raw_pairs_s' => $got['raw'],
        'floor_handoffs_us' => $floor,
        'script_pairs_s' => $got['scripts'],
        'ours_cpu_us' => $got['ours_cpu'],
        'script_cpu_us' => $got['scripts_cpu'],
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
    figures($dir, (int) $argv[3], (int) $argv[4], (int) $argv[5]);
} else {
    $rest = array_slice($argv, 3);
    fanout(array_values(array_filter($rest, fn ($a) => !str_starts_with($a, '--'))), in_array('--cluster', $rest, true));
}
