<?php

declare(strict_types=1);

namespace RedisPatterns\Internal\Ops;

use RedisPatterns\Internal\Runner;

/**
 * The layout of one instance of a pattern in its meta key: claimed by the
 * instance's first write when it records its layout (the record_layout
 * setting), or by claimLayout; every claim checks the stored layout against
 * the instance's.
 */
final class LayoutClaim
{
    private bool $claimed = false;

    /** @param \Closure(): array<string, string> $fields the instance's layout */
    public function __construct(
        private readonly string $metaKey,
        private readonly \Closure $fields,
        private readonly bool $onFirstWrite,
    ) {
    }

    /** Before a write: the first one claims the layout when the instance records it. */
    public function beforeWrite(Runner $run): void
    {
        if ($this->onFirstWrite && !$this->claimed) {
            $this->claim($run);
        }
    }

    public function claim(Runner $run): void
    {
        Layouts::claim($run, $this->metaKey, ($this->fields)());
        $this->claimed = true;
    }
}
