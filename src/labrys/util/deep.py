"""Run recursive passes on deep programs without hitting Python's limits.

Note [Deep programs]
~~~~~~~~~~~~~~~~~~~~
Every pass in labrys is written as plain structural recursion, one case per
construct, because that is the clearest way to state a transformation.  A
program of 10^4 nested lets or calls then needs a Python stack 10^4 frames
deep (times a small constant), and C-level recursion in ``==`` and ``hash``
of the immutable IR nodes needs a deep C stack too.  Instead of rewriting
each pass with an explicit stack, every public entry point is decorated with
:func:`deep`, which runs it on one long-lived worker thread that has a 1 GiB
stack (virtual memory; only touched pages are committed) and a recursion
limit to match.  Calls made from inside the worker run directly.  A job runs
in a copy of its caller's ``contextvars`` context, so it sees the caller's
run-time context (Note [Run-time context] in labrys.context).

Note [Garbage collection in passes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Parsing, checking and code generation allocate millions of small immutable
objects and no reference cycles; Python's cyclic collector, triggered every
few hundred allocations, then spends most of the time (3x on 10^4-deep
programs) re-examining objects that can never be garbage.  Those entry
points run with the collector paused (:func:`gc_paused`); reference counting
still frees everything, and the collector resumes when the outermost one
returns.  Running user code keeps the collector.  The pass driver
(``labrys.ad.pipeline.run_pipeline``) pauses it for a whole derivation: the
full collections it triggers walk every live node of the term being
transformed, so with it on CHAD's passes on a chain of L lets cost O(L²)
(14% of the time at L = 10^3, 28% at L = 10^4: 44 s of 153 s).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import os
import queue
import sys
import threading
from typing import Callable, TypeVar

from ..context import Limits, current

STACK_BYTES = 1 << 30
RECURSION_LIMIT = 2_000_000
FRAMES_PER_CALL = 12  # Python frames one user-level call may take (derived code included)

T = TypeVar("T")
_jobs: "queue.SimpleQueue" = queue.SimpleQueue()
_worker: threading.Thread | None = None
_lock = threading.Lock()


def _serve() -> None:
    while True:
        fn, box, done = _jobs.get()
        # The limit is interpreter-wide and callers (e.g. test frameworks) may
        # lower it: raise it for the job, restore it after (the caller waits).
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(max(saved, RECURSION_LIMIT, FRAMES_PER_CALL * Limits.max_depth))
        try:
            box.append((True, fn()))
        except BaseException as exc:  # re-raised on the caller's thread
            box.append((False, exc))
        finally:
            sys.setrecursionlimit(saved)
            done.set()
        del fn, box, done  # the job's result lives with its caller only (a BOG's records are freed with it)


def _ensure_worker() -> threading.Thread:
    global _worker
    with _lock:
        if _worker is None:
            old = threading.stack_size(STACK_BYTES)
            try:
                _worker = threading.Thread(target=_serve, name="labrys-deep", daemon=True)
                _worker.start()
            finally:
                threading.stack_size(old)
    return _worker


def run_deep(fn: Callable[[], T]) -> T:
    """Call ``fn()`` on the deep-stack worker (directly if already there)."""
    worker = _ensure_worker()
    if threading.current_thread() is worker:
        return fn()
    current()  # the caller's run-time context exists before the job's copy is made
    job = contextvars.copy_context().run
    box: list = []
    done = threading.Event()
    _jobs.put((lambda: job(fn), box, done))
    done.wait()
    ok, result = box[0]
    if ok:
        return result
    raise result.with_traceback(result.__traceback__)


def deep(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: run ``fn`` with a deep stack (see Note [Deep programs])."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _worker is not None and threading.current_thread() is _worker:
            return fn(*args, **kwargs)
        return run_deep(lambda: fn(*args, **kwargs))

    return wrapper


_paused = [0]


@contextlib.contextmanager
def paused_gc():
    """Pause the cyclic garbage collector (Note [Garbage collection in passes])."""
    if _paused[0] == 0 and not gc.isenabled():
        yield
        return
    _paused[0] += 1
    gc.disable()
    try:
        yield
    finally:
        _paused[0] -= 1
        if _paused[0] == 0:
            _age_paused_objects()
            gc.enable()


# Note [Ageing what a paused pass made]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Everything allocated while the collector was paused sits in its youngest
# generation; re-enabled, the collector would examine all of it at the next
# young collection and again at the next middle one: on a 10^5-deep program
# 10-17% of load + first call, mostly IR that can never be cyclic garbage.
# ``gc.freeze()`` then ``gc.unfreeze()`` moves every tracked object into the
# oldest generation without examining any (two list splices).  Nothing is
# leaked: the oldest generation is collected as before, at a full collection,
# which this does not trigger sooner.  A process that froze objects itself keeps
# them frozen (the move is skipped), and ``LABRYS_GC_CATCH_UP`` turns it off to
# measure it.


def _age_paused_objects() -> None:
    """Move every object the collector tracks into its oldest generation, without
    examining any (Note [Ageing what a paused pass made])."""
    if gc.get_freeze_count() == 0 and os.environ.get("LABRYS_GC_CATCH_UP") is None:  # the user froze nothing
        gc.freeze()
        gc.unfreeze()


def gc_paused(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: run ``fn`` with the cyclic collector paused."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with paused_gc():
            return fn(*args, **kwargs)

    return wrapper
