<?php

declare(strict_types=1);

namespace RedisPatterns;

/**
 * One call of a bundled script, with its keys and encoded arguments (made by
 * the generated RedisPatterns\Scripts\*Scripts methods; Runtime::run() sends
 * it). `$tagged`: the positions in `$args` that name a channel in the keys'
 * slot (a client prefix applies to them as to the keys).
 */
final class Call
{
    public readonly string $sha1;
    public readonly string $file;
    public readonly bool $readOnly;
    /** @var list<string> the script's domain error codes */
    public readonly array $errors;
    /** @var array<int, string> each call of the script's source by line, in words (how an ACL refusal names the call) */
    public readonly array $calls;

    /**
     * @param list<string> $keys
     * @param list<string> $args
     * @param list<int> $tagged
     */
    public function __construct(
        public readonly string $script,
        public readonly array $keys,
        public readonly array $args,
        public readonly array $tagged = [],
    ) {
        [$this->sha1, $this->file, $this->readOnly, $this->errors, $this->calls] = Contract::SCRIPTS[$script];
    }

    /** EVALSHA (EVALSHA_RO) sha numkeys keys... args..., with `$prefix` before every key and tagged argument. */
    public function command(string $prefix = ''): array
    {
        $keys = $this->keys;
        $args = $this->args;
        if ($prefix !== '') {
            $keys = array_map(fn (string $k): string => $prefix . $k, $keys);
            foreach ($this->tagged as $i) {
                $args[$i] = $prefix . $args[$i];
            }
        }
        return [$this->readOnly ? 'EVALSHA_RO' : 'EVALSHA', $this->sha1, (string) count($keys), ...$keys, ...$args];
    }

    /** The key that routes it (without a client prefix), null for none. */
    public function routingKey(): ?string
    {
        return $this->keys[0] ?? null;
    }

    /** The shipped script, as SCRIPT LOAD gets it. */
    public function source(): string
    {
        return self::sourceOf($this->file);
    }

    public static function sourceOf(string $file): string
    {
        $text = file_get_contents(__DIR__ . '/../lua/' . $file);
        if ($text === false) {
            throw new \RuntimeException("the shipped script lua/$file is missing");
        }
        return $text;
    }
}
