<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;
use RedisPatterns\Errors;

/**
 * One batch on one \Redis as one pipeline (`multi(\Redis::PIPELINE)` ...
 * `exec()`): one round trip. phpredis answers a pipeline's error replies in
 * two ways — the codes ERR, NOSCRIPT, WRONGTYPE, ... as `false` with the last
 * of them in getLastError(), every other code (a script's domain error) as a
 * chain of RedisExceptions thrown by exec() — so a batch with an error reply
 * throws the first one of it (its ops want every reply or the first error).
 * After NOSCRIPT (SCRIPT FLUSH, a restart), when every call from the first
 * NOSCRIPT on failed that way, the scripts are loaded and exactly that tail
 * is sent again; otherwise PipelineInterrupted.
 */
final class Pipeline
{
    /** The reply of a node that answered MOVED or ASK in the chain (a cluster's slot moved). */
    public const MOVED = 'MOVED';

    /**
     * @param list<Call|Cmd> $reqs
     * @return list<mixed> the replies in order (nil as null)
     */
    public static function run(\Redis $r, array $reqs, string $prefix): array
    {
        $done = [];
        $total = count($reqs);
        for ($round = 0; $reqs !== []; $round++) {
            [$replies, $error] = self::send($r, $reqs, $prefix);
            if ($error === null) {
                return [...$done, ...Runner::decode($replies)];
            }
            if (!str_starts_with($error, 'NOSCRIPT') || $round >= 3) {
                throw ErrorMap::ofBatch(self::failed($reqs, $replies), $error);
            }
            $first = null;
            foreach ($reqs as $i => $q) {
                if ($q instanceof Call && $replies[$i] === false) {
                    $first = $i;
                    break;
                }
            }
            for ($i = (int) $first; $i < count($reqs); $i++) {
                if ($first === null || !($reqs[$i] instanceof Call) || $replies[$i] !== false) {
                    throw new Errors\PipelineInterrupted(count($done) + (int) $first, $total);
                }
            }
            $done = [...$done, ...Runner::decode(array_slice($replies, 0, $first))];
            $reqs = array_slice($reqs, $first);
            self::load($r, $reqs);
        }
        return $done;
    }

    /** The requests whose reply was false (a nil or an error), those first. */
    private static function failed(array $reqs, array $replies): array
    {
        $out = [];
        foreach ($reqs as $i => $q) {
            if (($replies[$i] ?? false) === false) {
                $out[] = $q;
            }
        }
        return [...$out, ...$reqs];
    }

    /** SCRIPT LOAD of every script of `$reqs`, checking the SHA1 the server answers. */
    public static function load(\Redis $r, array $reqs): void
    {
        $seen = [];
        foreach ($reqs as $q) {
            if ($q instanceof Call && !isset($seen[$q->sha1])) {
                $seen[$q->sha1] = true;
                Runner::checkLoaded($q, $r->rawCommand('SCRIPT', 'LOAD', $q->source()));
            }
        }
    }

    /**
     * The replies and the last error of the ERR family (null: none); throws
     * the first error reply of any other code.
     *
     * @return array{list<mixed>, ?string}
     */
    private static function send(\Redis $r, array $reqs, string $prefix): array
    {
        $r->clearLastError();
        $r->multi(\Redis::PIPELINE);
        foreach ($reqs as $q) {
            $r->rawCommand(...$q->command($prefix));
        }
        try {
            $replies = $r->exec();
        } catch (\RedisException $e) {
            $messages = [];
            for ($x = $e; $x !== null; $x = $x->getPrevious()) {
                if (!$x instanceof \RedisException || !ErrorMap::isReply($x->getMessage())) {
                    throw $e;
                }
                array_unshift($messages, $x->getMessage());
            }
            $last = $r->getLastError();
            if ($last !== null && str_starts_with($last, 'NOSCRIPT')) {
                self::load($r, $reqs);
            }
            foreach ($messages as $m) {
                if (str_starts_with($m, 'MOVED ') || str_starts_with($m, 'ASK ')) {
                    throw new MovedError($m);
                }
            }
            throw ErrorMap::ofBatch($reqs, $messages[0]);
        }
        if (!is_array($replies) || count($replies) !== count($reqs)) {
            throw new Errors\UnexpectedReply('a pipeline of ' . count($reqs) . ' requests answered ' . (is_array($replies) ? count($replies) : gettype($replies)) . ' replies');
        }
        return [array_values($replies), $r->getLastError()];
    }
}
