<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

use RedisPatterns\Call;
use RedisPatterns\Contract;
use RedisPatterns\Errors;

/**
 * Error replies as this library's errors: a script's domain code (`-CODE
 * detail`, Contract::ERRORS) as the error of its kind with its data, any
 * other reply as Errors\Server. A RedisException whose message is no error
 * reply (a lost connection) is not an error reply and stays what it is.
 */
final class ErrorMap
{
    /** Whether `$message` is an error reply (`CODE detail`), not a connection failure. */
    public static function isReply(string $message): bool
    {
        return preg_match('/^[A-Z][A-Z0-9_]*( |$)/', $message) === 1;
    }

    /** The error of the error reply `$message` to `$req` (a Call, a Cmd, or null when unknown). */
    public static function of(Call|Cmd|null $req, string $message): Errors\RedisPatternsError
    {
        [$code, $full, $detail] = self::split($message);
        if ($req instanceof Call && (in_array($code, $req->errors, true) || $code === 'MAXMEMORY')) {
            return self::fromCode($code, $detail, $req->script);
        }
        $denied = $req instanceof Call && self::isDenial($code, $full) ? self::deniedCall($req, $full) : null;
        return self::server($code, $detail, $denied, $req instanceof Call ? $req->script : null);
    }

    /**
     * An error reply `CODE rest` split once: its code, the rest, and the
     * detail (the rest without the server's ` script: ...` suffix).
     *
     * @return array{string, string, string}
     */
    private static function split(string $message): array
    {
        [$code, $full] = array_pad(explode(' ', $message, 2), 2, '');
        $at = strpos($full, ' script: ');
        return [$code, $full, $at === false ? $full : rtrim(substr($full, 0, $at))];
    }

    /** A Server error; an ACL refusal names the refused call (`$denied`) after the detail. */
    private static function server(string $code, string $detail, ?string $denied, ?string $script): Errors\Server
    {
        return new Errors\Server($code, $denied === null ? $detail : "$detail ($denied)", $script);
    }

    /**
     * NOPERM, or the plain ERR with which Redis 7.0 and Valkey answer a
     * command the user's ACL denies inside a script: the same refusal.
     */
    public static function isDenial(string $code, string $detail): bool
    {
        if ($code === 'NOPERM') {
            return true;
        }
        return $code === 'ERR' && (str_contains($detail, "can't run this command")
            || str_contains($detail, "can't publish to the channel")
            || str_contains($detail, "can't access at least one of the keys")
            || str_starts_with($detail, 'ACL failure in script'));
    }

    /**
     * What a script's call that the user's ACL denied was: the server names
     * the line (`@user_script:<n>`), the script's table of calls names the
     * command and, through the header, its key or channel. Null when that
     * line holds no call.
     */
    public static function deniedCall(Call $call, string $detail): ?string
    {
        if (preg_match('/@user_script:(\d+)/', $detail, $at) !== 1) {
            return null;
        }
        $what = $call->calls[(int) $at[1]] ?? null;
        return $what === null ? null : "denied: $what, line {$at[1]} of {$call->script}";
    }

    /** The error of the first error reply `$message` of a batch: attributed to the first call whose script has its code. */
    public static function ofBatch(array $reqs, string $message): Errors\RedisPatternsError
    {
        [$code, $full, $detail] = self::split($message);
        foreach ($reqs as $req) {
            if ($req instanceof Call && (in_array($code, $req->errors, true) || $code === 'MAXMEMORY')) {
                return self::fromCode($code, $detail, $req->script);
            }
        }
        if (self::isDenial($code, $full)) {
            foreach ($reqs as $req) {
                $denied = $req instanceof Call ? self::deniedCall($req, $full) : null;
                if ($denied !== null) {
                    return self::server($code, $detail, $denied, $req->script);
                }
            }
        }
        return self::server($code, $detail, null, null);
    }

    /** The error a script's `-CODE detail` reply stands for. */
    public static function fromCode(string $code, string $detail, string $script): Errors\RedisPatternsError
    {
        $kind = Contract::ERRORS[$code] ?? null;
        if ($kind === 'InvalidArgument') {
            [$arg, $reason] = array_pad(explode(' ', $detail, 2), 2, '');
            return new Errors\InvalidArgument($arg, $reason, $script);
        }
        if ($kind === 'NotEnoughMemory' || $code === 'MAXMEMORY') {
            $num = function (string $word) use ($detail): int {
                return preg_match('/\b' . $word . ':? (\d+)/', $detail, $m) === 1 ? (int) $m[1] : 0;
            };
            $what = str_contains($detail, ': ') ? explode(': ', $detail, 2)[1] : $detail;
            return new Errors\NotEnoughMemory($what, $num('needed'), $num('available'), 'maxmemory', $script);
        }
        if ($kind === 'LayoutMismatch') {
            return new Errors\LayoutMismatch(explode(' ', $detail, 2)[0], $detail, '');
        }
        $class = $kind === null ? null : 'RedisPatterns\\Errors\\' . $kind;
        if ($class === null || !class_exists($class)) {
            return new Errors\Script($script, $code, $detail);
        }
        $given = ['script' => $script, 'detail' => $detail];
        $values = [];
        foreach ($class::FIELDS as $field) {
            if (!array_key_exists($field, $given)) {
                return new Errors\Script($script, $code, $detail);
            }
            $values[] = $given[$field];
        }
        return new $class(...$values, text: "script $script: $code $detail");
    }
}
