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
 * so the renewal runs in a process of its own (RenewerProcess: forked at the
 * first hold, kept for the next ones), on connections of its own, which
 * reports a lease it found gone. Without pcntl (php-fpm) the renewal happens
 * when the body calls Holding::keepAlive() ('calls' mode).
 */
final class Renewer
{
    private bool $lost = false;
    private float $last;

    private function __construct(
        private readonly Runner $run,
        private readonly Call $call,
        private readonly int $leaseMs,
        private readonly ?RenewerProcess $process,
        private ?int $id,
    ) {
        $this->last = microtime(true);
    }

    /** Starts renewing: in the renewer process when `$how` allows it and pcntl and posix are there, else on keepAlive(). */
    public static function start(Runner $run, Call $call, int $leaseMs, string $how): self
    {
        $fork = $how !== 'calls' && function_exists('pcntl_fork') && function_exists('posix_kill');
        if ($how === 'process' && !$fork) {
            throw new \LogicException('renewal in a process of its own needs the pcntl and posix extensions');
        }
        $process = $fork ? RenewerProcess::get() : null;
        if ($process === null) {
            return new self($run, $call, $leaseMs, null, null);
        }
        $id = $process->start($run->endpoint($call->routingKey()), $call, $run->prefix, $leaseMs);
        return new self($run, $call, $leaseMs, $process, $id);
    }

    /** Whether the lease was found lost (so far). */
    public function lost(): bool
    {
        if (!$this->lost && $this->process !== null && $this->id !== null) {
            $this->lost = $this->process->lost($this->id);
        }
        return $this->lost;
    }

    /** 'calls' mode: renews when lease/3 passed since the last renewal; a process renews by itself. */
    public function keepAlive(): bool
    {
        if ($this->process !== null || $this->lost) {
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
        if ($this->process !== null && $this->id !== null) {
            $this->lost = $this->process->stop($this->id) || $this->lost;
            $this->id = null;
        }
        return $this->lost;
    }
}
