<?php

declare(strict_types=1);

namespace RedisPatterns;

/** One call of a bundled script, with its keys and encoded arguments. */
final class Call
{
    public function __construct(
        public readonly string $script,
        public readonly string $sha1,
        public readonly string $file,
        public readonly bool $readOnly,
        public readonly array $keys,
        public readonly array $args,
    ) {
    }

    /** EVALSHA (EVALSHA_RO) sha numkeys keys... args... */
    public function command(): array
    {
        return [$this->readOnly ? 'EVALSHA_RO' : 'EVALSHA', $this->sha1, (string) count($this->keys), ...$this->keys, ...$this->args];
    }

    /** The shipped script, as SCRIPT LOAD gets it. */
    public function source(): string
    {
        return (string) file_get_contents(__DIR__ . '/../lua/' . $this->file);
    }
}
