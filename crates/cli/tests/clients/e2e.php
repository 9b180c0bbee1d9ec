<?php
// Drives every pattern through the generated PHP client on the server the Rust
// test started, reading what the Rust side wrote first and writing what the
// Rust side checks after. Prints a JSON object for the Rust side.
// Usage: php e2e.php AUTOLOAD PORT RUST_LOCK_TOKEN
require $argv[1];

use RedisPatterns\{Bloom, Call, JsHashBloom, Lock, LoginLog, Packed, Rolling, Runtime, ShardedHash, SignIn, Visits};
use RedisPatterns\Errors\{BloomConfigMismatch, InvalidArgument, ListpackValueTooLong, LockBusy, LockTimeout, Overflow, RollingLayout, ShardFull, UidOutOfRange};

function check(bool $ok, string $what): void
{
    if (!$ok) {
        fwrite(STDERR, "FAILED: $what\n");
        exit(1);
    }
}

function refused(callable $f, string $class, string $what): void
{
    try {
        $f();
    } catch (\Throwable $e) {
        check($e instanceof $class, "$what: " . get_class($e) . ' ' . $e->getMessage());
        return;
    }
    check(false, "$what: nothing thrown");
}

[$port, $rustToken] = [(int) $argv[2], $argv[3]];
$r = new Redis();
$r->connect('127.0.0.1', $port);
$r->script('flush'); // every first call goes NOSCRIPT -> SCRIPT LOAD -> retry
[$day, $next] = ['2024-02-29', '2024-03-01'];
$out = [];

// lock: the Rust side holds rs-lock.
$rs = new Lock($r, 'rs-lock', 60000);
refused(fn() => $rs->tryAcquire(), LockBusy::class, 'acquire a held lock');
check($rs->release('not-the-owner') === false && $rs->extend('not-the-owner', 1000) === false, 'non-owner refused');
check($rs->owned($rustToken) > 0, 'the Rust token owns rs-lock');
refused(fn() => $rs->acquire(100), LockTimeout::class, 'blocking acquire times out');
$mine = new Lock($r, 'php-lock', 60000);
$lease = $mine->tryAcquire();
check(is_int($lease['fence']) && $lease['fence'] > 0 && strlen($lease['token']) === 32, 'lease');
check($mine->extend($lease['token'], 120000) && $mine->owned($lease['token']) > 60000, 'extend');
$out['php_lock_token'] = $lease['token'];
refused(fn() => new Lock($r, 'x', 0), InvalidArgument::class, 'lease 0');

// visits: Rust counted 1..50.
$v = new Visits($r, 'site', 8, graceS: null, lateS: null);
check($v->count($day) === 50 && $v->contains($day, 7) && !$v->contains($day, 77), 'visits read');
check($v->add($day, 50) === ['new' => false, 'count' => 50], 'repeat visit');
$b = $v->addBatch($day, array_merge(range(40, 90), [90]));
check($b['count'] === 90 && $b['new'] === array_merge(array_fill(0, 11, false), array_fill(0, 40, true), [false]), 'batch');

// signin: Rust signed 100 and 200 in on 2024-03-01 (tag app).
$s = new SignIn($r, tag: 'app');
check($s->activeAny($next, $next) === [100, 200], 'signin read');
check($s->signIn(300, $next) && !$s->signIn(300, $next), 'sign in');
check($s->countAny($day, $next) === 3 && $s->activeEvery($day, $next) === [], 'ranges');
refused(fn() => $s->signIn($s->maxUid + 1, $next), UidOutOfRange::class, 'uid above max');

// login_log: Rust recorded client 1001 on 2024-02-29.
$lg = new LoginLog($r);
check($lg->loginDays('client', 1001, '2024-02-01', $next) === [$day], 'login days');
check($lg->loggedInOn('client', 1001, $day) && $lg->daysInMonth('client', 1001, '2024-02') === 1, 'log reads');
check($lg->record('client', 1002, $next) && !$lg->record('client', 1002, $next) && $lg->record('vip', 7, $next), 'record');
check($lg->activeUsers('client', $day, $next) === [1001, 1002], 'active users');
check($lg->allActiveUsers($day, $next) === [['client', 1001], ['client', 1002], ['vip', 7]], 'all active users');

// rolling: Rust added tx0..tx29 to m:rs.
$st = new Rolling($r, 25, 10, 600000);
check(array_column($st->recent('m:rs', 3), 0) === ['tx29', 'tx28', 'tx27'] && $st->get('m:rs', 'tx29') === ['n' => 29], 'rolling read');
for ($i = 30; $i < 40; $i++) {
    $st->add('m:rs', "tx$i", ['n' => $i]);
}
for ($i = 0; $i < 100; $i++) {
    $st->add('m:php', "tx$i", ['n' => $i]);
}
check($st->len('m:php') >= 25 && $st->len('m:php') <= $st->capacity(), 'bounded');
check($st->recent('m:php', 1) === [['tx99', ['n' => 99]]] && $st->get('m:php', 'tx0') === null, 'rolling newest');
refused(fn() => (new Rolling($r, 50, 10, 600000))->add('m:php', 'x', 1), RollingLayout::class, 'another layout');

// bloom, sized: Rust created rs-bloom and rs-spread with r0..r99.
$rItems = array_map(fn($i) => "r$i", range(0, 99));
foreach (['rs-bloom', 'rs-spread'] as $name) {
    $bf = Bloom::open($r, $name);
    check(!in_array(false, $bf->multiExists($rItems), true), "$name holds the Rust items");
    check(count(array_filter($bf->multiAdd(array_map(fn($i) => "p$i", range(0, 99))))) >= 95, "$name add");
}
refused(fn() => Bloom::create($r, 'rs-bloom', 1000, 0.05), BloomConfigMismatch::class, 'other parameters');
$qItems = array_map(fn($i) => "q$i", range(0, 99));
foreach (['php-bloom' => false, 'php-spread' => true] as $name => $spread) {
    $bf = Bloom::create($r, $name, 5000, 0.001, $spread);
    check(count(array_filter($bf->multiAdd($qItems))) >= 95 && !in_array(false, $bf->multiExists($qItems), true), "$name");
    check(Bloom::create($r, $name, 5000, 0.001, $spread)->blockBits === $bf->blockBits, "$name opens");
}

// bloom, JSHash: Rust added rust@example.com.
$js = new JsHashBloom($r, 'bloom_user_email');
check($js->exists('rust@example.com') && $js->add('php@example.com'), 'jshash');

// sharded_hash: Rust set alice=1.
$h = new ShardedHash($r, 'users', 16);
check($h->get('alice') === '1' && $h->set('bob', '2') && $h->incr('n', 5) === 5, 'sharded hash');
check($h->setMany([['c', '3'], ['d', '4'], ['bob', '2']]) === 2 && $h->len() === 5, 'set many');
// With a request id an increment applies once, however often it is sent.
check($h->incrOnce('once', 2, 'php-req-1') === 2 && $h->incrOnce('once', 2, 'php-req-1') === 2, 'incr once');
refused(fn() => $h->set('long', str_repeat('x', 65)), ListpackValueTooLong::class, 'long value');
$u = new ShardedHash($r, 'underscored', 16, separator: '_');
check($u->get('alice') === '1' && str_starts_with($u->shardKey('alice'), 'underscored_') && $u->set('bob', '2'), 'the _ separator');
$tiny = new ShardedHash($r, 'tiny', 1, maxEntries: 2);
$tiny->setMany([['a', '1'], ['b', '2']]);
refused(fn() => $tiny->set('c', '3'), ShardFull::class, 'full shard');

// packed: Rust added 3 to id 123456's u32.
$p = new Packed($r, 'logins', 4, 1000000);
check($p->get(123456) === pack('V', 3) && $p->add(123456, 0, 4, false, 1) === 4, 'packed');
check($p->addOnce(9, 0, 4, false, 3, 'php-req-2') === 3 && $p->addOnce(9, 0, 4, false, 3, 'php-req-2') === 3, 'add once');
$p->set(7, pack('V', 7));
check($p->compareAndSet(7, pack('V', 8), "\0\0\0\0") === [false, pack('V', 7)], 'compare and set');
refused(fn() => $p->add(8, 0, 1, false, 256), Overflow::class, 'overflow');

// A script's own refusal maps to the typed error.
$raw = new Call('lock.acquire', RedisPatterns\Scripts\LockScripts::acquire('l{x}', 'l{x}:f', 't', 1, [])->sha1, 'lock/acquire.lua', false, ['l{x}', 'l{x}:f'], ['t', '0']);
try {
    Runtime::run($r, $raw);
    check(false, 'BADARG not raised');
} catch (InvalidArgument $e) {
    check($e->script === 'lock.acquire' && $e->name === 'lease_ms', 'BADARG mapped');
}
echo json_encode($out), "\n";
