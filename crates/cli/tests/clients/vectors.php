<?php
// The generated PHP client against the golden vectors made by real PHP
// (tests/data/*.tsv) and the Rust crate's sized-filter parameters (a TSV the
// Rust test writes). Usage: php vectors.php AUTOLOAD JSHASH_TSV SIZED_TSV PARAMS_TSV
require $argv[1];

use RedisPatterns\Hashing;

function rows(string $path): array
{
    $out = [];
    foreach (file($path, FILE_IGNORE_NEW_LINES) as $line) {
        if ($line !== '' && $line[0] !== '#') {
            $out[] = explode("\t", $line);
        }
    }
    return $out;
}

function check(bool $ok, string $what): void
{
    if (!$ok) {
        fwrite(STDERR, "FAILED: $what\n");
        exit(1);
    }
}

$jshash = rows($argv[2]);
check(count($jshash) >= 700, 'jshash vectors');
foreach ($jshash as [$hex, $limit, $want]) {
    $got = Hashing::jsHash(hex2bin($hex), $limit === '1');
    check($got === (int) $want, "jshash $hex $limit: $got != $want");
}
$sized = rows($argv[3]);
check(count($sized) >= 60, 'sized vectors');
foreach ($sized as [$hex, $h1, $h2, $hb, $blocks, $k, $block, $offsets]) {
    $item = (string) hex2bin($hex);
    check(Hashing::sizedHashes($item) === [(int) $h1, (int) $h2, (int) $hb], "hashes of $hex");
    [$gotBlock, $got] = Hashing::sizedOffsets($item, array_map('intval', explode(',', $blocks)), (int) $k);
    check($gotBlock === (int) $block && $got === array_map('intval', explode(',', $offsets)), "offsets of $hex");
}
$params = rows($argv[4]);
check(count($params) >= 20, 'params rows');
foreach ($params as [$n, $p, $m, $k, $blocks, $pText]) {
    $got = Hashing::bloomParams((int) $n, (float) $p);
    check($got === [(int) $m, (int) $k, array_map('intval', explode(',', $blocks))], "params $n $p: " . json_encode($got));
    check(Hashing::formatP((float) $p) === $pText, "format_p $p: " . Hashing::formatP((float) $p) . " != $pText");
}
check(Hashing::crc32('123456789') === 3421780262, 'crc32');
echo 'php vectors: ', count($jshash), ' jshash, ', count($sized), ' sized, ', count($params), " params\n";
