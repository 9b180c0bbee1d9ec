"""The call core: script calls, batches, and the two drivers.

Every operation of the pattern helpers is written once, as a generator that
yields what it wants sent -- a Call (one script), a Cmd (one plain command),
a list of them (a batch, sent as one pipeline) or a Sleep -- and gets the
replies back. Its run (NOSCRIPT reloads, errors) is written once too, as a
generator of I/O requests; run_sync does that I/O on a redis.Redis,
run_async on a redis.asyncio.Redis: the helpers call self._run(op), which is
the driver of the client they were given, so the same helper is sync or
async.

A single call's error is raised into the operation; a batch's replies hold
each command's error as an exception object in its place. EVALSHA
(EVALSHA_RO for read-only scripts) is answered NOSCRIPT after SCRIPT FLUSH or
a restart: the script is loaded with SCRIPT LOAD (its SHA1 checked) and the
call sent once more; in a batch, when every call from the first NOSCRIPT on
failed that way, exactly that tail is re-sent, else PipelineInterrupted.
"""

import asyncio
import math
import os
import time
from collections import namedtuple

import redis
import redis.asyncio

from . import _errors

#: A bundled script: name, SHA1, file below lua/, read-only, error codes.
Script = namedtuple("Script", "name sha1 file read_only errors")

_LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lua")


class Call:
    """One call of a bundled script with its keys and (encoded) arguments."""

    __slots__ = ("script", "keys", "args")

    def __init__(self, script, keys, args):
        self.script, self.keys, self.args = script, keys, args

    def info(self):
        from .scripts import SCRIPTS

        return SCRIPTS[self.script]

    def command(self):
        s = self.info()
        return ("EVALSHA_RO" if s.read_only else "EVALSHA", s.sha1, len(self.keys), *self.keys, *self.args)


class Cmd:
    """One plain command."""

    __slots__ = ("args",)

    def __init__(self, *args):
        self.args = args

    def command(self):
        return self.args


class Sleep:
    """Wait this many seconds, then continue."""

    __slots__ = ("seconds",)

    def __init__(self, seconds):
        self.seconds = seconds


def request_key(key, request_id=None):
    """The key that remembers one call with a request id, in `key`'s slot (manifest:
    functions request_key); without an id, the key the scripts leave untouched."""
    suffix = "req" if request_id is None else "req:" + request_id
    if request_id is not None and not 1 <= len(request_id.encode()) <= 200:
        raise _errors.InvalidArgument("request id", "must be 1 to 200 bytes")
    opened = key.find("{")
    closed = key.find("}", opened + 1) if opened >= 0 else -1
    if closed > opened + 1:
        return f"{key}:{suffix}"
    if "}" in key:
        raise _errors.InvalidArgument("key", f"{key!r} has no hash tag but contains '}}': no other key can share its slot")
    return "{" + key + "}:" + suffix


def source(script):
    """The shipped script (header, generated checks, body), as SCRIPT LOAD gets it."""
    with open(os.path.join(_LUA, script.file), "rb") as f:
        return f.read()


# Argument checks of the generated script functions.


def _int(name, v, lo, hi, reason):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or v > hi:
        raise _errors.InvalidArgument(name, reason)


def _float(name, v, reason):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _errors.InvalidArgument(name, reason)


def _bool(name, v, reason):
    if not isinstance(v, bool):
        raise _errors.InvalidArgument(name, reason)


def _enum(name, v, words, reason):
    if v not in words:
        raise _errors.InvalidArgument(name, reason)


def _text(name, v, non_empty, reason):
    if not isinstance(v, (str, bytes, bytearray)):
        raise _errors.InvalidArgument(name, "must be a str or bytes")
    if non_empty and len(v) == 0:
        raise _errors.InvalidArgument(name, reason)


def _hash_tag(name):
    """The part of a name that picks its cluster slot: the first non-empty {...}, else the name."""
    b = name.encode() if isinstance(name, str) else bytes(name)
    start = b.find(b"{")
    if start >= 0:
        end = b.find(b"}", start + 1)
        if end > start + 1:
            return b[start + 1 : end]
    return b


def _tagged(name, v, key, reason):
    _text(name, v, True, reason)
    if not isinstance(key, (str, bytes, bytearray)) or _hash_tag(v) != _hash_tag(key):
        raise _errors.InvalidArgument(name, reason)


def _many(name, v):
    if isinstance(v, (str, bytes, bytearray)) or not hasattr(v, "__iter__"):
        raise _errors.InvalidArgument(name, "must be a list")
    return v


def _key(name, k):
    if not isinstance(k, (str, bytes)):
        raise _errors.InvalidArgument(name, "a key must be a str or bytes")
    return k


def _keys(name, ks):
    return [_key(name, k) for k in _many(name, ks)]


# Errors.


def _text_of(e):
    return e.args[0] if e.args else str(e)


def error_of(script, exc):
    """The exception of an error reply to a call of `script` (a Script or None)."""
    if not isinstance(exc, redis.exceptions.ResponseError):
        return exc
    text = str(_text_of(exc))
    code, _, detail = text.partition(" ")
    at = detail.find(" script: ")
    if at >= 0:
        detail = detail[:at].rstrip()
    if isinstance(exc, redis.exceptions.NoScriptError):
        code = "NOSCRIPT"
    if script is not None and code in script.errors:
        if code == "BADARG":
            name, _, reason = detail.partition(" ")
            return _errors.InvalidArgument(name, reason, script.name)
        return _errors.BY_CODE[code](script.name, detail)
    return _errors.ServerError(code, detail, script.name if script else None)


def _is_noscript(reply):
    return isinstance(reply, redis.exceptions.NoScriptError) or (
        isinstance(reply, redis.exceptions.ResponseError) and str(_text_of(reply)).startswith("NOSCRIPT")
    )


def _checked_load(script, sha):
    if str(sha).lower() != script.sha1:
        raise _errors.ServerError("SHAMISMATCH", f"server returned sha1 {sha}, expected {script.sha1}", script.name)


def _script_of(req):
    return req.info() if isinstance(req, Call) else None


def _settle(batch, replies):
    """The replies with errors mapped, or the index of the NOSCRIPT tail to re-send."""
    first = next((i for i, r in enumerate(replies) if _is_noscript(r)), None)
    if first is not None:
        tail = range(first, len(batch))
        if all(isinstance(batch[i], Call) and _is_noscript(replies[i]) for i in tail):
            return None, first
        raise _errors.PipelineInterrupted(first, len(batch))
    out = []
    for req, r in zip(batch, replies):
        out.append(error_of(_script_of(req), r) if isinstance(r, Exception) else r)
    return out, None


# The run of an operation, written once: a generator of I/O requests, each a
# (kind, argument) pair, that a driver answers with (reply, None) or, for an
# error reply, (None, the ResponseError); it ends with (_DONE, the result).

_SLEEP, _COMMAND, _PIPELINE, _LOAD, _DONE = "sleep", "command", "pipeline", "load", "done"


def _reply(outcome):
    """The reply a driver sent back, or its error reply raised."""
    reply, error = outcome
    if error is not None:
        raise error
    return reply


def _one(req):
    try:
        return _reply((yield _COMMAND, req.command()))
    except redis.exceptions.ResponseError as e:
        if isinstance(req, Call) and _is_noscript(e):
            s = req.info()
            _checked_load(s, _reply((yield _LOAD, source(s))))
            try:
                return _reply((yield _COMMAND, req.command()))
            except redis.exceptions.ResponseError as again:
                raise error_of(s, again) from None
        raise error_of(_script_of(req), e) from None


def _batch(batch):
    done = []
    while batch:
        replies = _reply((yield _PIPELINE, [req.command() for req in batch]))
        out, tail = _settle(batch, replies)
        if tail is None:
            return done + out
        done += _settle(batch[:tail], replies[:tail])[0]
        for s in {batch[i].script: batch[i].info() for i in range(tail, len(batch))}.values():
            _checked_load(s, _reply((yield _LOAD, source(s))))
        batch = batch[tail:]
    return done


def _steps(op):
    if isinstance(op, (Call, Cmd, list)):
        op = _single(op)
    reply, exc = None, None
    while True:
        try:
            req = op.throw(exc) if exc is not None else op.send(reply)
        except StopIteration as stop:
            yield _DONE, stop.value
            return
        reply, exc = None, None
        try:
            if isinstance(req, Sleep):
                _reply((yield _SLEEP, req.seconds))
            elif isinstance(req, list):
                reply = yield from _batch(req)
            else:
                reply = yield from _one(req)
        except _errors.RedisPatternsError as e:
            exc = e


# The sync driver: the I/O of a run on a redis.Redis.


def _io_sync(client, kind, arg):
    try:
        if kind == _SLEEP:
            return time.sleep(arg), None
        if kind == _COMMAND:
            return client.execute_command(*arg), None
        if kind == _LOAD:
            return client.script_load(arg), None
        pipe = client.pipeline(transaction=False)
        for command in arg:
            pipe.execute_command(*command)
        return pipe.execute(raise_on_error=False), None
    except redis.exceptions.ResponseError as e:
        return None, e


def run_sync(client, op):
    """Runs the operation `op` (a generator, or a single request) on a redis.Redis."""
    steps, outcome = _steps(op), None
    while True:
        kind, arg = steps.send(outcome)
        if kind == _DONE:
            return arg
        outcome = _io_sync(client, kind, arg)


# The async driver: the same I/O with awaits, on a redis.asyncio.Redis.


async def _io_async(client, kind, arg):
    try:
        if kind == _SLEEP:
            return await asyncio.sleep(arg), None
        if kind == _COMMAND:
            return await client.execute_command(*arg), None
        if kind == _LOAD:
            return await client.script_load(arg), None
        pipe = client.pipeline(transaction=False)
        for command in arg:
            pipe.execute_command(*command)
        return await pipe.execute(raise_on_error=False), None
    except redis.exceptions.ResponseError as e:
        return None, e


async def run_async(client, op):
    """Runs the operation `op` on a redis.asyncio.Redis."""
    steps, outcome = _steps(op), None
    while True:
        kind, arg = steps.send(outcome)
        if kind == _DONE:
            return arg
        outcome = await _io_async(client, kind, arg)


def _single(req):
    return (yield req)


def is_async(client):
    return isinstance(client, (redis.asyncio.Redis, redis.asyncio.RedisCluster))


def is_cluster(client):
    return isinstance(client, (redis.RedisCluster, redis.asyncio.RedisCluster))


def runner(client):
    """The driver of `client`: a function of an operation, returning its result
    (sync client) or a coroutine (asyncio client)."""
    if not isinstance(client, (redis.Redis, redis.asyncio.Redis, redis.RedisCluster, redis.asyncio.RedisCluster)):
        raise TypeError("expected a redis.Redis or redis.asyncio.Redis client")
    kwargs = client.get_connection_kwargs() if hasattr(client, "get_connection_kwargs") else {}
    if kwargs.get("decode_responses"):
        raise ValueError("the client must be created with decode_responses=False (bitmaps and records are bytes)")
    if is_async(client):
        return lambda op: run_async(client, op)
    return lambda op: run_sync(client, op)


def run(client, op):
    """Runs a Call (from redis_patterns.scripts), a Cmd, a batch (a list) or an
    operation on `client`; on an asyncio client it returns a coroutine."""
    return runner(client)(op)


def text(v):
    """A reply as str (replies are bytes)."""
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)
