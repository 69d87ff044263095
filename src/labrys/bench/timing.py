"""Timing one call: warm-up, then the median of repeated samples, within a budget.

Note [Timing]
~~~~~~~~~~~~~
The first call is timed on its own: it carries tracing, JIT compilation and
cache filling, so it is reported as part of the compile time, never in the
median.  Calls that take microseconds are run in batches (like ``timeit``'s
autorange) so that one sample lasts at least ``MIN_SAMPLE`` seconds and the
clock's resolution does not matter; the median is per call.  A cell never
starts a sample that would end past its budget (judged by the samples so
far), and says how many it took.

Note [No asynchronous interruption]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A cell is never interrupted from outside: an exception raised into a thread
(``PyThreadState_SetAsyncExc``) arrives wherever that thread next runs
Python bytecode, which may be a callback of foreign code (XLA's garbage
collection hook, a ctypes callback of Numba or LLVM), where CPython can only
print "Exception ignored …" and carry on.  Time is bounded instead by
checking the clock between calls (here), by estimating a labrys cell from
runs at smaller sizes before running it at full size (``labrys.bench.run``),
and by running what must be stoppable in a child process that is killed
whole (``labrys.bench.threads``).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

MIN_SAMPLE = 0.02  # seconds one timed batch should last at least
COMPILE_CAP = 120.0  # seconds a first call at a probe size may take (compiling) and still be followed by a timed one


@dataclass
class Timing:
    median: float  # seconds per call
    runs: int      # samples behind the median (0: only the first call was timed)
    first: float   # the first call, with its one-off costs
    note: str = ""
    estimated: bool = False    # not run: ``median`` is extrapolated from a smaller size

    @property
    def overhead(self) -> float:
        """What the first call cost beyond a steady-state call (JIT, caches)."""
        return max(0.0, self.first - self.median) if self.runs else 0.0


def probe(fn: Callable[[], Any], budget: float) -> tuple[float, float]:
    """(seconds per call, one-off overhead) of ``fn`` at a small size: its first
    call, which carries compiling (Numba compiles at a function's first call, and
    a cold cache makes that take many seconds), and a second one unless the first
    took longer than both the budget and ``COMPILE_CAP``."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    if first >= max(budget, COMPILE_CAP):
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
    while len(samples) < repeat:
        if samples and time.perf_counter() - start + statistics.median(samples) * batch > budget:
            break  # the next sample would end past the budget
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
