"""One of several concurrent writers of one day. Usage: visits_worker.py PORT FIRST COUNT"""

import datetime
import sys

import redis

import redis_patterns as rp

port, first, count = (int(a) for a in sys.argv[1:4])
v = rp.VisitCounter(redis.Redis(port=port), "crowd", 16, retention_s=None, late_window_s=None)
day = datetime.date(2024, 2, 29)
members = list(range(first, first + count))
for m in members[: count // 2]:
    v.add(day, m)
v.add_batch(day, members[count // 2:])
