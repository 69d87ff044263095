"""The run-time context: the state one run of labrys code owns.

Note [Run-time context]
~~~~~~~~~~~~~~~~~~~~~~~
Generated code is pure except for two things: the op-count meter (every
primitive call adds its cost) and the Delta tape of a ``deltarev`` run
(Krawiec et al.'s state monad, Note [The monad as the tape]) or the run of a
Smeding & Vákár ``dualrev*`` derivative (its ID counter and tape, Note [The ID
monad in the run time]).  Both live in a
:class:`Context`, never in module globals.  The current context is a
``contextvars`` variable, so each thread has its own (created on first use)
and the deep-stack worker runs a job in its caller's (``util.deep``).  Tapes
form a stack: a derivative run that starts inside another (an edef
implemented in Python that calls labrys, a nested derivative) pushes its own
tape and the outer run continues on its own afterwards.  :func:`run_scope`
wraps every entry from Python into generated code and drops whatever tapes a
failed run left behind.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from contextvars import ContextVar
from typing import Any, Iterator

_CURRENT: ContextVar["Context"] = ContextVar("labrys_context")


DEFAULT_MAX_DEPTH = 200_000


def _env_max_depth() -> int:
    raw = os.environ.get("LABRYS_MAX_DEPTH", "")
    try:
        n = int(raw)
    except ValueError:
        return DEFAULT_MAX_DEPTH
    return n if n > 0 else DEFAULT_MAX_DEPTH


def _env_threads() -> int:
    raw = os.environ.get("LABRYS_THREADS", "")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    return n if n > 0 else (os.cpu_count() or 1)


def _env_fast_math() -> bool:
    return os.environ.get("LABRYS_FAST_MATH", "").strip().lower() not in ("", "0", "no", "false", "off")


class Limits:
    """Process-wide resource limits (Note [Recursion limit] in labrys.backends.limits)."""

    max_depth: int = _env_max_depth()
    threads: int = _env_threads()  # Note [Parallel reverse sums] in labrys.backends.numba_parallel
    fast_math: bool = _env_fast_math()  # Note [Reassociation on one thread] in labrys.backends.numba_fastmath
    max_memory: int | None = None  # bytes (Note [Memory limit] in labrys.memory, which reads $LABRYS_MAX_MEMORY)


def set_max_depth(n: int) -> None:
    """Calls of user functions may nest at most ``n`` deep (default 200,000, or
    ``$LABRYS_MAX_DEPTH``); deeper is ``error: recursion deeper than n in f``."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        from .errors import LabrysError
        raise LabrysError(f"the maximum depth must be a positive integer, not {n!r}")
    Limits.max_depth = n


def set_threads(n: int) -> None:
    """Compiled gradients may run their reverse sums on ``n`` threads (default: every
    core, or ``$LABRYS_THREADS``; 1 is serial).  Code generated afterwards uses it."""
    check_threads(n)
    Limits.threads = n


_THREADS: ContextVar[int | None] = ContextVar("labrys_threads", default=None)


def threads() -> int:
    """The thread count code generated now uses: :func:`threads_for`'s, else the process's."""
    n = _THREADS.get()
    return Limits.threads if n is None else n


def check_threads(n: int | None) -> None:
    """A user's ``threads=`` is None or a positive integer."""
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        from .errors import LabrysError
        raise LabrysError(f"threads must be a positive integer, not {n!r}")


@contextlib.contextmanager
def threads_for(n: int | None) -> Iterator[None]:
    """Generate code for ``n`` threads inside the block (None: the process's setting)."""
    check_threads(n)
    with _overriding(_THREADS, n):
        yield


@contextlib.contextmanager
def _overriding(var: ContextVar, value: Any) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def set_fast_math(flag: bool) -> None:
    """Compiled code generated afterwards may reassociate floating-point sums and fuse
    multiply-adds (LLVM's ``reassoc``, ``nsz``, ``contract``; never no-NaN/no-Inf), which
    lets loops such as dot products use vector instructions on one thread (default off, or
    ``$LABRYS_FAST_MATH=1``; Note [Reassociation on one thread])."""
    check_fast_math(flag, optional=False)
    Limits.fast_math = flag


_FAST_MATH: ContextVar[bool | None] = ContextVar("labrys_fast_math", default=None)


def fast_math() -> bool:
    """Whether code generated now may reassociate: :func:`fast_math_for`'s, else the process's."""
    flag = _FAST_MATH.get()
    return Limits.fast_math if flag is None else flag


def check_fast_math(flag: bool | None, optional: bool = True) -> None:
    """A user's ``fast_math=`` is a bool (or None, when ``optional``)."""
    if not (isinstance(flag, bool) or (optional and flag is None)):
        from .errors import LabrysError
        raise LabrysError(f"fast_math must be True or False, not {flag!r}")


@contextlib.contextmanager
def fast_math_for(flag: bool | None) -> Iterator[None]:
    """Generate code with (True) or without (False) reassociation inside the block (None: the
    enclosing block's setting, else the process's)."""
    check_fast_math(flag)
    with _overriding(_FAST_MATH, _FAST_MATH.get() if flag is None else flag):
        yield


class Context:
    __slots__ = ("ops", "tapes", "last_tape", "unmetered", "depth", "polls", "pending")

    def __init__(self) -> None:
        self.depth = 0               # user-function calls in progress (Note [Recursion limit])
        self.polls = 0               # calls that count towards reading the resident size (Note [Memory limit])
        self.pending = 0             # bytes allocated since the resident size was last read (same Note)
        self.ops = 0                 # scalar operations executed by primitives (the op-count meter)
        self.tapes: list[Any] = []   # the Delta tapes / dualrev runs in progress, innermost last
        self.last_tape: Any = None   # the tape (or dualrev run) of the last finished run, for inspection
        self.unmetered: dict[str, int] = {}  # backend -> calls that ran without counting ops


def current() -> Context:
    """This thread's context (made on first use)."""
    try:
        return _CURRENT.get()
    except LookupError:
        ctx = Context()
        _CURRENT.set(ctx)
        return ctx


def count(ops: int) -> None:
    """Add ``ops`` to the current context's op-count meter."""
    current().ops += ops


@contextlib.contextmanager
def run_scope(backend: str = "interp") -> Iterator[Context]:
    """One entry into generated code on ``backend``: tapes pushed inside are gone
    afterwards; a backend other than the interpreter does not count operations."""
    ctx = current()
    if backend != "interp":
        ctx.unmetered[backend] = ctx.unmetered.get(backend, 0) + 1
    depth = len(ctx.tapes)
    try:
        yield ctx
    finally:
        del ctx.tapes[depth:]


class Meter:
    """``labrys.METER``: the op count of the calling thread's context.  Only the
    interpreter counts; reading the meter after calls on another backend warns."""

    @property
    def ops(self) -> int:
        ctx = current()
        if ctx.unmetered:
            calls = ", ".join(f"{n} on {b}" for b, n in ctx.unmetered.items())
            ctx.unmetered = {}
            warnings.warn(f"labrys.METER counts operations on the interp backend only; calls since the last "
                          f"reading ran uncounted ({calls}): load(..., backend='interp') to count them",
                          stacklevel=2)
        return ctx.ops

    @ops.setter
    def ops(self, value: int) -> None:
        current().ops = value


METER = Meter()
