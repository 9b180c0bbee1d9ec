"""The conformance cases (tests/conformance/cases.json, format in its README)
on the generated Python client: every operation dispatched by name to
redis_patterns (sync, or redis_patterns.asyncio with --asyncio), on one server
or a cluster. An operation the client lacks fails its case.

    python3 conformance.py CASES URL [URL...] [--cluster] [--asyncio] [--part all|write|read]

Prints `conformance python (<target>): N passed, M failed` and the failures;
exits 1 when a case failed or none ran.
"""

import asyncio
import dataclasses
import datetime
import json
import keyword
import sys
import threading
import time
import traceback

import redis
import redis.asyncio

import redis_patterns
import redis_patterns.asyncio as rp_async
from redis_patterns.errors import RedisPatternsError


def ident(name):
    return name + "_" if keyword.iskeyword(name) else name


def load_manifest():
    import os

    path = os.path.join(os.path.dirname(redis_patterns.__file__), "manifest.json")
    with open(path) as f:
        return json.load(f)


def load_api():
    manifest = load_manifest()
    classes = {}
    for p in manifest["patterns"]:
        for c in p["api"].get("classes", []):
            classes[c["name"]] = c
    return classes


CLASSES = load_api()


def to_json(v):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: to_json(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return {"$hex": bytes(v).hex()}
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if type(v).__name__ in CLASSES:
        return describe(v)
    return v


def describe(obj):
    c = CLASSES[type(obj).__name__]
    return {g["name"]: to_json(getattr(obj, ident(g["name"]))) for g in c["getters"]}


def from_json(v):
    if isinstance(v, dict) and set(v) == {"$hex"}:
        return bytes.fromhex(v["$hex"])
    if isinstance(v, list):
        return [from_json(x) for x in v]
    if isinstance(v, dict):
        return {k: from_json(x) for k, x in v.items()}
    return v


def canonical_hex(h):
    return to_json(bytes.fromhex(h))


def compact(v):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= 300 else s[:300] + "..."


def matches(want, got):
    if isinstance(want, dict) and len(want) == 1 and next(iter(want)).startswith("$"):
        k, arg = next(iter(want.items()))
        if k == "$any":
            return True
        if k == "$range":
            return isinstance(got, (int, float)) and not isinstance(got, bool) and arg[0] <= got <= arg[1]
        if k == "$above":
            return isinstance(got, (int, float)) and not isinstance(got, bool) and got > arg
        if k == "$len":
            return isinstance(got, list) and len(got) == arg
        if k == "$hex":
            return got == canonical_hex(arg)
        if k == "$prefix":
            return isinstance(got, str) and got.startswith(arg)
        if k == "$type":
            return {
                "str": lambda: isinstance(got, str),
                "int": lambda: isinstance(got, int) and not isinstance(got, bool),
                "float": lambda: isinstance(got, (int, float)) and not isinstance(got, bool),
                "bool": lambda: isinstance(got, bool),
                "list": lambda: isinstance(got, list),
            }[arg]()
        if k == "$unordered":
            return isinstance(got, list) and sorted(map(compact, arg)) == sorted(map(compact, got))
        raise ValueError(f"unknown matcher {k}")
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(matches(w, g) for w, g in zip(want, got))
    if isinstance(want, dict):
        return isinstance(got, dict) and set(want) == set(got) and all(matches(want[k], got[k]) for k in want)
    if isinstance(want, bool) or isinstance(got, bool):
        return want == got and type(want) is type(got)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return float(want) == float(got)
    return want == got


class Failed(Exception):
    pass


class Target:
    def __init__(self, urls, cluster, use_asyncio):
        self.urls, self.cluster, self.asyncio = urls, cluster, use_asyncio
        self.nodes = [redis.Redis.from_url(u) for u in urls]

    def client(self, sync=False):
        if self.asyncio and not sync:
            cls = redis.asyncio.RedisCluster if self.cluster else redis.asyncio.Redis
        else:
            cls = redis.RedisCluster if self.cluster else redis.Redis
        return cls.from_url(self.urls[0])

    def flush(self):
        for n in self.nodes:
            try:
                n.flushall(asynchronous=False)
            except redis.exceptions.ResponseError:
                pass

    def capabilities(self):
        """The manifest's capabilities the server has: COMMAND INFO of their commands answers no nil."""
        node = redis.Redis.from_url(self.urls[0])
        node.response_callbacks.pop("COMMAND", None)  # the raw reply, nil for an unknown command
        have = set()
        for c in load_manifest()["capabilities"]:
            words = [w.split(" ")[0] for w in c["commands"]]
            try:
                info = node.execute_command("COMMAND", "INFO", *words)
            except redis.exceptions.ResponseError:
                continue
            if " " not in "".join(c["commands"]) and all(x is not None for x in info):
                have.add(c["name"])
        return have

    def keys(self):
        out = []
        for n in self.nodes:
            if n.info("replication").get("role") == "slave":
                continue
            out.extend(k.decode() for k in n.keys("*"))
        return sorted(out)


def today(offset):
    return (datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=offset)).isoformat()


class Case:
    def __init__(self, target, loop):
        self.target, self.loop = target, loop
        self.client = target.client(sync=True) if loop is None else loop.run_until_complete(self._aclient())
        self.saved = {}
        self.threads = []
        self.errors = []
        self.mod = rp_async if loop is not None else redis_patterns

    async def _aclient(self):
        return self.target.client()

    def wait(self, v):
        if self.loop is not None and asyncio.iscoroutine(v):
            return self.loop.run_until_complete(v)
        return v

    def resolve(self, v):
        if isinstance(v, dict) and set(v) == {"$ref"}:
            return self.lookup(v["$ref"])
        if isinstance(v, dict) and "$today" in v:
            day = today(v["$today"])
            return v["in"].replace("@", day) if "in" in v else day
        if isinstance(v, dict):
            return {k: self.resolve(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.resolve(x) for x in v]
        return v

    def lookup(self, path):
        first, *rest = path.split(".")
        if first not in self.saved:
            raise Failed(f"nothing saved as {first}")
        v = self.saved[first]
        v = describe(v) if type(v).__name__ in CLASSES else to_json(v)
        for p in rest:
            v = v[int(p)] if p.isdigit() else v[p]
        return v

    def steps(self, steps):
        for i, s in enumerate(steps):
            try:
                self.step(s)
            except Failed as e:
                raise Failed(f"step {i + 1} {compact(s)}: {e}") from None

    def step(self, s):
        if "sleep_ms" in s:
            time.sleep(s["sleep_ms"] / 1000)
            return
        if "spawn" in s:
            return self.spawn(s["spawn"])
        if "keys" in s:
            return self.check(s, ("ok", self.target.keys()), "keys")
        if "redis" in s:
            cmd = [str(x) if not isinstance(x, str) else x for x in self.resolve(s["redis"])]
            try:
                got = ("ok", to_json(self.wait(self.client.execute_command(*cmd))))
            except redis.exceptions.ResponseError as e:
                got = ("err", ("Server", {"message": str(e)}, str(e)))
            return self.check(s, got)
        args = {k: from_json(v) for k, v in self.resolve(s.get("args", {})).items()}
        outcome = self.call(s, args)
        if outcome[0] == "ok":
            name = s.get("as") or s.get("save")
            if name:
                self.saved[name] = outcome[1]
            outcome = ("ok", to_json(outcome[1]))
        self.check(s, outcome)

    def call(self, s, args):
        kwargs = {ident(k): v for k, v in args.items()}
        try:
            if "new" in s:
                cls = getattr(self.mod, s["new"], None)
                if cls is None:
                    raise Failed(f"the client has no class {s['new']}")
                return "ok", cls(self.client, **kwargs)
            on, op = s["on"], s["op"]
            target = self.saved.get(on)
            if target is None:
                target = getattr(self.mod, on, None)
                if target is None:
                    raise Failed(f"the client has no class {on}")
                fn = getattr(target, ident(op), None)
                if fn is None:
                    raise Failed(f"the client lacks {on}.{op}")
                return "ok", self.wait(fn(self.client, **kwargs))
            fn = getattr(target, ident(op), None)
            if fn is None:
                raise Failed(f"the client lacks {type(target).__name__}.{op}")
            if op == "hold":
                return "ok", self.hold(fn, kwargs, s)
            return "ok", self.wait(fn(**kwargs))
        except RedisPatternsError as e:
            return "err", (type(e).kind, to_json(e.data()), str(e))
        except redis.exceptions.RedisError as e:
            return "err", ("Server", {"message": str(e)}, str(e))

    def hold(self, fn, kwargs, s):
        body = s.get("body", [])
        if self.loop is None:
            with fn(**kwargs) as held:
                self.steps(body)
            return {"token": held.token, "fence": held.fence, "lost": held.lost}

        async def run():
            async with fn(**kwargs) as held:
                for b in body:
                    await asyncio.get_running_loop().run_in_executor(None, self._step_in_thread, b)
            return {"token": held.token, "fence": held.fence, "lost": held.lost}

        return self.loop.run_until_complete(run())

    def _step_in_thread(self, s):
        # A body step of an async hold runs on a sync twin (the loop is busy renewing).
        twin = Case(self.target, None)
        twin.saved = {k: v for k, v in self.saved.items() if type(v).__name__ not in CLASSES}
        for k, v in self.saved.items():
            if type(v).__name__ in CLASSES:
                twin.saved[k] = getattr(redis_patterns, type(v).__name__)._of(
                    redis_patterns._driver.SyncRunner(twin.client), v._core)
        twin.step(s)

    def spawn(self, spawn):
        steps = spawn.get("steps", [])
        after = spawn.get("after_ms", 0) / 1000

        def run():
            time.sleep(after)
            twin = Case(self.target, None)
            for k, v in self.saved.items():
                if type(v).__name__ in CLASSES:
                    twin.saved[k] = getattr(redis_patterns, type(v).__name__)._of(
                        redis_patterns._driver.SyncRunner(twin.client), v._core)
                else:
                    twin.saved[k] = v
            try:
                twin.steps(steps)
            except Exception as e:
                self.errors.append(f"spawned: {e}")

        t = threading.Thread(target=run)
        t.start()
        self.threads.append(t)

    def join(self):
        for t in self.threads:
            t.join()
        if self.errors:
            raise Failed("; ".join(self.errors))

    def check(self, s, outcome, what="result"):
        kind = s.get("error")
        if outcome[0] == "ok":
            if kind:
                raise Failed(f"expected error {kind}, got {compact(outcome[1])}")
            if "expect" in s:
                want = self.resolve(s["expect"] if what != "keys" else s["keys"])
                if not matches(want, outcome[1]):
                    raise Failed(f"expected {compact(want)}, got {compact(outcome[1])}")
            elif what == "keys":
                want = self.resolve(s["keys"])
                if not matches(want, outcome[1]):
                    raise Failed(f"expected keys {compact(want)}, got {compact(outcome[1])}")
            return
        got_kind, data, message = outcome[1]
        if not kind:
            raise Failed(f"failed: {got_kind} {compact(data)} ({message})")
        if got_kind != kind:
            raise Failed(f"expected error {kind}, got {got_kind} {compact(data)} ({message})")
        for k, w in self.resolve(s.get("data", {})).items():
            if not matches(w, data.get(k)):
                raise Failed(f"error data {k}: expected {compact(w)}, got {compact(data.get(k))}")


def select(steps, part):
    split = next((i for i, s in enumerate(steps) if s.get("part") == "read"), None)
    if part == "all" or split is None:
        return [s for s in steps if "part" not in s]
    return steps[:split] if part == "write" else steps[split + 1:]


def main(argv):
    flags = [a for a in argv if a.startswith("--")]
    plain = [a for a in argv if not a.startswith("--")]
    part = next((f.split("=", 1)[1] for f in flags if f.startswith("--part=")), "all")
    cases_path, urls = plain[0], plain[1:]
    target = Target(urls, "--cluster" in flags, "--asyncio" in flags)
    with open(cases_path) as f:
        cases = json.load(f)["cases"]
    passed, failed = 0, []
    if part != "all":
        cases = [c for c in cases if any(s.get("part") == "read" for s in c["steps"])]
        if part == "write":
            target.flush()
    have = target.capabilities()
    # A case runs where the server has every capability of its needs and
    # none of its lacks (a refusal where they are missing).
    lacking = sorted({n for c in cases for n in c.get("needs", []) if n not in have})
    having = sorted({n for c in cases for n in c.get("lacks", []) if n in have})
    skipped = [c for c in cases if any(n in lacking for n in c.get("needs", []))
               or any(n in having for n in c.get("lacks", []))]
    cases = [c for c in cases if c not in skipped]
    for c in cases:
        if part == "all":
            target.flush()
        loop = asyncio.new_event_loop() if target.asyncio else None
        case = None
        try:
            case = Case(target, loop)
            case.steps(select(c["steps"], part))
            case.join()
            passed += 1
        except Failed as e:
            failed.append((c["name"], str(e)))
        except Exception:
            failed.append((c["name"], traceback.format_exc(limit=3)))
        finally:
            if loop is not None:
                try:
                    if case is not None:
                        loop.run_until_complete(case.client.aclose())
                except Exception:
                    pass
                loop.close()
    where = ("cluster" if target.cluster else "server") + (", asyncio" if target.asyncio else "") + (
        f", {part} part" if part != "all" else "")
    why = ([f"they need {' and '.join(lacking)}, which the server lacks"] if lacking else []) + (
        [f"they run only without {' and '.join(having)}, which the server has"] if having else [])
    skip = f", {len(skipped)} skipped ({'; '.join(why)})" if skipped else ""
    print(f"conformance python ({where}): {passed} passed, {len(failed)} failed{skip}")
    for name, why in failed:
        print(f"- {name}: {why}")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
