<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Call;
use RedisPatterns\Contract;
use RedisPatterns\Errors\LockBusy;
use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Internal\Holder;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Waiting;
use RedisPatterns\Records\RwLease;
use RedisPatterns\Scripts\RwlockScripts;

/** The read-write lock's operations (src/rwlock.rs, lua/rwlock). */
final class RwLock
{
    public readonly string $writerKey;
    public readonly string $readersKey;
    public readonly string $intentsKey;
    public readonly string $channel;
    private readonly bool $notified;

    public function __construct(string $name, public readonly int $leaseMs, string $prefix, string $waitMode, private readonly int $pollMs)
    {
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->writerKey = Contract::key('rwlock', 'writer', $vars);
        $this->readersKey = Contract::key('rwlock', 'readers', $vars);
        $this->intentsKey = Contract::key('rwlock', 'intents', $vars);
        $this->channel = Contract::key('rwlock', 'wake', $vars);
        $this->notified = $waitMode === 'notified';
    }

    /** @return array{?RwLease, ?int} */
    private function attempt(Runner $run, string $role, string $token): array
    {
        $call = $role === 'read'
            ? RwlockScripts::readAcquire($this->writerKey, $this->readersKey, $this->intentsKey, $token, $this->leaseMs)
            : RwlockScripts::writeAcquire($this->writerKey, $this->readersKey, $this->intentsKey, $token, $this->leaseMs, $this->leaseMs);
        $reply = (int) $run->one($call);
        return $reply === 1 ? [new RwLease($token, $role), null] : [null, Waiting::busyMs($reply)];
    }

    private function withdraw(Runner $run, string $token): void
    {
        try {
            $this->release($run, new RwLease($token, 'write'));
        } catch (RedisPatternsError) {
            // The intent lapses by itself.
        }
    }

    public function tryRead(Runner $run): RwLease
    {
        return $this->tryAs($run, 'read', Waiting::newToken());
    }

    public function tryWrite(Runner $run): RwLease
    {
        return $this->tryAs($run, 'write', Waiting::newToken());
    }

    public function tryAs(Runner $run, string $role, string $token): RwLease
    {
        [$got, $hint] = $this->attempt($run, $role, $token);
        if ($got === null) {
            if ($role === 'write') {
                $this->withdraw($run, $token);
            }
            throw new LockBusy($this->writerKey, $hint);
        }
        return $got;
    }

    public function read(Runner $run, int $timeoutMs): RwLease
    {
        return $this->waitAs($run, 'read', Waiting::newToken(), $timeoutMs);
    }

    public function write(Runner $run, int $timeoutMs): RwLease
    {
        return $this->waitAs($run, 'write', Waiting::newToken(), $timeoutMs);
    }

    public function waitAs(Runner $run, string $role, string $token, int $timeoutMs): RwLease
    {
        $maxWait = $role === 'write' ? intdiv($this->leaseMs, 2) : null;
        try {
            return Waiting::untilAcquired($run, $this->writerKey, $this->channel, $this->notified, $this->pollMs, $timeoutMs,
                fn (): array => $this->attempt($run, $role, $token), $maxWait);
        } catch (RedisPatternsError $e) {
            if ($role === 'write') {
                $this->withdraw($run, $token);
            }
            throw $e;
        }
    }

    public function release(Runner $run, RwLease $lease): bool
    {
        $call = $lease->role === 'read'
            ? RwlockScripts::readRelease($this->readersKey, $lease->token, $this->channel)
            : RwlockScripts::writeRelease($this->writerKey, $this->intentsKey, $lease->token, $this->channel);
        return (int) $run->one($call) === 1;
    }

    private function extendCall(RwLease $lease, int $durationMs): Call
    {
        return $lease->role === 'read'
            ? RwlockScripts::readExtend($this->readersKey, $lease->token, $durationMs)
            : RwlockScripts::writeExtend($this->writerKey, $lease->token, $durationMs);
    }

    public function extend(Runner $run, RwLease $lease, int $durationMs): bool
    {
        return (int) $run->one($this->extendCall($lease, $durationMs)) === 1;
    }

    public function holder(Runner $run, string $role, int $timeoutMs): Holder
    {
        return new Holder(
            $this->writerKey,
            $this->leaseMs,
            fn (): RwLease => $this->waitAs($run, $role, Waiting::newToken(), $timeoutMs),
            fn (RwLease $l): Call => $this->extendCall($l, $this->leaseMs),
            fn (RwLease $l): bool => $this->release($run, $l),
            fn (RwLease $l): ?int => null,
        );
    }
}
