<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/**
 * A subscription to one shard channel (SSUBSCRIBE on a connection of its
 * own, to the node of the channel's slot, following MOVED), for the notified
 * waiting of the lock, the semaphore and the read-write lock. The
 * connection outlives the wait, still subscribed (as the Python client's
 * does): close() hands it back to the runner without a write, and the next
 * subscription on that node takes it over: on the same channel without a
 * round trip, reading past the messages that came meanwhile (sent before
 * its next attempt, which sees what they announced); on another channel
 * after SUNSUBSCRIBE of the old one and SSUBSCRIBE of the new. So ending a
 * wait costs no syscall (a woken waiter's acquire returns at once) and the
 * next wait on the same resource no round trip before its attempt.
 */
final class Subscription
{
    /** @param ?\Closure(Wire, string): void $idle takes the connection back at close(), subscribed to the channel */
    private bool $closed = false;

    private function __construct(private Wire $wire, public readonly string $channel, private ?\Closure $idle)
    {
    }

    /**
     * Subscribed to `$channel` (as sent: with the client's prefix) once the
     * server confirmed it: on `$reuse` (a connection an earlier subscription
     * left, still subscribed to `$reusedOn`) when it still answers, else on a
     * new connection.
     *
     * @param ?\Closure(Wire, string): void $idle
     */
    public static function open(Endpoint $at, string $channel, ?Wire $reuse = null, ?string $reusedOn = null, ?\Closure $idle = null): self
    {
        if ($reuse !== null) {
            try {
                if ($reusedOn === $channel) {
                    // What came while it was idle was sent before this wait's attempt, which sees
                    // what it announced; a SUNSUBSCRIBE the server sent (the slot moved) ends the reuse.
                    $dropped = false;
                    foreach ($reuse->drain() as $reply) {
                        $dropped = $dropped || (is_array($reply) && ($reply[0] ?? null) === 'sunsubscribe');
                    }
                    if (!$dropped) {
                        return new self($reuse, $channel, $idle);
                    }
                    $reusedOn = null;
                }
                if ($reusedOn !== null) {
                    $reuse->send(['SUNSUBSCRIBE', $reusedOn]); // its reply is read past below
                }
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
     * Hands the connection back, still subscribed to the channel (see the
     * class); once: a second close() leaves alone the connection another
     * subscription may hold by then.
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
        ($this->idle)($this->wire, $this->channel);
    }
}
