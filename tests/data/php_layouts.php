<?php
// The PHP recipes' own code, writing their own key layouts, for
// tests/php_layouts.rs: the functions and commands below are copied from
// the source documents the project grew from (the sharded-hash `shardKey`,
// the login-log `SETBIT loginLog_<Y-m>_<type>_<uid> <day> 1`, the daily
// sign-in `setbit <date> <uid> 1` and the `BloomFilter::JSHash` bitmap
// `bloom_user_email`), with one fix, marked below.
//
//   php tests/data/php_layouts.php <port> write   # writes, prints JSON of what it wrote
//   php tests/data/php_layouts.php <port> read    # reads what the Rust side wrote, prints JSON
//
// Only 127.0.0.1 is used. Needs phpredis (php-redis) and a 64-bit PHP.
error_reporting(E_ALL & ~E_DEPRECATED);

// ---- 000: the sharded hash's shard key (ShardSet::shardKey). ----
// Fix: the original reads an undefined `$shards` (PHP 8 then throws
// DivisionByZeroError "Modulo by zero"); the parameter it means is `$total`.
function shardKey($base, $member, $total = 512)
{
    $shard_id = crc32($member) % $total; #求余取模
    return $base.'_'.$shard_id;
}

// ---- 001: the login log, key 前缀_年Y-月m_用户类型_用户ID, one bit per day. ----
// 设置用户1001，217-10-25登录：SETBIT loginLog_2017-10_client_1001 25 1
function loginLogSet($redis, $type, $uid, $date)
{
    $ts = strtotime($date);
    return $redis->setBit('loginLog_'.date('Y-m', $ts).'_'.$type.'_'.$uid, (int)date('j', $ts), 1);
}

// ---- 003: the Bloom filter on a bitmap (BloomFilter::JSHash, verbatim in shared.php). ----
require __DIR__ . '/shared.php';

if (PHP_INT_SIZE !== 8 || $argc < 3) {
    fwrite(STDERR, "usage (64-bit PHP): php php_layouts.php <port> write|read\n");
    exit(2);
}
$redis = new Redis();
$redis->connect('127.0.0.1', (int)$argv[1]);
$shards = 16;

if ($argv[2] === 'write') {
    $logins = [
        ['client', 1001, '2017-10-25'],
        ['client', 1001, '2017-10-26'],
        ['client', 1002, '2017-10-01'],
        ['client', 1002, '2017-10-31'],
        ['office', 7, '2017-10-09'],
        ['client', 1001, '2017-09-30'],
    ];
    foreach ($logins as [$type, $uid, $date]) {
        loginLogSet($redis, $type, $uid, $date);
    }
    // setbit  20220320  100 1 ... (the recipe's own example)
    $redis->setBit('20220320', 100, 1);
    $redis->setBit('20220320', 200, 1);
    $redis->setBit('20220321', 100, 1);
    $redis->setBit('20220321', 300, 1);
    // The sharded hash: hSet on shardKey(base, field) for each field.
    $fields = [];
    for ($i = 0; $i < 200; $i++) {
        $field = "user:$i";
        $fields[$field] = "value-$i";
        $redis->hSet(shardKey('seeduser', $field, $shards), $field, $fields[$field]);
    }
    // loadDb2bloomAction: $redis->setbit($key1, BloomFilter::JSHash($email), 1)
    $emails = ['alice@example.com', 'bob@example.org', 'carol.smith+tag@mail.example.co.uk'];
    foreach ($emails as $email) {
        $redis->setBit('bloom_user_email', BloomFilter::JSHash($email), 1);
    }
    echo json_encode([
        'logins' => $logins,
        'signins' => [['20220320', 100], ['20220320', 200], ['20220321', 100], ['20220321', 300]],
        'hash' => ['base' => 'seeduser', 'shards' => $shards, 'fields' => $fields],
        'emails' => $emails,
        'keys' => $redis->keys('*'),
    ]), "\n";
} elseif ($argv[2] === 'read') {
    // What the Rust side wrote, read the way the PHP code reads it.
    $field = 'written-by-rust';
    echo json_encode([
        'hash' => $redis->hGet(shardKey('seeduser', $field, $shards), $field),
        'login' => $redis->getBit('loginLog_2017-10_client_2000', 5),
        'signin' => $redis->getBit('20220322', 400),
        'bloom' => $redis->getBit('bloom_user_email', BloomFilter::JSHash('dave@example.net')),
    ]), "\n";
} else {
    fwrite(STDERR, "unknown mode {$argv[2]}\n");
    exit(2);
}
