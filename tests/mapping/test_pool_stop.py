"""Ctrl-C in ``map-network``: stopping the process pool leaves no thread behind (issue 49).

The pool's manager thread, left ending on its own, raced with ``concurrent.futures``' exit hook,
which writes to that thread's wake-up pipe while the thread closes it: "Exception ignored in:
<module 'threading'> ... OSError: [Errno 9] Bad file descriptor" after one Ctrl-C in a few
(CPython 3.11). ``_stop_pool`` now waits for the manager, so at exit there is none to race.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor

from twill.mapping.pipeline import _stop_pool


def test_stopping_the_pool_leaves_no_thread_for_the_exit_to_race():
    before = set(threading.enumerate())
    pool = ProcessPoolExecutor(max_workers=2)
    futures = [pool.submit(time.sleep, 30) for _ in range(4)]
    deadline = time.monotonic() + 30
    while not futures[0].running() and time.monotonic() < deadline:
        time.sleep(0.02)
    _stop_pool(pool)
    assert set(threading.enumerate()) == before
    assert all(f.done() for f in futures)
