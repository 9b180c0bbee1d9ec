<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Errors\LockLost;
use RedisPatterns\Holding;

/**
 * synchronized(): take the resource (waiting as acquire does), renew its
 * lease every lease/3 while the body runs (Renewer), give it back after, and
 * report a lost lease: LockLost when the body returned and the lease was lost
 * meanwhile (a renewal found it gone or taken, or the release found it no
 * longer held); the body's own exception wins over it.
 */
final class Hold
{
    /**
     * @template T
     * @param callable(Holding): T $body
     * @return T
     */
    public static function run(Runner $run, Holder $holder, callable $body): mixed
    {
        $lease = ($holder->acquire)();
        $fence = ($holder->fence)($lease);
        $renewer = Renewer::start($run, ($holder->extend)($lease), $holder->leaseMs, Holding::$renewal);
        $holding = new Holding($holder->key, $lease->token, $fence, $renewer);
        try {
            $result = $body($holding);
        } catch (\Throwable $e) {
            $lost = $renewer->stop();
            if (!$lost) {
                try {
                    ($holder->release)($lease);
                } catch (\Throwable) {
                    // The body's exception is the one to see; the lease ends by itself.
                }
            }
            throw $e;
        }
        // null: not known (a resend found it released): not a loss.
        $lost = $renewer->stop() || ($holder->release)($lease) === false;
        $holding->ended($lost);
        if ($lost) {
            throw new LockLost($holder->key, $fence ?? 0);
        }
        return $result;
    }
}
