"""The drivers: every operation is written once, as a generator of steps (an
op), and run by the sync driver (SyncRunner, on a redis.Redis or
redis.RedisCluster) or the asyncio driver (AsyncRunner, on their
redis.asyncio twins).

An op yields what it wants, and gets the answer back:

* a Call (one script) or a Cmd (one plain command): its reply; an error reply
  is raised into the op as its redis_patterns.errors class;
* a list of Calls and Cmds (a batch): one pipeline (on a cluster, redis-py
  sends one pipeline per node), the replies in order, each error reply as an
  exception object in its place;
* Sleep(seconds); Wait(channel, seconds): True when a message on the shard
  channel woke it (SSUBSCRIBE on the node of the channel's slot, subscribed
  at the op's first Wait and until the op ends, so a message published after
  a zero-timeout Wait is not missed), False at the timeout; with `to` (a
  waiter's token) only a message equal to it or to `released` wakes it (the
  others name other waiters);
* ENV: the Env (cluster or not); NODES: the names of the primaries.

Single calls and commands that need no node of their own (most steps of most
ops) go straight to the client; the first step of another kind hands the rest
of the run to the general driver.

EVALSHA answers NOSCRIPT after SCRIPT FLUSH or a restart: the script is loaded
(its SHA1 checked) and the call sent again; in a batch, when every call from
the first NOSCRIPT on failed that way, exactly that tail is sent again, else
PipelineInterrupted. A client made with decode_responses=True is accepted: the
driver talks through a twin without decoding (records and bitmaps are bytes).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import re
import time
from typing import (
    Any, Awaitable, Callable, Dict, Generator, Iterable, List, NamedTuple, Optional, Sequence, Tuple,
    TypeVar, Union, cast,
)

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.crc import key_slot

from . import errors

T = TypeVar("T")

#: An operation: a generator of steps, returning its result.
Op = Generator[Any, Any, T]

SyncClient = Union[redis.Redis, redis.RedisCluster]
AsyncClient = Union[redis.asyncio.Redis, redis.asyncio.RedisCluster]


class Script(NamedTuple):
    """A bundled script: name, SHA1, file below lua/, read-only, error codes, and
    each call of its source by line, in words (how an ACL refusal names the call)."""

    name: str
    sha1: str
    file: str
    read_only: bool
    errors: Tuple[str, ...]
    calls: Dict[int, str]


_LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lua")


#: scripts.SCRIPTS, once a call needed it.
_TABLE: Dict[str, Script] = {}


class Call:
    """One call of a bundled script with its keys and (encoded) arguments."""

    __slots__ = ("script", "keys", "args")

    def __init__(self, script: str, keys: Sequence[Union[str, bytes]], args: Sequence[Union[str, bytes]]) -> None:
        # the generated script functions pass lists of their own: kept, not copied
        self.script = script
        self.keys = keys if type(keys) is list else list(keys)
        self.args = args if type(args) is list else list(args)

    def info(self) -> Script:
        s = _TABLE.get(self.script)
        if s is None:
            from .scripts import SCRIPTS  # scripts imports this module: read at the first call

            _TABLE.update(SCRIPTS)
            s = _TABLE[self.script]
        return s

    def command(self, cluster: bool) -> Tuple[Any, ...]:
        s = self.info()
        name = "EVALSHA_RO" if s.read_only and not cluster else "EVALSHA"
        return (name, s.sha1, len(self.keys), *self.keys, *self.args)


class Cmd:
    """One plain command; `node` sends it to that primary (a name from NODES); `key`
    routes a keyless one (WAIT, INFO) to the primary of that key's slot, and a
    batch holding it goes to that node as one pipeline on one connection."""

    __slots__ = ("args", "node", "key")

    def __init__(self, *args: Any, node: Optional[str] = None, key: Optional[str] = None) -> None:
        self.args, self.node, self.key = args, node, key

    def command(self, cluster: bool) -> Tuple[Any, ...]:
        return tuple(self.args)


Request = Union[Call, Cmd]


class Sleep(NamedTuple):
    seconds: float


class Wait(NamedTuple):
    channel: str
    seconds: float
    to: Optional[str] = None


#: The message that wakes every waiter (a release with no waiter queued).
BROADCAST = "released"


def _wakes(w: Wait, msg: Any) -> bool:
    """Whether a pub/sub message wakes the wait `w` (one naming another waiter does not)."""
    if msg is None or msg.get("type") not in ("smessage", "message"):
        return False
    if w.to is None:
        return True
    data = msg.get("data")
    text = data.decode() if isinstance(data, bytes) else str(data)
    return text in (w.to, BROADCAST)


class Env(NamedTuple):
    cluster: bool


ENV = "env"
#: The node name of a keyless command any node answers (CONFIG GET, TIME).
ANY = "any"
NODES = "nodes"
SERVER = "server"


def source(script: Script) -> bytes:
    """The shipped script, as SCRIPT LOAD gets it."""
    with open(os.path.join(_LUA, script.file), "rb") as f:
        return f.read()


def text(v: Any) -> str:
    """A reply as str."""
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


# Argument checks of the generated script functions (scripts.py).


def _bad(name: str, reason: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(name, reason, None)


def _int(name: str, v: Any, lo: int, hi: int, reason: str) -> None:
    if type(v) is int and lo <= v <= hi:
        return
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or v > hi:
        raise _bad(name, reason)


def _float(name: str, v: Any, reason: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _bad(name, reason)


def _bool(name: str, v: Any, reason: str) -> None:
    if not isinstance(v, bool):
        raise _bad(name, reason)


def _enum(name: str, v: Any, words: Tuple[str, ...], reason: str) -> None:
    if v not in words:
        raise _bad(name, reason)


def _text(name: str, v: Any, non_empty: bool, reason: str) -> None:
    if type(v) is str and (v or not non_empty):
        return
    if not isinstance(v, (str, bytes, bytearray)):
        raise _bad(name, "must be a str or bytes")
    if non_empty and len(v) == 0:
        raise _bad(name, reason)


def hash_tag(name: Union[str, bytes, bytearray]) -> bytes:
    """The part of a key that picks its cluster slot."""
    b = name.encode() if isinstance(name, str) else bytes(name)
    start = b.find(b"{")
    if start >= 0:
        end = b.find(b"}", start + 1)
        if end > start + 1:
            return b[start + 1 : end]
    return b


#: str pairs (value, key) found to carry the same hash tag: a pattern checks its channel
#: against its key at every release, always the same two (emptied past 1,024 pairs).
_SAME_TAG: Dict[Tuple[Any, Any], None] = {}


def _tagged(name: str, v: Any, key: Any, reason: str) -> None:
    strs = type(v) is str and type(key) is str
    if strs and (v, key) in _SAME_TAG:
        return
    _text(name, v, True, reason)
    if not isinstance(key, (str, bytes, bytearray)) or hash_tag(v) != hash_tag(key):
        raise _bad(name, reason)
    if strs:
        if len(_SAME_TAG) >= 1024:
            _SAME_TAG.clear()
        _SAME_TAG[(v, key)] = None


def _many(name: str, v: Any) -> Any:
    if type(v) is list:
        return v
    if isinstance(v, (str, bytes, bytearray)) or not hasattr(v, "__iter__"):
        raise _bad(name, "must be a list")
    return v


def _key(name: str, k: Any) -> Any:
    if type(k) is str:
        return k
    if not isinstance(k, (str, bytes)):
        raise _bad(name, "a key must be a str or bytes")
    return k


def _keys(name: str, ks: Any) -> List[Any]:
    return [_key(name, k) for k in _many(name, ks)]


def slot(key: Union[str, bytes]) -> int:
    """The cluster slot of a key (or channel)."""
    return int(key_slot(key.encode() if isinstance(key, str) else key))


# Errors.


def error_of(script: Optional[Script], exc: BaseException) -> BaseException:
    """The redis_patterns error of an error reply to a call of `script` (None: a command)."""
    if isinstance(exc, errors.RedisPatternsError) or not isinstance(exc, redis.exceptions.ResponseError):
        return exc
    msg = str(exc.args[0]) if exc.args else str(exc)
    code, _, full = msg.partition(" ")
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", code) or msg.startswith("ACL failure in script"):
        # redis-py strips the "ERR " of a plain ERR reply (Valkey's "ERR ACL failure in script" too)
        code, full = "ERR", msg
    at = full.find(" script: ")
    detail = full[:at].rstrip() if at >= 0 else full
    if isinstance(exc, redis.exceptions.NoScriptError):
        code = "NOSCRIPT"
    name = script.name if script is not None else None
    if script is not None and code in script.errors:
        return errors.from_code(code, detail, script.name)
    if code == "MAXMEMORY" and name is not None:
        return errors.from_code(code, detail, name)
    denied = _denied_call(script, full) if script is not None and _is_denial(code, full) else None
    return errors.Server(code, f"{detail} ({denied})" if denied else detail, name)


def _is_denial(code: str, detail: str) -> bool:
    """NOPERM, or the plain ERR with which Redis 7.0 and Valkey answer a command
    the user's ACL denies inside a script: the same refusal."""
    return code == "NOPERM" or code == "ERR" and (
        any(p in detail for p in ("can't run this command", "can't publish to the channel",
                                  "can't access at least one of the keys")) or detail.startswith("ACL failure in script"))


def _denied_call(script: Script, detail: str) -> Optional[str]:
    """What a script's call that the user's ACL denied was: the server names the line
    (`@user_script:<n>`), the script's table of calls names the command and, through
    the header, its key or channel. None when that line holds no call."""
    at = re.search(r"@user_script:([0-9]+)", detail)
    what = script.calls.get(int(at.group(1))) if at else None
    return f"denied: {what}, line {at.group(1)} of {script.name}" if at and what else None


def _is_noscript(reply: Any) -> bool:
    return isinstance(reply, redis.exceptions.NoScriptError) or (
        isinstance(reply, redis.exceptions.ResponseError) and str(reply).startswith("NOSCRIPT")
    )


def _checked_load(script: Script, sha: Any) -> None:
    if text(sha).lower() != script.sha1:
        raise errors.ShaMismatch(script.name, script.sha1, text(sha))


def _script_of(req: Request) -> Optional[Script]:
    return req.info() if isinstance(req, Call) else None


# The I/O of a run, written once: _steps is a generator of I/O requests
# (kind, argument) that a driver answers with (reply, None) or (None, error).

_SLEEP, _COMMAND, _PIPELINE, _LOAD, _WAIT, _NODES, _DONE = "sleep", "command", "pipeline", "load", "wait", "nodes", "done"

Io = Generator[Tuple[str, Any], Tuple[Any, Optional[BaseException]], Any]


def _reply(outcome: Tuple[Any, Optional[BaseException]]) -> Any:
    reply, error = outcome
    if error is not None:
        raise error
    return reply


def _one(req: Request, failed: Optional[redis.exceptions.ResponseError] = None) -> Io:
    """One request; `failed`: the error reply its first send already got."""
    try:
        if failed is not None:
            raise failed
        return _reply((yield _COMMAND, req))
    except redis.exceptions.ResponseError as e:
        if isinstance(req, Call) and _is_noscript(e):
            s = req.info()
            _checked_load(s, _reply((yield _LOAD, source(s))))
            try:
                return _reply((yield _COMMAND, req))
            except redis.exceptions.ResponseError as again:
                raise error_of(s, again) from None
        raise error_of(_script_of(req), e) from None


def _batch(batch: List[Request]) -> Io:
    done: List[Any] = []
    while batch:
        replies = list(_reply((yield _PIPELINE, batch)))
        first = next((i for i, r in enumerate(replies) if _is_noscript(r)), None)
        if first is None:
            return done + [error_of(_script_of(q), r) if isinstance(r, BaseException) else r for q, r in zip(batch, replies)]
        tail = range(first, len(batch))
        if not all(isinstance(batch[i], Call) and _is_noscript(replies[i]) for i in tail):
            raise errors.PipelineInterrupted(first, len(batch))
        done += [error_of(_script_of(q), r) if isinstance(r, BaseException) else r for q, r in zip(batch[:first], replies[:first])]
        loads = {cast(Call, batch[i]).script: cast(Call, batch[i]).info() for i in tail}
        for s in loads.values():
            _checked_load(s, _reply((yield _LOAD, source(s))))
        batch = batch[first:]
    return done


#: No step (the default `first` of _steps).
_NO_STEP: Any = object()


def _steps(op: Op[Any], env: Env, first: Any = _NO_STEP) -> Io:
    """The run of `op`; `first`: the step it already yielded (a driver's direct path ran the ones before)."""
    reply: Any = None
    exc: Optional[BaseException] = None
    while True:
        if first is not _NO_STEP:
            req, first = first, _NO_STEP
        else:
            try:
                req = op.throw(exc) if exc is not None else op.send(reply)
            except StopIteration as stop:
                yield _DONE, stop.value
                return
        reply, exc = None, None
        try:
            if isinstance(req, Sleep):
                _reply((yield _SLEEP, req.seconds))
            elif isinstance(req, Wait):
                reply = _reply((yield _WAIT, req))
            elif req == ENV:
                reply = env
            elif req == NODES:
                reply = _reply((yield _NODES, None))
            elif isinstance(req, list):
                reply = yield from _batch(req)
            else:
                reply = yield from _one(req)
        except (errors.RedisPatternsError, redis.exceptions.ResponseError) as e:
            exc = e


def _direct(req: Any, cluster: bool) -> bool:
    """Whether a driver sends the step `req` straight to its client: one script call, or one
    command that needs no node of its own (the steps of most ops)."""
    kind = type(req)
    return kind is Call or kind is Cmd and not (cluster and (req.node is not None or req.key is not None))


_Outcome = Tuple[Any, Optional[BaseException]]


def _raw_twin(client: Any, asyncio_client: bool) -> Any:
    """`client`, or a twin of it that does not decode replies."""
    kwargs = client.get_connection_kwargs()
    if not kwargs.get("decode_responses"):
        return client
    if isinstance(client, (redis.RedisCluster, redis.asyncio.RedisCluster)):
        node = client.get_default_node()
        extra = {k: v for k, v in kwargs.items() if k in ("username", "password", "socket_timeout", "ssl")}
        cls = redis.asyncio.RedisCluster if asyncio_client else redis.RedisCluster
        return cls(host=node.host, port=int(node.port), decode_responses=False, **extra)
    kwargs = dict(kwargs, decode_responses=False)
    kwargs.pop("encoding_errors", None)
    if asyncio_client:
        return redis.asyncio.Redis(connection_pool=redis.asyncio.ConnectionPool(**kwargs))
    return redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))


def _node_kwargs(client: Any) -> Dict[str, Any]:
    kwargs = dict(client.get_connection_kwargs())
    kwargs["decode_responses"] = False
    for k in ("host", "port", "connection_class", "retry", "redis_connect_func", "parser_class", "lib_name", "lib_version"):
        kwargs.pop(k, None)
    return {k: v for k, v in kwargs.items() if k in ("username", "password", "db", "socket_timeout", "ssl")}


#: A kept subscription: (channel, node), its owner (the process; an asyncio one's event loop
#: too), the PubSub, and the client of the channel's node it owns (a cluster's; else None).
_Kept = Tuple[Tuple[str, str], Any, Any, Any]


class _Subscription:
    """The subscriptions of one op run, per channel, written once for both drivers: each
    method is a generator that yields every redis-py call it makes (the sync driver has
    its result already and sends it back, the asyncio driver awaits it first; see _sync
    and _async).

    A subscription outlives its run by one: the runner keeps the last one
    (still subscribed, in `idle`) and the next run that waits on the same
    channel takes it over, reading past the messages that came meanwhile,
    while one on another channel closes it first. So a woken waiter's
    acquire returns without closing its connection first (redis-py's
    PubSub.close() takes a disconnect), and the next wait costs no connect."""

    def __init__(self, client: Any, cluster: bool, idle: List[_Kept], aio: bool) -> None:
        self.client, self.cluster, self.idle, self.aio = client, cluster, idle, aio
        self.subs: Dict[str, Tuple[Any, Any]] = {}

    def wait(self, w: Wait) -> Generator[Any, Any, bool]:
        got = self.subs.get(w.channel)
        sub = got[0] if got is not None else (yield from self._subscribe(w.channel))
        deadline = time.monotonic() + w.seconds
        while True:
            left = deadline - time.monotonic()
            msg = yield sub.get_message(ignore_subscribe_messages=True, timeout=max(left, 0.0))
            if _wakes(w, msg):
                return True
            if left <= 0:
                return False

    def _where(self, channel: str) -> str:
        """The node a subscription to `channel` goes to (a cluster's node of its slot)."""
        return self.client.get_node_from_key(channel).name if self.cluster else SERVER

    def _owner(self) -> Any:
        """Who may use a kept subscription: this process (not a fork's child) and, for an
        asyncio one, the event loop its connection belongs to."""
        return (os.getpid(), asyncio.get_running_loop()) if self.aio else os.getpid()

    def _taken_over(self, channel: str) -> Generator[Any, Any, Optional[Tuple[Any, Any]]]:
        """The runner's idle subscription when it is on `channel` (of this owner, on the
        node of its slot now), its pending messages read past; else None (an idle one on
        another channel, or on a node the slot left, closed; another owner's left to it)."""
        try:
            kept, owner, sub, owned = self.idle.pop()
        except IndexError:
            return None
        if owner != self._owner():
            return None
        if kept == (channel, self._where(channel)):
            try:
                while (yield sub.get_message(timeout=0.0)) is not None:
                    pass
                return sub, owned
            except redis.exceptions.RedisError:
                pass
        yield from self._close(sub, owned)
        return None

    def _subscribe(self, channel: str) -> Generator[Any, Any, Any]:
        got = yield from self._taken_over(channel)
        if got is None:
            owned: Any = None
            conn = self.client
            if self.cluster:
                node = self.client.get_node_from_key(channel)
                cls = redis.asyncio.Redis if self.aio else redis.Redis
                owned = conn = cls(host=node.host, port=node.port, **_node_kwargs(self.client))
            sub = conn.pubsub()
            try:
                yield sub.ssubscribe(channel)
                deadline = time.monotonic() + 2.0
                while time.monotonic() < deadline:
                    msg = yield sub.get_message(timeout=0.5)
                    if msg is not None and msg.get("type") == "ssubscribe":
                        break
            except BaseException:  # an error, an interrupt or a cancellation while subscribing: closed now
                yield from self._close(sub, owned)
                raise
            got = (sub, owned)
        self.subs[channel] = got
        return got[0]

    def close(self) -> Generator[Any, Any, None]:
        for channel, (sub, owned) in self.subs.items():
            try:
                if not self.idle:
                    self.idle.append(((channel, self._where(channel)), self._owner(), sub, owned))
                    continue
            except redis.exceptions.RedisError:
                pass  # the slot's node unknown: not kept
            yield from self._close(sub, owned)

    def _close(self, sub: Any, owned: Any) -> Generator[Any, Any, None]:
        try:
            yield sub.aclose() if self.aio else sub.close()
            if owned is not None:
                yield owned.aclose() if self.aio else owned.close()
        except redis.exceptions.RedisError:
            pass


def _sync(calls: Generator[Any, Any, T]) -> T:
    """Runs a generator of redis-py calls on the sync driver: each call ran where it
    stands (its error raised there), so what it yields is the reply, sent back.

    An exception raised here, between two of its steps (a KeyboardInterrupt can
    land on either side of a send), is thrown into the generator where it stands
    before it goes on, so the run ends now as it would have ended inside (its
    subscriptions closed or kept for the next run, see _Subscription), not when
    the garbage collector finds the generator."""
    try:
        reply = next(calls)
        while True:
            reply = calls.send(reply)
    except StopIteration as stop:
        return cast(T, stop.value)
    except BaseException as e:
        if inspect.getgeneratorstate(calls) == inspect.GEN_SUSPENDED:  # it came from here, not from a step
            _ended(calls, e)
        raise


def _ended(calls: Generator[Any, Any, Any], e: BaseException) -> None:
    """Throws `e` into the suspended generator `calls` and runs what its finally
    blocks still call (their replies sent back, as _sync does), until it ends."""
    try:
        reply = calls.throw(e)
        while True:
            reply = calls.send(reply)
    except BaseException:  # e itself, coming back out; or its cleanup's own failure: e is raised
        pass


async def _async(calls: Generator[Any, Any, T]) -> T:
    """Runs a generator of redis-py calls on the asyncio driver: each yields an awaitable;
    its reply is sent back, its error (cancellation too) raised where the call stands."""
    try:
        step = next(calls)
        while True:
            try:
                reply = await step
            except BaseException as e:
                step = calls.throw(e)
            else:
                step = calls.send(reply)
    except StopIteration as stop:
        return cast(T, stop.value)


def _nodes(client: Any, cluster: bool) -> List[str]:
    if not cluster:
        return [SERVER]
    return sorted(f"{n.host}:{n.port}" for n in client.get_primaries())


def _only(reply: Any, node: Any) -> Any:
    """The reply of a command sent to `node` (redis-py may key it by the node's name)."""
    name = node.name
    if isinstance(reply, dict) and set(reply) == {name}:
        return reply[name]
    if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], dict) and set(reply[0]) == {name}:
        return [reply[0][name], reply[1]]  # SCAN: ({node: cursor}, keys)
    return reply


def _routed(batch: List[Request]) -> Optional[str]:
    """The key a batch holding a keyless command routed by a key goes by (None: none)."""
    return next((r.key for r in batch if isinstance(r, Cmd) and r.key is not None), None)


def _node(client: Any, name: str) -> Any:
    if name == ANY:
        return client.get_default_node()
    host, _, port = name.rpartition(":")
    return client.get_node(host=host, port=int(port))


class _Runner:
    """What both drivers do, written once as generators of redis-py calls (as
    _Subscription's): a direct send's NOSCRIPT retry, the general driver. A driver
    makes the calls of its kind (`_io`) and runs the generators; its direct path (the
    loop of its __call__, the same in both but for the awaits) calls the client itself,
    without a generator between the op and redis-py: most runs are one or two script
    calls, and a generator's send per step was a tenth of the client's CPU per call."""

    def __init__(self, client: Any, aio: bool) -> None:
        self.client: Any = _raw_twin(client, aio)
        self.cluster = isinstance(client, (redis.RedisCluster, redis.asyncio.RedisCluster))
        self.aio = aio
        #: the last run's subscription, kept for the next (see _Subscription)
        self._idle: List[_Kept] = []

    def _io(self, kind: str, arg: Any) -> Any:
        raise NotImplementedError

    def _failed(self, req: Request, e: redis.exceptions.ResponseError) -> Generator[Any, Any, _Outcome]:
        """The outcome of a request whose send got the error reply `e` (NOSCRIPT: loaded, sent again)."""
        io = _one(req, e)
        outcome: Optional[_Outcome] = None
        try:
            while True:
                kind, arg = io.send(outcome)  # type: ignore[arg-type]
                outcome = yield self._io(kind, arg)
        except StopIteration as stop:
            return stop.value, None
        except (errors.RedisPatternsError, redis.exceptions.ResponseError) as err:
            return None, err

    def _run(self, op: Op[T], first: Any) -> Generator[Any, Any, T]:
        steps = _steps(op, Env(self.cluster), first)
        subs = _Subscription(self.client, self.cluster, self._idle, self.aio)
        outcome: Optional[_Outcome] = None
        try:
            while True:
                kind, arg = steps.send(outcome)  # type: ignore[arg-type]
                if kind == _DONE:
                    return cast(T, arg)
                if kind != _WAIT:
                    outcome = yield self._io(kind, arg)
                    continue
                try:
                    outcome = (yield from subs.wait(arg)), None
                except redis.exceptions.ResponseError as e:
                    outcome = None, e
        finally:
            yield from subs.close()


class SyncRunner(_Runner):
    """Runs ops on a redis.Redis or redis.RedisCluster."""

    def __init__(self, client: SyncClient) -> None:
        if not isinstance(client, (redis.Redis, redis.RedisCluster)):
            raise TypeError("expected a redis.Redis or redis.RedisCluster (redis_patterns.asyncio takes redis.asyncio clients)")
        super().__init__(client, False)

    def __call__(self, op: Op[T]) -> T:
        # The direct path (AsyncRunner's, with awaits): single requests go straight to the
        # client; the first other step hands the rest of the run to _run (batches, waits,
        # subscriptions).
        cluster, execute = self.cluster, self.client.execute_command
        reply: Any = None
        exc: Optional[BaseException] = None
        while True:
            try:
                req = op.send(reply) if exc is None else op.throw(exc)
            except StopIteration as stop:
                return cast(T, stop.value)
            if not _direct(req, cluster):
                return _sync(self._run(op, req))
            try:
                reply, exc = execute(*req.command(cluster)), None
            except redis.exceptions.ResponseError as e:
                reply, exc = _sync(self._failed(req, e))

    def _io(self, kind: str, arg: Any) -> _Outcome:
        c = self.client
        try:
            if kind == _SLEEP:
                time.sleep(arg)
                return None, None
            if kind == _NODES:
                return _nodes(c, self.cluster), None
            if kind == _COMMAND:
                if isinstance(arg, Cmd) and arg.node is not None and self.cluster:
                    node = _node(c, arg.node)
                    return _only(c.execute_command(*arg.command(True), target_nodes=node), node), None
                if isinstance(arg, Cmd) and arg.key is not None and self.cluster:
                    node = c.get_node_from_key(arg.key)
                    return _only(c.execute_command(*arg.command(True), target_nodes=node), node), None
                return c.execute_command(*arg.command(self.cluster)), None
            if kind == _LOAD:
                return c.script_load(arg), None
            routed = _routed(arg)
            if self.cluster and routed is not None:
                # One pipeline on one connection to the key's node (WAIT counts that connection's writes).
                pipe = c.get_redis_connection(c.get_node_from_key(routed)).pipeline(transaction=False)
                for req in arg:
                    pipe.execute_command(*req.command(True))
                return pipe.execute(raise_on_error=False), None
            if self.cluster and any(isinstance(r, Cmd) and r.node is not None for r in arg):
                # Commands for a named node (SCAN of each primary): one each.
                out: List[Any] = []
                for req in arg:
                    try:
                        out.append(self._io(_COMMAND, req)[0])
                    except redis.exceptions.ResponseError as e:
                        out.append(e)
                return out, None
            pipe = c.pipeline(transaction=False)
            for req in arg:
                pipe.execute_command(*req.command(self.cluster))
            return pipe.execute(raise_on_error=False), None
        except redis.exceptions.ResponseError as e:
            return None, e


class AsyncRunner(_Runner):
    """Runs ops on a redis.asyncio.Redis or redis.asyncio.RedisCluster."""

    def __init__(self, client: AsyncClient) -> None:
        if not isinstance(client, (redis.asyncio.Redis, redis.asyncio.RedisCluster)):
            raise TypeError("expected a redis.asyncio.Redis or redis.asyncio.RedisCluster (redis_patterns takes sync clients)")
        super().__init__(client, True)

    async def __call__(self, op: Op[T]) -> T:
        # The direct path, as SyncRunner's.
        cluster, execute = self.cluster, self.client.execute_command
        reply: Any = None
        exc: Optional[BaseException] = None
        while True:
            try:
                req = op.send(reply) if exc is None else op.throw(exc)
            except StopIteration as stop:
                return cast(T, stop.value)
            if not _direct(req, cluster):
                return await _async(self._run(op, req))
            try:
                reply, exc = await execute(*req.command(cluster)), None
            except redis.exceptions.ResponseError as e:
                reply, exc = await _async(self._failed(req, e))

    async def _io(self, kind: str, arg: Any) -> _Outcome:
        c = self.client
        try:
            if kind == _SLEEP:
                await asyncio.sleep(arg)
                return None, None
            if kind == _NODES:
                if self.cluster:
                    await c.initialize()
                return _nodes(c, self.cluster), None
            if kind == _COMMAND:
                if isinstance(arg, Cmd) and (arg.node is not None or arg.key is not None) and self.cluster:
                    await c.initialize()  # the async cluster learns its nodes lazily
                    node = _node(c, arg.node) if arg.node is not None else c.get_node_from_key(arg.key)
                    return _only(await c.execute_command(*arg.command(True), target_nodes=node), node), None
                return await c.execute_command(*arg.command(self.cluster)), None
            if kind == _LOAD:
                return await c.script_load(arg), None
            routed = _routed(arg)
            if self.cluster and routed is not None:
                # One pipeline on one connection to the key's node (WAIT counts that connection's writes).
                await c.initialize()
                node = c.get_node_from_key(routed)
                conn = redis.asyncio.Redis(host=node.host, port=node.port, **_node_kwargs(c))
                try:
                    pipe = conn.pipeline(transaction=False)
                    for req in arg:
                        pipe.execute_command(*req.command(True))
                    return await pipe.execute(raise_on_error=False), None
                finally:
                    await conn.aclose()
            if self.cluster and any(isinstance(r, Cmd) and r.node is not None for r in arg):
                out: List[Any] = []
                for req in arg:
                    got, err = await self._io(_COMMAND, req)
                    out.append(err if err is not None else got)
                return out, None
            pipe = c.pipeline(transaction=False)
            for req in arg:
                pipe.execute_command(*req.command(self.cluster))
            return await pipe.execute(raise_on_error=False), None
        except redis.exceptions.ResponseError as e:
            return None, e


Runner = Union[SyncRunner, AsyncRunner]


def one(req: Request) -> Op[Any]:
    """An op of one request."""
    return (yield req)


def each(replies: Iterable[Any]) -> List[Any]:
    """The replies of a batch, the first error raised."""
    out = list(replies)
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return out


__all__ = [
    "ANY", "AsyncRunner", "Call", "Cmd", "ENV", "Env", "NODES", "Op", "Runner", "SERVER", "Script", "Sleep", "SyncRunner",
    "Wait", "each", "error_of", "hash_tag", "one", "slot", "source", "text", "Awaitable", "Callable",
]
