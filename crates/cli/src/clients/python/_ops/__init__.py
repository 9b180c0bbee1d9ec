"""Each pattern's operations, written once as generators of steps (see
redis_patterns._driver) over checked inputs; the generated classes of
redis_patterns (sync) and redis_patterns.asyncio run them."""

from . import analytics, bloom, expiring_map, layout, lock, login_log, packed, rate_limit, rolling, rwlock, semaphore, sharded_hash, signin, visits

__all__ = [
    "analytics", "bloom", "expiring_map", "layout", "lock", "login_log", "packed", "rate_limit", "rolling", "rwlock", "semaphore", "sharded_hash",
    "signin", "visits",
]
