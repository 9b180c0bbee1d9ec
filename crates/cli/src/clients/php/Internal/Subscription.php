<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/**
 * A subscription to one shard channel (SSUBSCRIBE on a connection of its
 * own, to the node of the channel's slot, following MOVED), for the notified
 * waiting of the lock, the semaphore and the read-write lock.
 */
final class Subscription
{
    private function __construct(private Wire $wire, public readonly string $channel)
    {
    }

    /** Subscribed to `$channel` (as sent: with the client's prefix) once the server confirmed it. */
    public static function open(Endpoint $at, string $channel): self
    {
        for ($hops = 0; ; $hops++) {
            $wire = Wire::open($at);
            $reply = $wire->command(['SSUBSCRIBE', $channel]);
            if ($reply instanceof WireError && preg_match('/^(MOVED|ASK) \d+ (\S+)/', $reply->message, $m) === 1 && $hops < 3) {
                $wire->close();
                $at = $at->moved($m[2]);
                continue;
            }
            if (!is_array($reply) || ($reply[0] ?? null) !== 'ssubscribe') {
                $wire->close();
                $what = $reply instanceof WireError ? $reply->message : json_encode($reply);
                throw new \RedisException("SSUBSCRIBE $channel was refused: $what");
            }
            return new self($wire, $channel);
        }
    }

    /** The payload of the next message on the channel, or null when none came within `$ms` milliseconds. */
    public function wait(float $ms): ?string
    {
        $deadline = microtime(true) + max($ms, 0.0) / 1000;
        while (true) {
            $msg = $this->wire->read(max($deadline - microtime(true), 0.0));
            if ($msg === Wire::TIMEOUT) {
                return null;
            }
            if (is_array($msg) && ($msg[0] ?? null) === 'smessage' && ($msg[1] ?? null) === $this->channel) {
                return (string) ($msg[2] ?? '');
            }
        }
    }

    public function close(): void
    {
        $this->wire->close();
    }
}
