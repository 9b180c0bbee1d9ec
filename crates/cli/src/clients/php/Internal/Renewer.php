<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;

/**
 * What renews a held lease every lease/3 while synchronized()'s body runs.
 *
 * PHP runs the body on the only thread, and a signal (pcntl_alarm, whole
 * seconds only) would renew only between the body's PHP statements — never
 * while it waits in a database query, a sleep() or any other blocking call —
 * so the renewal runs in a process of its own: forked before the body
 * starts (pcntl), it sends the extend call every lease/3 on a connection of
 * its own (Wire), and reports through a socket pair when a renewal found the
 * lease gone (or none succeeded for a whole lease). It never touches the
 * parent's connections and ends by SIGKILL, so none of the application's
 * destructors or shutdown functions run in it; it ends when the body ends or
 * the parent dies. Without pcntl (php-fpm) the renewal happens when the body
 * calls Holding::keepAlive() ('calls' mode).
 */
final class Renewer
{
    private bool $lost = false;
    private float $last;

    /** @param resource|null $pipe */
    private function __construct(
        private readonly Runner $run,
        private readonly Call $call,
        private readonly int $leaseMs,
        private readonly ?int $pid,
        private $pipe,
    ) {
        $this->last = microtime(true);
    }

    /** Starts renewing: in a forked process when `$how` allows it and pcntl and posix are there, else on keepAlive(). */
    public static function start(Runner $run, Call $call, int $leaseMs, string $how): self
    {
        $fork = $how !== 'calls' && function_exists('pcntl_fork') && function_exists('posix_kill');
        if (!$fork) {
            if ($how === 'process') {
                throw new \LogicException('renewal in a process of its own needs the pcntl and posix extensions');
            }
            return new self($run, $call, $leaseMs, null, null);
        }
        $at = $run->endpoint($call->routingKey());
        $cmd = $call->command($run->prefix);
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        if ($pair === false) {
            throw new \RuntimeException('cannot make the socket pair of the renewer');
        }
        $pid = pcntl_fork();
        if ($pid === -1) {
            fclose($pair[0]);
            fclose($pair[1]);
            return new self($run, $call, $leaseMs, null, null);
        }
        if ($pid === 0) {
            fclose($pair[0]);
            try {
                self::renew($pair[1], $at, $cmd, $call->source(), $leaseMs);
            } finally {
                posix_kill(getmypid(), SIGKILL);
            }
        }
        fclose($pair[1]);
        return new self($run, $call, $leaseMs, $pid, $pair[0]);
    }

    /** Whether the lease was found lost (so far). */
    public function lost(): bool
    {
        if (!$this->lost && $this->pipe !== null) {
            stream_set_blocking($this->pipe, false);
            $got = (string) fread($this->pipe, 64);
            stream_set_blocking($this->pipe, true);
            $this->lost = str_contains($got, 'lost');
        }
        return $this->lost;
    }

    /** 'calls' mode: renews when lease/3 passed since the last renewal; a process renews by itself. */
    public function keepAlive(): bool
    {
        if ($this->pipe !== null || $this->lost) {
            return !$this->lost();
        }
        if ((microtime(true) - $this->last) * 1000 >= $this->leaseMs / 3) {
            $this->lost = (int) $this->run->one($this->call) !== 1;
            $this->last = microtime(true);
        }
        return !$this->lost;
    }

    /** Stops renewing; whether the lease was lost. */
    public function stop(): bool
    {
        if ($this->pipe === null) {
            return $this->lost;
        }
        @fwrite($this->pipe, "stop\n");
        $rest = (string) stream_get_contents($this->pipe);
        $this->lost = $this->lost || str_contains($rest, 'lost');
        fclose($this->pipe);
        $this->pipe = null;
        if ($this->pid !== null) {
            pcntl_waitpid($this->pid, $status);
        }
        return $this->lost;
    }

    /** The renewer process: extends every lease/3 until told to stop (or the parent is gone). */
    private static function renew($pipe, Endpoint $at, array $cmd, string $source, int $leaseMs): void
    {
        $every = $leaseMs / 3000.0;
        $wire = null;
        $lastOk = microtime(true);
        $next = $lastOk + $every;
        while (true) {
            $left = $next - microtime(true);
            if ($left > 0) {
                $r = [$pipe];
                $w = $e = null;
                $ready = @stream_select($r, $w, $e, (int) $left, (int) (fmod($left, 1.0) * 1e6));
                if ($ready !== 0 && $ready !== false) {
                    return; // told to stop, or the parent is gone
                }
                continue;
            }
            $next = microtime(true) + $every;
            try {
                $wire ??= Wire::open($at);
                $reply = $wire->command($cmd);
                if ($reply instanceof WireError && str_starts_with($reply->message, 'NOSCRIPT')) {
                    $wire->command(['SCRIPT', 'LOAD', $source]);
                    $reply = $wire->command($cmd);
                }
                if ($reply instanceof WireError && preg_match('/^(MOVED|ASK) \d+ (\S+)/', $reply->message, $m) === 1) {
                    $wire->close();
                    $wire = null;
                    $at = $at->moved($m[2]);
                    $next = microtime(true);
                    continue;
                }
                if ($reply === 1) {
                    $lastOk = microtime(true);
                    continue;
                }
                if ($reply === 0) {
                    @fwrite($pipe, "lost\n");
                    return;
                }
                throw new \RuntimeException('the renewal answered ' . json_encode($reply instanceof WireError ? $reply->message : $reply));
            } catch (\Throwable) {
                $wire?->close();
                $wire = null;
                if ((microtime(true) - $lastOk) * 1000 >= $leaseMs) {
                    @fwrite($pipe, "lost\n");
                    return;
                }
            }
        }
    }
}
