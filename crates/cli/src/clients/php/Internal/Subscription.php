<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/**
 * A subscription to one shard channel (SSUBSCRIBE on a connection of its
 * own, to the node of the channel's slot, following MOVED), for the notified
 * waiting of the lock, the semaphore and the read-write lock. As the Rust
 * API's subscriber does, the connection outlives the wait: close() drops the
 * channel with SUNSUBSCRIBE written without waiting for its reply and hands
 * the connection back to the runner, whose next subscription on that node
 * reads the confirmation (and any message sent before it) past, so ending a
 * wait costs no round trip and the next one no connect.
 */
final class Subscription
{
    /** @param ?\Closure(Wire): void $idle takes the connection back at close() */
    private bool $closed = false;

    private function __construct(private Wire $wire, public readonly string $channel, private ?\Closure $idle)
    {
    }

    /**
     * Subscribed to `$channel` (as sent: with the client's prefix) once the
     * server confirmed it: on `$reuse` (a connection an earlier subscription
     * left, unsubscribed) when it still answers, else on a new connection.
     *
     * @param ?\Closure(Wire): void $idle
     */
    public static function open(Endpoint $at, string $channel, ?Wire $reuse = null, ?\Closure $idle = null): self
    {
        if ($reuse !== null) {
            try {
                $reply = self::subscribed($reuse, $channel);
                if (is_array($reply)) {
                    return new self($reuse, $channel, $idle);
                }
            } catch (\RedisException) {
                // lost while idle: a new connection below
            }
            $reuse->close();
        }
        for ($hops = 0; ; $hops++) {
            $wire = Wire::open($at);
            $reply = self::subscribed($wire, $channel);
            if ($reply instanceof WireError && preg_match('/^(MOVED|ASK) \d+ (\S+)/', $reply->message, $m) === 1 && $hops < 3) {
                $wire->close();
                $at = $at->moved($m[2]);
                continue;
            }
            if (!is_array($reply)) {
                $wire->close();
                $what = $reply instanceof WireError ? $reply->message : json_encode($reply);
                throw new \RedisException("SSUBSCRIBE $channel was refused: $what");
            }
            return new self($wire, $channel, $idle);
        }
    }

    /**
     * Sends SSUBSCRIBE and reads up to its confirmation (an array), past what
     * an earlier subscription left unread; an error reply, or what else came
     * instead (TIMEOUT when nothing did).
     */
    private static function subscribed(Wire $wire, string $channel): mixed
    {
        $wire->send(['SSUBSCRIBE', $channel]);
        while (true) {
            $reply = $wire->read($wire->endpoint->timeout);
            if (!is_array($reply) || (($reply[0] ?? null) === 'ssubscribe' && ($reply[1] ?? null) === $channel)) {
                return $reply;
            }
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

    /**
     * Drops the channel (SUNSUBSCRIBE, its reply left to the next
     * subscription) and hands the connection back; once: a second close()
     * leaves alone the connection another subscription may hold by then.
     */
    public function close(): void
    {
        if ($this->closed) {
            return;
        }
        $this->closed = true;
        if ($this->idle === null) {
            $this->wire->close();
            return;
        }
        try {
            $this->wire->send(['SUNSUBSCRIBE', $this->channel]);
        } catch (\RedisException) {
            $this->wire->close();
            return;
        }
        ($this->idle)($this->wire);
    }
}
