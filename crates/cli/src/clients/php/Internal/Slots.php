<?php

declare(strict_types=1);

namespace RedisPatterns\Internal;

/** Cluster slots: CRC16 of a key's hash tag, and which primary serves a slot (CLUSTER SLOTS). */
final class Slots
{
    private static ?array $table = null;

    /** @var list<array{int, int, string}> [first slot, last slot, "host:port"] */
    private array $ranges = [];

    /** The part of a name that picks its slot: the first non-empty {...}, else the name. */
    public static function hashTag(string $name): string
    {
        $open = strpos($name, '{');
        if ($open !== false) {
            $close = strpos($name, '}', $open + 1);
            if ($close !== false && $close > $open + 1) {
                return substr($name, $open + 1, $close - $open - 1);
            }
        }
        return $name;
    }

    /** The cluster slot of a key (or shard channel): CRC16-XMODEM of its hash tag mod 16384. */
    public static function of(string $key): int
    {
        $t = self::$table ??= self::table();
        $crc = 0;
        $tag = self::hashTag($key);
        for ($i = 0, $n = strlen($tag); $i < $n; $i++) {
            $crc = (($crc << 8) & 0xFF00) ^ $t[(($crc >> 8) ^ ord($tag[$i])) & 0xFF];
        }
        return $crc & 0x3FFF;
    }

    private static function table(): array
    {
        $out = [];
        for ($i = 0; $i < 256; $i++) {
            $c = $i << 8;
            for ($j = 0; $j < 8; $j++) {
                $c = ($c & 0x8000) ? (($c << 1) ^ 0x1021) & 0xFFFF : ($c << 1) & 0xFFFF;
            }
            $out[] = $c;
        }
        return $out;
    }

    /** The map a CLUSTER SLOTS reply describes. */
    public static function fromReply(array $reply): self
    {
        $s = new self();
        foreach ($reply as $range) {
            $s->ranges[] = [(int) $range[0], (int) $range[1], $range[2][0] . ':' . $range[2][1]];
        }
        if ($s->ranges === []) {
            throw new \RedisException('CLUSTER SLOTS answered no slot: the cluster is not formed');
        }
        return $s;
    }

    /** "host:port" of the primary serving `$slot`. */
    public function node(int $slot): string
    {
        foreach ($this->ranges as [$first, $last, $node]) {
            if ($slot >= $first && $slot <= $last) {
                return $node;
            }
        }
        throw new \RedisException("no node of the cluster serves slot $slot");
    }

    /** @return list<string> every primary, sorted */
    public function nodes(): array
    {
        $out = array_values(array_unique(array_column($this->ranges, 2)));
        sort($out);
        return $out;
    }
}
