<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/**
 * One plain command: `$head` (the name and what precedes the keys), `$keys`
 * (a client prefix applies to them) and `$tail`; `$node` sends it to that
 * primary of a cluster (a name from Runner::nodes(), or ANY); `$route`
 * routes a keyless command (WAIT, INFO) to the node of that key's slot.
 */
final class Cmd
{
    /** A keyless command any node answers (CONFIG GET, TIME). */
    public const ANY = 'any';

    /**
     * @param list<string> $head
     * @param list<string> $keys
     * @param list<string|int> $tail
     */
    public function __construct(
        public readonly array $head,
        public readonly array $keys = [],
        public readonly array $tail = [],
        public readonly ?string $node = null,
        public readonly ?string $route = null,
    ) {
    }

    /** `NAME key args...`, the common shape. */
    public static function key(string $name, string $key, string|int ...$args): self
    {
        return new self([$name], [$key], array_values($args));
    }

    public function command(string $prefix = ''): array
    {
        $keys = $prefix === '' ? $this->keys : array_map(fn (string $k): string => $prefix . $k, $this->keys);
        return [...$this->head, ...$keys, ...array_map('strval', $this->tail)];
    }

    public function routingKey(): ?string
    {
        return $this->keys[0] ?? $this->route;
    }

    /** Whether it only reads (a batch of readers may be sent again after a slot moved). */
    public function readOnly(): bool
    {
        return in_array(strtoupper($this->head[0]), [
            'GET', 'GETRANGE', 'GETBIT', 'BITCOUNT', 'HGET', 'HMGET', 'HLEN', 'HEXISTS', 'HGETALL', 'SCARD',
            'SMEMBERS', 'PTTL', 'OBJECT', 'CONFIG', 'TIME', 'SCAN', 'EXISTS', 'STRLEN',
        ], true);
    }
}
