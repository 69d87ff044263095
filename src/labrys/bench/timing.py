"""Timing one call: warm-up, then the median of repeated samples, within a budget.

Note [Timing]
~~~~~~~~~~~~~
The first call is timed on its own: it carries tracing, JIT compilation and
cache filling, so it is reported as part of the compile time, never in the
median.  Calls that take microseconds are run in batches (like ``timeit``'s
autorange) so that one sample lasts at least ``MIN_SAMPLE`` seconds and the
clock's resolution does not matter; the median is per call.  A cell stops
taking samples when its budget is spent, and says how many it took.
"""
from __future__ import annotations

import ctypes
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from ..util.deep import run_deep

MIN_SAMPLE = 0.02  # seconds one timed batch should last at least
T = TypeVar("T")


@dataclass
class Timing:
    median: float  # seconds per call
    runs: int      # samples behind the median (0: only the first call was timed)
    first: float   # the first call, with its one-off costs
    note: str = ""
    estimated: bool = False    # not run: ``median`` is extrapolated from a smaller size
    interrupted: bool = False  # stopped at the time limit: ``median`` is a lower bound

    @property
    def overhead(self) -> float:
        """What the first call cost beyond a steady-state call (JIT, caches)."""
        return max(0.0, self.first - self.median) if self.runs else 0.0


def probe(fn: Callable[[], Any], budget: float) -> tuple[float, float]:
    """(seconds per call, one-off overhead) of ``fn`` at a small size: its first
    call, and a second one unless the first already took the whole budget."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    if first >= budget:
        return first, 0.0
    start = time.perf_counter()
    fn()
    second = time.perf_counter() - start
    return min(first, second), max(0.0, first - second)


def time_calls(fn: Callable[[], Any], repeat: int, budget: float) -> tuple[Timing, Any]:
    """(timing, the first call's result): a warm-up call, then up to ``repeat``
    samples while the ``budget`` (seconds, warm-up included) lasts."""
    start = time.perf_counter()
    result = fn()
    first = time.perf_counter() - start
    if first >= budget:
        return Timing(first, 0, first, f"1 call only: the first took {first:.0f} s (budget {budget:g} s)"), result
    batch = _batch_size(fn, first)
    samples: list[float] = []
    while len(samples) < repeat and (not samples or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t0) / batch)
    note = f"{len(samples)} of {repeat} samples (budget {budget:g} s)" if len(samples) < repeat else ""
    return Timing(statistics.median(samples), len(samples), first, note), result


def _batch_size(fn: Callable[[], Any], first: float) -> int:
    """Calls per sample so that a sample lasts about MIN_SAMPLE seconds."""
    if first >= MIN_SAMPLE:
        return 1
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(100_000, int(MIN_SAMPLE / once) + 1))


def seconds(t: float) -> str:
    """A duration with a unit that suits it, three significant digits."""
    if t >= 1000:
        return f"{t:,.0f} s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


class CellTimeout(BaseException):
    """Raised inside labrys code that ran past its cell's time limit.  A BaseException,
    so that no ``except Exception`` in the code being timed swallows it."""


def with_time_limit(work: Callable[[], T], seconds: float) -> T:
    """``work()`` on labrys's deep-stack worker thread, interrupted with CellTimeout
    after ``seconds`` (see Note [Time limits])."""
    lock = threading.Lock()
    state = {"active": True, "thread": 0}

    def interrupt() -> None:
        with lock:
            if state["active"]:
                _raise_in(state["thread"], CellTimeout)

    def guarded() -> tuple[bool, Any]:
        try:
            try:
                state["thread"] = threading.get_ident()
                timer.start()
                return True, work()
            finally:
                with lock:
                    state["active"] = False
                timer.cancel()
                _raise_in(state["thread"], None)  # drop an interruption that has not arrived yet
        except CellTimeout:
            return False, None
    timer = threading.Timer(seconds, interrupt)
    timer.daemon = True
    finished, value = run_deep(guarded)
    if not finished:
        raise CellTimeout()
    return value


def _raise_in(thread: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(exc) if exc else None)


# Note [Time limits]
# ~~~~~~~~~~~~~~~~~~
# One configuration (the interpreter on a large input, or an algorithm with a
# blow-up such as deltarev2 on the LSTM) can take minutes or hours a call, and
# a Python call cannot be cancelled from outside.  CPython can raise an
# exception asynchronously in another thread (PyThreadState_SetAsyncExc): it
# arrives at the thread's next bytecode boundary, so it stops Python code
# (every backend's generated code and the interpreter) but waits for a long C
# call (a NumPy or Numba kernel) to return.  The work runs on the deep-stack
# worker, where labrys's own calls run anyway, and the timer raises into that
# thread only while ``active``; the worker clears ``active`` under the same lock
# and then cancels any interruption still in flight, all inside the ``try`` that
# catches it, so an interruption can never escape into the worker's next job.
