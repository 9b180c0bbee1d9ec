<?php
// One of several concurrent writers of one day. Usage: php visits_worker.php AUTOLOAD PORT FIRST COUNT
declare(strict_types=1);

require $argv[1];
[$port, $first, $count] = [(int) $argv[2], (int) $argv[3], (int) $argv[4]];
$r = new Redis();
$r->connect('127.0.0.1', $port);
$v = new RedisPatterns\VisitCounter($r, 'crowd', 16, retentionS: null, lateWindowS: null);
$members = range($first, $first + $count - 1);
foreach (array_slice($members, 0, intdiv($count, 2)) as $m) {
    $v->add('2024-02-29', $m);
}
$v->addBatch('2024-02-29', array_slice($members, intdiv($count, 2)));
