<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Call;
use RedisPatterns\Contract;
use RedisPatterns\Errors\LockBusy;
use RedisPatterns\Internal\Holder;
use RedisPatterns\Internal\Runner;
use RedisPatterns\Internal\Waiting;
use RedisPatterns\Records\RwLease;
use RedisPatterns\Scripts\RwlockScripts;

/**
 * The read-write lock's operations (src/rwlock.rs, lua/rwlock).
 *
 * @extends QueuedResource<RwLease>
 */
final class RwLock extends QueuedResource
{
    public readonly string $writerKey;
    public readonly string $readersKey;
    public readonly string $intentsKey;

    public function __construct(
        string $name,
        int $leaseMs,
        string $prefix,
        string $waitMode,
        int $pollMs,
        public readonly bool $fair = false,
        int $placeMs = 0,
    ) {
        $vars = ['prefix' => $prefix, 'name' => $name];
        $this->writerKey = Contract::key('rwlock', 'writer', $vars);
        $this->readersKey = Contract::key('rwlock', 'readers', $vars);
        $this->intentsKey = Contract::key('rwlock', 'intents', $vars);
        parent::__construct('rwlock', $vars, $this->writerKey, $leaseMs, $waitMode, $pollMs, $placeMs);
    }

    /** @return list<string> writer, readers, intents, queue, places: the keys of every acquire and release */
    private function keys(): array
    {
        return [$this->writerKey, $this->readersKey, $this->intentsKey, $this->queueKey, $this->placesKey];
    }

    /** @return array{?RwLease, ?int} */
    private function attempt(Runner $run, string $role, string $token, int $placeMs = 0): array
    {
        [$w, $r, $i, $q, $p] = $this->keys();
        $call = $role === 'read'
            ? RwlockScripts::readAcquire($w, $r, $i, $q, $p, $token, $this->leaseMs, $placeMs)
            : RwlockScripts::writeAcquire($w, $r, $i, $q, $p, $token, $this->leaseMs, $placeMs, $this->fair);
        $reply = (int) $run->one($call);
        return $reply === 1 ? [new RwLease($token, $role), null] : [null, Waiting::busyMs($reply)];
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
        return $got ?? throw new LockBusy($this->writerKey, $hint);
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
        $lease = new RwLease($token, $role);
        return $this->waitFor($run, $token, $timeoutMs, fn (int $placeMs): array => $this->attempt($run, $role, $token, $placeMs),
            fn () => $this->release($run, $lease));
    }

    public function release(Runner $run, RwLease $lease): bool
    {
        [$w, $r, $i, $q, $p] = $this->keys();
        $call = $lease->role === 'read'
            ? RwlockScripts::readRelease($w, $r, $i, $q, $p, $lease->token, $this->channel)
            : RwlockScripts::writeRelease($w, $r, $i, $q, $p, $lease->token, $this->channel);
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
        return $this->holding(
            fn (): RwLease => $this->waitAs($run, $role, Waiting::newToken(), $timeoutMs),
            fn (RwLease $l): Call => $this->extendCall($l, $this->leaseMs),
            fn (RwLease $l): bool => $this->release($run, $l),
        );
    }
}
