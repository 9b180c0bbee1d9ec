"""bitmapist's side of `cargo bench --bench analytics`: the same questions
answered with bitmapist's own functions, against the bench's server.

Usage: bitmapist_side.py PORT MODE (PYTHONPATH holds bitmapist, see
benches/analytics.rs). `sample` marks a few events with mark_event and
exits; `serve` reads one request a line from stdin and answers each with
one JSON line on stdout: `run QUESTION` answers the question once
(`{"answer": ..., "seconds": ...}`), `clean` deletes bitmapist's
temporary BITOP keys (`{}`), so that the bench can interleave its rounds
with its own and count the round trips of each side on the server.
"""

import json
import sys
import time
from datetime import date, datetime, timedelta, timezone

import bitmapist
from bitmapist import BitOpAnd, BitOpOr, DayEvents, WeekEvents, mark_event
from bitmapist import cohort

PORT, MODE = int(sys.argv[1]), sys.argv[2]
bitmapist.setup_redis("default", "127.0.0.1", PORT)
START = date(2024, 3, 1)
DAYS = 30


def day(i):
    d = START + timedelta(days=i)
    return DayEvents("active", d.year, d.month, d.day)


def ev(name, i):
    d = START + timedelta(days=i)
    return DayEvents(name, d.year, d.month, d.day)


def daily():
    return [len(day(i)) for i in range(DAYS)]


def weekly():
    weeks = sorted({(START + timedelta(days=i)).isocalendar()[:2] for i in range(DAYS)})
    return [len(WeekEvents("active", y, w)) for y, w in weeks]


def expressions():
    # 1: active on day 1 AND bought on day 2.
    e1 = BitOpAnd(ev("active", 0), ev("bought", 1))
    # 2: active on any of days 1-7 AND bought on day 10.
    e2 = BitOpAnd(BitOpOr(*[ev("active", i) for i in range(7)]), ev("bought", 9))
    # 3: signed up on day 1, active on day 8 AND bought on day 15.
    e3 = BitOpAnd(ev("signup", 0), ev("active", 7), ev("bought", 14))
    return [len(e1), len(e2), len(e3)]


def table(time_group, rows):
    # get_dates_data moves start_date on by rows - 1 days, then back by
    # rows - 1 periods: for weeks, ask for the date that lands on START's week.
    start = START
    if time_group == "weeks":
        start = START + timedelta(weeks=rows - 1) - timedelta(days=rows - 1)
    data = cohort.get_dates_data(
        select1="signup", select2="active", time_group=time_group, as_percent=False,
        num_results=rows, num_of_rows=rows - 1, start_date=start.isoformat(),
    )
    out = []
    for r in data:
        cells = [None if c == "" else int(c) for c in r[2:]]
        out.append({"size": int(r[1]), "cells": cells})
    return out


if MODE == "sample":
    # A few events through mark_event, for the bench to compare key by key.
    for uid, d in [(3, 0), (77, 0), (77, 1), (999_999, 9), (12_345, 20)]:
        t = datetime(2024, 3, 1, 12, tzinfo=timezone.utc) + timedelta(days=d)
        mark_event("sample", uid, now=t)
    sys.exit(0)

QUESTIONS = {
    "daily": daily,
    "weekly": weekly,
    "expressions": expressions,
    "daily_table": lambda: table("days", 30),
    "weekly_table": lambda: table("weeks", 12),
}
for line in sys.stdin:
    words = line.split()
    if words == ["clean"]:
        bitmapist.delete_runtime_bitop_keys()
        reply = {}
    else:
        f = QUESTIONS[words[1]]
        t = time.perf_counter()
        answer = f()
        reply = {"answer": answer, "seconds": time.perf_counter() - t}
    print(json.dumps(reply), flush=True)
