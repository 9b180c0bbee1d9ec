<?php
// What the conformance cases do not reach in the PHP client, on a server or a
// cluster the Rust test started; prints one JSON object for the Rust side.
//
//   php php_client.php CLIENT_DIR fanout|prefix|hold URL [URL...] [--cluster]
//
// fanout: ShardedHash::len over 2,048 shards (the Rust side counts the
//   server's read events and HLEN calls around it).
// prefix: a client with phpredis's OPT_PREFIX 'app:' runs a lock, a sharded
//   hash (setMany with numeric-string fields), visits, a login log with its
//   reindex (SCAN) and a waiting acquire; prints what it got.
// hold: synchronized() around a body blocked in sleep() longer than the
//   lease, and the 'calls' renewal mode.

declare(strict_types=1);

use RedisPatterns\{Lock, LoginLog, ShardedHash, VisitCounter};

[$dir, $mode] = [$argv[1], $argv[2]];
require $dir . '/autoload.php';
$cluster = in_array('--cluster', $argv, true);
$urls = array_values(array_filter(array_slice($argv, 3), fn ($a) => !str_starts_with($a, '--')));
$nodes = array_map(function ($u) {
    $p = parse_url($u);
    return "{$p['host']}:{$p['port']}";
}, $urls);

function client(bool $cluster, array $nodes): Redis|RedisCluster
{
    if ($cluster) {
        return new RedisCluster(null, $nodes, 5.0, 5.0);
    }
    [$host, $port] = explode(':', $nodes[0]);
    $r = new Redis();
    $r->connect($host, (int) $port, 5.0);
    return $r;
}

$r = client($cluster, $nodes);
if ($mode === 'fanout') {
    $h = new ShardedHash($r, 'fan', 2048);
    echo json_encode(['len' => $h->len()]), "\n";
    exit(0);
}

if ($mode === 'hold') {
    // A body that blocks in one C call (sleep) for 2.5 leases: the renewer
    // process keeps the lease alive; then the same in 'calls' mode, where
    // only keepAlive() renews.
    $lock = new Lock($r, 'long', 1200);
    $seen = [];
    $started = microtime(true);
    $got = $lock->synchronized(function (RedisPatterns\Holding $h) use ($r, &$seen): string {
        sleep(3);
        $seen['pttl_after_sleep'] = $r->rawCommand('PTTL', 'redis:lock:{long}');
        $seen['lost'] = $h->lost();
        return 'done';
    }, 1000);
    $seen['result'] = $got;
    $seen['body_ms'] = (int) ((microtime(true) - $started) * 1000);
    $seen['held_after'] = $r->rawCommand('EXISTS', 'redis:lock:{long}');
    RedisPatterns\Holding::$renewal = 'calls';
    $seen['calls'] = $lock->synchronized(function (RedisPatterns\Holding $h) use ($r): int {
        for ($i = 0; $i < 10; $i++) {
            usleep(300000);
            $h->keepAlive();
        }
        return (int) $r->rawCommand('PTTL', 'redis:lock:{long}');
    }, 1000);
    try {
        $lock->synchronized(fn () => usleep(2000000), 1000);
        $seen['calls_unrenewed'] = 'no error';
    } catch (RedisPatterns\Errors\LockLost $e) {
        $seen['calls_unrenewed'] = 'LockLost';
    }
    // What a synchronized() costs with the renewer process (forked at the first hold).
    RedisPatterns\Holding::$renewal = 'auto';
    $t = hrtime(true);
    for ($i = 0; $i < 50; $i++) {
        $lock->synchronized(fn () => null, 1000);
    }
    $seen['us_per_hold'] = (int) ((hrtime(true) - $t) / 50 / 1000);
    echo json_encode($seen), "\n";
    exit(0);
}

$r->setOption(Redis::OPT_PREFIX, 'app:');
$out = [];
$lock = new Lock($r, 'job', 20000);
$lease = $lock->tryAcquireAs('holder');
$out['key'] = $lock->key;
$out['fence_positive'] = $lease->fence > 0;
$out['owned'] = $lock->owned('holder') !== null;
// A waiter in a process of its own is woken by the release (the wake channel carries the prefix too).
$pid = pcntl_fork();
if ($pid === 0) {
    usleep(300000);
    $own = client($cluster, $nodes);
    $own->setOption(Redis::OPT_PREFIX, 'app:');
    (new Lock($own, 'job', 20000))->release('holder');
    posix_kill(getmypid(), SIGKILL);
}
$started = microtime(true);
$next = $lock->acquire(10000);
$out['woken_ms'] = (int) ((microtime(true) - $started) * 1000);
pcntl_waitpid($pid, $status);
$out['released'] = $lock->release($next->token);

$h = new ShardedHash($r, 'users', 16);
$out['set_many'] = $h->setMany(['dave' => '4', '123' => 'numeric', 'bob' => '2']);
$out['get_many'] = $h->getMany(['dave', '123', 'bob', 'nobody']);
$out['len'] = $h->len();

$v = new VisitCounter($r, 'site', 4);
$out['visits'] = $v->addBatch(gmdate('Y-m-d'), [1, 2, 3])->count;

$log = new LoginLog($r);
$log->record('client', 7, '2017-10-30');
$out['reindex_logs'] = $log->reindex(2017, 10)->logs;
$out['active'] = $log->activeUsers('client', '2017-10-01', '2017-10-31');
echo json_encode($out), "\n";
