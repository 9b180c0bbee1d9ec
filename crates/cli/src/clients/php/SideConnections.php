<?php

declare(strict_types=1);

namespace RedisPatterns;

/**
 * The connections this library opens besides yours: on a cluster, one per
 * primary for the batches (phpredis's RedisCluster sends no pipelines), the
 * shard-channel subscription of a waiting acquire, and the renewer of
 * synchronized(). They take the host, port, password and database of a
 * \Redis from it; what phpredis does not tell — the password of a
 * RedisCluster, a TLS context — is configured here once:
 *
 *     SideConnections::configure(auth: 'secret', tls: true,
 *         context: ['stream' => ['cafile' => '/etc/ca.pem', 'verify_peer' => true]]);
 *
 * (`context` as phpredis's connect() takes it.)
 */
final class SideConnections
{
    private static string|array|null $auth = null;
    private static ?array $context = null;
    private static bool $tls = false;
    private static float $timeout = 2.0;

    /**
     * @param string|array|null $auth a password, or [user, password]
     * @param array|null $context phpredis's connect() context (`['stream' => [ssl options]]`)
     * @param bool $tls whether a cluster's nodes speak TLS
     */
    public static function configure(string|array|null $auth = null, ?array $context = null, bool $tls = false, float $timeout = 2.0): void
    {
        self::$auth = $auth;
        self::$context = $context;
        self::$tls = $tls;
        self::$timeout = $timeout;
    }

    public static function auth(): string|array|null
    {
        return self::$auth;
    }

    public static function context(): ?array
    {
        return self::$context;
    }

    public static function tls(): bool
    {
        return self::$tls;
    }

    public static function timeout(): float
    {
        return self::$timeout;
    }
}
