<?php
// The conformance cases (tests/conformance/cases.json, format in its README)
// on the generated PHP client: every operation dispatched by name (the
// description's snake case in PHP's camelCase; `hold` is synchronized()) to
// the classes of RedisPatterns, on one server (\Redis) or a cluster
// (\RedisCluster). An operation the client lacks fails its case; `spawn`
// steps run in a forked process with a connection of its own.
//
//   php conformance.php CLIENT_DIR CASES URL [URL...] [--cluster] [--part=all|write|read]
//
// Prints `conformance php (<target>): N passed, M failed` and the failures;
// exits 1 when a case failed or none ran.

declare(strict_types=1);

use RedisPatterns\Errors\RedisPatternsError;
use RedisPatterns\Holding;
use RedisPatterns\Internal\Runner;

final class Failed extends Exception
{
}

final class Target
{
    /** @var list<array{string, int}> */
    public array $nodes = [];

    public function __construct(array $urls, public readonly bool $cluster)
    {
        foreach ($urls as $u) {
            $p = parse_url($u);
            $this->nodes[] = [$p['host'], (int) $p['port']];
        }
    }

    public function client(): Redis|RedisCluster
    {
        if ($this->cluster) {
            return new RedisCluster(null, array_map(fn ($n) => "{$n[0]}:{$n[1]}", $this->nodes), 5.0, 5.0);
        }
        $r = new Redis();
        $r->connect($this->nodes[0][0], $this->nodes[0][1], 5.0);
        return $r;
    }

    /** @return list<Redis> a connection to every node */
    private function each(): array
    {
        return array_map(function ($n) {
            $r = new Redis();
            $r->connect($n[0], $n[1], 5.0);
            return $r;
        }, $this->nodes);
    }

    public function flush(): void
    {
        foreach ($this->each() as $r) {
            try {
                $r->rawCommand('FLUSHALL', 'SYNC');
            } catch (RedisException) {
                // a replica refuses it
            }
            $r->close();
        }
    }

    /**
     * The manifest's capabilities the server has: COMMAND INFO of their commands answers no nil.
     *
     * @param list<array{name: string, commands: list<string>}> $capabilities
     * @return list<string>
     */
    public function capabilities(array $capabilities): array
    {
        $r = $this->each()[0];
        $have = [];
        foreach ($capabilities as $c) {
            if (str_contains(implode('', $c['commands']), ' ')) {
                continue;
            }
            try {
                $info = $r->rawCommand('COMMAND', 'INFO', ...$c['commands']);
            } catch (RedisException) {
                continue;
            }
            if (is_array($info) && !in_array(false, $info, true) && !in_array(null, $info, true)) {
                $have[] = $c['name'];
            }
        }
        $r->close();
        return $have;
    }

    /** @return list<string> every key of every primary, sorted */
    public function keys(): array
    {
        $out = [];
        foreach ($this->each() as $r) {
            if (str_contains((string) $r->rawCommand('INFO', 'replication'), 'role:slave')) {
                continue;
            }
            foreach ($r->rawCommand('KEYS', '*') as $k) {
                $out[] = $k;
            }
            $r->close();
        }
        sort($out, SORT_STRING);
        return $out;
    }
}

/** @var array<string, array> the description's classes (manifest: patterns[].api.classes) */
$CLASSES = [];

function camel(string $name): string
{
    return lcfirst(str_replace('_', '', ucwords($name, '_')));
}

function describe(object $obj): array
{
    global $CLASSES;
    $c = $CLASSES[(new ReflectionClass($obj))->getShortName()];
    $out = [];
    foreach ($c['getters'] as $g) {
        $out[$g['name']] = to_json($obj->{camel($g['name'])});
    }
    return $out;
}

function is_handle(mixed $v): bool
{
    global $CLASSES;
    return is_object($v) && isset($CLASSES[(new ReflectionClass($v))->getShortName()]) && str_starts_with(get_class($v), 'RedisPatterns\\');
}

function to_json(mixed $v): mixed
{
    if (is_handle($v)) {
        return describe($v);
    }
    if (is_object($v) && method_exists($v, 'toArray')) {
        return array_map('to_json', $v->toArray());
    }
    if (is_string($v)) {
        return mb_check_encoding($v, 'UTF-8') ? $v : ['$hex' => bin2hex($v)];
    }
    if (is_array($v)) {
        return array_map('to_json', $v);
    }
    return $v;
}

function from_json(mixed $v): mixed
{
    if (is_array($v) && array_keys($v) === ['$hex']) {
        return (string) hex2bin($v['$hex']);
    }
    return is_array($v) ? array_map('from_json', $v) : $v;
}

function compact_json(mixed $v): string
{
    $s = json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION | JSON_INVALID_UTF8_SUBSTITUTE);
    return strlen((string) $s) <= 300 ? (string) $s : substr((string) $s, 0, 300) . '...';
}

function matches(mixed $want, mixed $got): bool
{
    if (is_array($want) && count($want) === 1 && is_string(array_key_first($want)) && str_starts_with(array_key_first($want), '$')) {
        $arg = reset($want);
        switch (array_key_first($want)) {
            case '$any':
                return true;
            case '$range':
                return (is_int($got) || is_float($got)) && $got >= $arg[0] && $got <= $arg[1];
            case '$above':
                return (is_int($got) || is_float($got)) && $got > $arg;
            case '$len':
                return is_array($got) && array_is_list($got) && count($got) === $arg;
            case '$hex':
                return $got === to_json((string) hex2bin($arg));
            case '$prefix':
                return is_string($got) && str_starts_with($got, $arg);
            case '$type':
                return match ($arg) {
                    'str' => is_string($got),
                    'int' => is_int($got),
                    'float' => is_int($got) || is_float($got),
                    'bool' => is_bool($got),
                    'list' => is_array($got) && array_is_list($got),
                };
            case '$unordered':
                if (!is_array($got)) {
                    return false;
                }
                $a = array_map('compact_json', $arg);
                $b = array_map('compact_json', $got);
                sort($a);
                sort($b);
                return $a === $b;
        }
        throw new Failed('unknown matcher ' . array_key_first($want));
    }
    if (is_array($want) && array_is_list($want)) {
        if (!is_array($got) || !array_is_list($got) || count($got) !== count($want)) {
            return false;
        }
        foreach ($want as $i => $w) {
            if (!matches($w, $got[$i])) {
                return false;
            }
        }
        return true;
    }
    if (is_array($want)) {
        if (!is_array($got) || count($got) !== count($want)) {
            return false;
        }
        foreach ($want as $k => $w) {
            if (!array_key_exists($k, $got) || !matches($w, $got[$k])) {
                return false;
            }
        }
        return true;
    }
    if (is_bool($want) || is_bool($got)) {
        return $want === $got;
    }
    if ((is_int($want) || is_float($want)) && (is_int($got) || is_float($got))) {
        return (float) $want === (float) $got;
    }
    return $want === $got;
}

function today(int $offset): string
{
    return (new DateTimeImmutable('now', new DateTimeZone('UTC')))->modify("$offset days")->format('Y-m-d');
}

final class Run
{
    public Redis|RedisCluster $client;
    public array $saved = [];
    /** @var list<array{int, resource}> spawned processes and their pipes */
    private array $children = [];

    public function __construct(private readonly Target $target)
    {
        $this->client = $target->client();
    }

    public function resolve(mixed $v): mixed
    {
        if (is_array($v) && array_keys($v) === ['$ref']) {
            return $this->lookup($v['$ref']);
        }
        if (is_array($v) && array_key_exists('$today', $v)) {
            $day = today((int) $v['$today']);
            return isset($v['in']) ? str_replace('@', $day, $v['in']) : $day;
        }
        return is_array($v) ? array_map([$this, 'resolve'], $v) : $v;
    }

    private function lookup(string $path): mixed
    {
        $parts = explode('.', $path);
        $first = array_shift($parts);
        if (!array_key_exists($first, $this->saved)) {
            throw new Failed("nothing saved as $first");
        }
        $v = to_json($this->saved[$first]);
        foreach ($parts as $p) {
            $v = $v[ctype_digit($p) ? (int) $p : $p];
        }
        return $v;
    }

    public function steps(array $steps): void
    {
        foreach ($steps as $i => $s) {
            try {
                $this->step($s);
            } catch (Failed $e) {
                throw new Failed('step ' . ($i + 1) . ' ' . compact_json($s) . ': ' . $e->getMessage());
            }
        }
    }

    private function step(array $s): void
    {
        if (isset($s['sleep_ms'])) {
            $until = microtime(true) + $s['sleep_ms'] / 1000;
            while (($left = $until - microtime(true)) > 0) {
                usleep((int) ($left * 1e6));
            }
            return;
        }
        if (isset($s['spawn'])) {
            $this->spawn($s['spawn']);
            return;
        }
        if (array_key_exists('keys', $s)) {
            $this->check($s, ['ok', $this->target->keys()], 'keys');
            return;
        }
        if (isset($s['redis'])) {
            $this->check($s, $this->raw(array_map('strval', $this->resolve($s['redis']))));
            return;
        }
        $args = array_map('from_json', $this->resolve($s['args'] ?? []));
        $outcome = $this->call($s, $args);
        if ($outcome[0] === 'ok') {
            $name = $s['as'] ?? $s['save'] ?? null;
            if ($name !== null) {
                $this->saved[$name] = $outcome[1];
            }
            $outcome = ['ok', to_json($outcome[1])];
        }
        $this->check($s, $outcome);
    }

    private function raw(array $cmd): array
    {
        $c = $this->client;
        $c->clearLastError();
        try {
            $reply = $c instanceof RedisCluster ? $c->rawCommand($cmd[1] ?? $cmd[0], ...$cmd) : $c->rawCommand(...$cmd);
        } catch (RedisException $e) {
            return ['err', ['Server', ['message' => $e->getMessage()], $e->getMessage()]];
        }
        if ($reply === false && ($err = $c->getLastError()) !== null) {
            return ['err', ['Server', ['message' => $err], $err]];
        }
        return ['ok', to_json(Runner::decode($reply))];
    }

    private function call(array $s, array $args): array
    {
        $kwargs = [];
        foreach ($args as $k => $v) {
            $kwargs[camel((string) $k)] = $v;
        }
        try {
            if (isset($s['new'])) {
                $class = 'RedisPatterns\\' . $s['new'];
                if (!class_exists($class)) {
                    throw new Failed("the client has no class {$s['new']}");
                }
                return ['ok', new $class($this->client, ...$kwargs)];
            }
            $method = $s['op'] === 'hold' ? 'synchronized' : camel($s['op']);
            $target = $this->saved[$s['on']] ?? null;
            if ($target === null) {
                $class = 'RedisPatterns\\' . $s['on'];
                if (!class_exists($class)) {
                    throw new Failed("the client has no class {$s['on']}");
                }
                if (!method_exists($class, $method) || !(new ReflectionMethod($class, $method))->isStatic()) {
                    throw new Failed("the client lacks {$s['on']}.{$s['op']}");
                }
                return ['ok', $class::$method($this->client, ...$kwargs)];
            }
            if (!method_exists($target, $method)) {
                throw new Failed('the client lacks ' . (new ReflectionClass($target))->getShortName() . ".{$s['op']}");
            }
            if ($s['op'] === 'hold') {
                return ['ok', $this->hold($target, $kwargs, $s['body'] ?? [])];
            }
            return ['ok', $target->$method(...$kwargs)];
        } catch (RedisPatternsError $e) {
            return ['err', [$e::KIND, to_json($e->data()), $e->getMessage()]];
        } catch (RedisException $e) {
            return ['err', ['Server', ['message' => $e->getMessage()], $e->getMessage()]];
        }
    }

    private function hold(object $target, array $kwargs, array $body): array
    {
        $held = null;
        $target->synchronized(function (Holding $h) use (&$held, $body): void {
            $held = $h;
            $this->steps($body);
        }, ...$kwargs);
        return ['token' => $held->token, 'fence' => $held->fence, 'lost' => $held->lost()];
    }

    /** The steps in a forked process with a connection of its own, after after_ms. */
    private function spawn(array $spawn): void
    {
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $pid = pcntl_fork();
        if ($pid === 0) {
            fclose($pair[0]);
            $out = '';
            try {
                usleep((int) (($spawn['after_ms'] ?? 0) * 1000));
                $own = $this->target->client();
                Runner::of($this->client)->reconnect($own);
                $this->client = $own;
                $this->children = [];
                $this->steps($spawn['steps'] ?? []);
            } catch (Throwable $e) {
                $out = 'spawned: ' . $e->getMessage();
            }
            fwrite($pair[1], $out);
            fclose($pair[1]);
            posix_kill(getmypid(), SIGKILL);
        }
        fclose($pair[1]);
        $this->children[] = [$pid, $pair[0]];
    }

    public function join(): void
    {
        $errors = [];
        foreach ($this->children as [$pid, $pipe]) {
            $got = (string) stream_get_contents($pipe);
            fclose($pipe);
            pcntl_waitpid($pid, $status);
            if ($got !== '') {
                $errors[] = $got;
            }
        }
        $this->children = [];
        if ($errors !== []) {
            throw new Failed(implode('; ', $errors));
        }
    }

    private function check(array $s, array $outcome, string $what = 'result'): void
    {
        $kind = $s['error'] ?? null;
        if ($outcome[0] === 'ok') {
            if ($kind !== null) {
                throw new Failed("expected error $kind, got " . compact_json($outcome[1]));
            }
            if ($what === 'keys' || array_key_exists('expect', $s)) {
                $want = $this->resolve($what === 'keys' ? $s['keys'] : $s['expect']);
                if (!matches($want, $outcome[1])) {
                    throw new Failed('expected ' . compact_json($want) . ', got ' . compact_json($outcome[1]));
                }
            }
            return;
        }
        [$gotKind, $data, $message] = $outcome[1];
        if ($kind === null) {
            throw new Failed("failed: $gotKind " . compact_json($data) . " ($message)");
        }
        if ($gotKind !== $kind) {
            throw new Failed("expected error $kind, got $gotKind " . compact_json($data) . " ($message)");
        }
        foreach ($this->resolve($s['data'] ?? []) as $k => $w) {
            if (!matches($w, $data[$k] ?? null)) {
                throw new Failed("error data $k: expected " . compact_json($w) . ', got ' . compact_json($data[$k] ?? null));
            }
        }
    }
}

/** The steps of `$part`: all (without the marker), the write part or the read part. */
function select(array $steps, string $part): array
{
    $split = null;
    foreach ($steps as $i => $s) {
        if (($s['part'] ?? null) === 'read') {
            $split = $i;
            break;
        }
    }
    if ($part === 'all' || $split === null) {
        return array_values(array_filter($steps, fn ($s) => !isset($s['part'])));
    }
    return $part === 'write' ? array_slice($steps, 0, $split) : array_slice($steps, $split + 1);
}

function main(array $argv): int
{
    global $CLASSES;
    $flags = array_values(array_filter($argv, fn ($a) => str_starts_with($a, '--')));
    $plain = array_values(array_filter($argv, fn ($a) => !str_starts_with($a, '--')));
    $part = 'all';
    foreach ($flags as $f) {
        if (str_starts_with($f, '--part=')) {
            $part = substr($f, 7);
        }
    }
    [$dir, $casesPath] = [$plain[0], $plain[1]];
    require $dir . '/autoload.php';
    $manifest = json_decode((string) file_get_contents($dir . '/manifest.json'), true);
    foreach ($manifest['patterns'] as $p) {
        foreach ($p['api']['classes'] ?? [] as $c) {
            $CLASSES[$c['name']] = $c;
        }
    }
    $target = new Target(array_slice($plain, 2), in_array('--cluster', $flags, true));
    $cases = json_decode((string) file_get_contents($casesPath), true)['cases'];
    if ($part !== 'all') {
        $cases = array_values(array_filter($cases, fn ($c) => count(array_filter($c['steps'], fn ($s) => ($s['part'] ?? null) === 'read')) > 0));
        if ($part === 'write') {
            $target->flush();
        }
    }
    $have = $target->capabilities($manifest['capabilities']);
    // A case runs where the server has every capability of its needs and
    // none of its lacks (a refusal where they are missing).
    $lacking = [];
    $having = [];
    $skipped = 0;
    $run_cases = [];
    foreach ($cases as $c) {
        $missing = array_values(array_diff($c['needs'] ?? [], $have));
        $present = array_values(array_intersect($c['lacks'] ?? [], $have));
        $lacking = array_values(array_unique(array_merge($lacking, $missing)));
        $having = array_values(array_unique(array_merge($having, $present)));
        if ($missing !== [] || $present !== []) {
            $skipped++;
        } else {
            $run_cases[] = $c;
        }
    }
    sort($lacking);
    sort($having);
    $cases = $run_cases;
    $passed = 0;
    $failed = [];
    foreach ($cases as $c) {
        if ($part === 'all') {
            $target->flush();
        }
        $run = null;
        try {
            $run = new Run($target);
            $run->steps(select($c['steps'], $part));
            $run->join();
            $passed++;
        } catch (Failed $e) {
            $failed[] = [$c['name'], $e->getMessage()];
        } catch (Throwable $e) {
            $failed[] = [$c['name'], get_class($e) . ': ' . $e->getMessage() . ' at ' . $e->getFile() . ':' . $e->getLine()];
        }
        try {
            $run?->join();
        } catch (Failed) {
            // reported with the case
        }
    }
    $where = ($target->cluster ? 'cluster' : 'server') . ($part !== 'all' ? ", $part part" : '');
    $why = [];
    if ($lacking !== []) {
        $why[] = 'they need ' . implode(' and ', $lacking) . ', which the server lacks';
    }
    if ($having !== []) {
        $why[] = 'they run only without ' . implode(' and ', $having) . ', which the server has';
    }
    $skip = $skipped > 0 ? ", $skipped skipped (" . implode('; ', $why) . ')' : '';
    echo "conformance php ($where): $passed passed, " . count($failed) . " failed$skip\n";
    foreach ($failed as [$name, $why]) {
        echo "- $name: $why\n";
    }
    return $passed > 0 && $failed === [] ? 0 : 1;
}

exit(main(array_slice($argv, 1)));
