<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;

/**
 * The process that renews the leases of synchronized() bodies: forked (pcntl)
 * at the first hold of a process and kept for the next ones, so a hold costs
 * a message, not a fork. The parent tells it `start` (a lease: where, the
 * extend command, every lease/3) and `stop`; it answers `lost <id>` when a
 * renewal found a lease gone (or none succeeded for a whole lease) and
 * `stopped <id> <lost|ok>`. It renews on connections of its own (Wire),
 * never the parent's; it ends by SIGKILL when the parent is gone (its end of
 * the socket pair closes), so none of the application's destructors or
 * shutdown functions run in it. A child the application forks later starts
 * a renewer of its own.
 */
final class RenewerProcess
{
    private static ?self $shared = null;

    private int $next = 0;
    /** @var array<int, bool> leases reported lost, by id */
    private array $lost = [];
    /** @var array<int, string> the answers to stop, by id */
    private array $stopped = [];

    /** @param resource $pipe */
    private function __construct(private readonly int $owner, private readonly int $pid, private $pipe)
    {
    }

    /** The renewer of this process (forked now if need be); null when it cannot fork. */
    public static function get(): ?self
    {
        $s = self::$shared;
        if ($s !== null && $s->owner === getmypid() && is_resource($s->pipe) && !feof($s->pipe)) {
            return $s;
        }
        if ($s !== null && $s->owner !== getmypid() && is_resource($s->pipe)) {
            fclose($s->pipe); // a forked child's copy of its parent's renewer: the parent's stays open
        }
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        if ($pair === false) {
            return null;
        }
        $pid = pcntl_fork();
        if ($pid === -1) {
            fclose($pair[0]);
            fclose($pair[1]);
            return null;
        }
        if ($pid === 0) {
            fclose($pair[0]);
            try {
                self::serve($pair[1]);
            } finally {
                posix_kill(getmypid(), SIGKILL);
            }
        }
        fclose($pair[1]);
        return self::$shared = new self(getmypid(), $pid, $pair[0]);
    }

    /** Starts renewing `$call` (a lease of `$leaseMs`) at `$at`; its id. */
    public function start(Endpoint $at, Call $call, string $prefix, int $leaseMs): int
    {
        $id = ++$this->next;
        $this->send(['start', $id, $at, $call->command($prefix), $call->file, $leaseMs]);
        return $id;
    }

    /** Whether lease `$id` was reported lost (reads what arrived, without waiting). */
    public function lost(int $id): bool
    {
        stream_set_blocking($this->pipe, false);
        while (($line = fgets($this->pipe)) !== false) {
            $this->heard($line);
        }
        stream_set_blocking($this->pipe, true);
        return isset($this->lost[$id]);
    }

    /** Stops renewing lease `$id`; whether it was lost. */
    public function stop(int $id): bool
    {
        if (!$this->send(['stop', $id])) {
            return isset($this->lost[$id]);
        }
        while (!isset($this->stopped[$id])) {
            $line = fgets($this->pipe);
            if ($line === false) {
                break; // the renewer is gone
            }
            $this->heard($line);
        }
        $lost = isset($this->lost[$id]) || ($this->stopped[$id] ?? 'ok') === 'lost';
        unset($this->lost[$id], $this->stopped[$id]);
        return $lost;
    }

    private function heard(string $line): void
    {
        $w = explode(' ', trim($line));
        if ($w[0] === 'lost') {
            $this->lost[(int) $w[1]] = true;
        } elseif ($w[0] === 'stopped') {
            $this->stopped[(int) $w[1]] = $w[2] ?? 'ok';
        }
    }

    private function send(array $message): bool
    {
        $line = base64_encode(serialize($message)) . "\n";
        return @fwrite($this->pipe, $line) === strlen($line);
    }

    /** The renewer: renews every lease it was told about every lease/3, until the parent is gone. */
    private static function serve($pipe): void
    {
        $leases = [];
        $buf = '';
        while (true) {
            $now = microtime(true);
            $due = null;
            foreach ($leases as $l) {
                $due = $due === null ? $l['next'] : min($due, $l['next']);
            }
            $wait = $due === null ? 60.0 : max($due - $now, 0.0);
            $r = [$pipe];
            $w = $e = null;
            $ready = @stream_select($r, $w, $e, (int) $wait, (int) (fmod($wait, 1.0) * 1e6));
            if ($ready > 0) {
                $chunk = fread($pipe, 65536);
                if ($chunk === false || $chunk === '') {
                    return; // the parent is gone
                }
                $buf .= $chunk;
                while (($at = strpos($buf, "\n")) !== false) {
                    $msg = unserialize(base64_decode(substr($buf, 0, $at)));
                    $buf = substr($buf, $at + 1);
                    if ($msg[0] === 'start') {
                        [, $id, $endpoint, $cmd, $file, $leaseMs] = $msg;
                        $leases[$id] = ['at' => $endpoint, 'cmd' => $cmd, 'file' => $file, 'lease' => $leaseMs,
                            'next' => microtime(true) + $leaseMs / 3000.0, 'ok' => microtime(true), 'lost' => false];
                    } else {
                        $id = $msg[1];
                        $lost = ($leases[$id]['lost'] ?? false) ? 'lost' : 'ok';
                        unset($leases[$id]);
                        @fwrite($pipe, "stopped $id $lost\n");
                    }
                }
            }
            foreach ($leases as $id => $l) {
                if (!$l['lost'] && $l['next'] <= microtime(true)) {
                    $leases[$id] = self::renew($pipe, $id, $l);
                }
            }
        }
    }

    /** One renewal of lease `$id`; the lease's state after it. */
    private static function renew($pipe, int $id, array $l): array
    {
        static $wires = [];
        $l['next'] = microtime(true) + $l['lease'] / 3000.0;
        $key = $l['at']->address() . '/' . $l['at']->db;
        try {
            $wire = $wires[$key] ??= Wire::open($l['at']);
            $reply = $wire->command($l['cmd']);
            if ($reply instanceof WireError && str_starts_with($reply->message, 'NOSCRIPT')) {
                $wire->command(['SCRIPT', 'LOAD', Call::sourceOf($l['file'])]);
                $reply = $wire->command($l['cmd']);
            }
            if ($reply instanceof WireError && preg_match('/^(MOVED|ASK) \d+ (\S+)/', $reply->message, $m) === 1) {
                $l['at'] = $l['at']->moved($m[2]);
                $l['next'] = microtime(true);
                return $l;
            }
            if ($reply === 1) {
                $l['ok'] = microtime(true);
                return $l;
            }
            if ($reply === 0) {
                $l['lost'] = true;
                @fwrite($pipe, "lost $id\n");
                return $l;
            }
            throw new \RuntimeException('the renewal answered ' . json_encode($reply instanceof WireError ? $reply->message : $reply));
        } catch (\Throwable) {
            if (isset($wires[$key])) {
                $wires[$key]->close();
                unset($wires[$key]);
            }
            if ((microtime(true) - $l['ok']) * 1000 >= $l['lease']) {
                $l['lost'] = true;
                @fwrite($pipe, "lost $id\n");
            }
            return $l;
        }
    }
}
