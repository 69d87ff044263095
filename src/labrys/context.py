"""The run-time context: the state one run of labrys code owns.

Note [Run-time context]
~~~~~~~~~~~~~~~~~~~~~~~
Generated code is pure except for two things: the op-count meter (every
primitive call adds its cost) and the Delta tape of a ``deltarev`` run
(Krawiec et al.'s state monad, Note [The monad as the tape]).  Both live in a
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
from contextvars import ContextVar
from typing import Any, Iterator

_CURRENT: ContextVar["Context"] = ContextVar("labrys_context")


class Context:
    __slots__ = ("ops", "tapes", "last_tape")

    def __init__(self) -> None:
        self.ops = 0                 # scalar operations executed by primitives (the op-count meter)
        self.tapes: list[Any] = []   # the Delta tapes of the deltarev runs in progress, innermost last
        self.last_tape: Any = None   # the tape of the last finished deltarev run, for inspection


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
def run_scope() -> Iterator[Context]:
    """One entry into generated code: tapes pushed inside are gone afterwards."""
    ctx = current()
    depth = len(ctx.tapes)
    try:
        yield ctx
    finally:
        del ctx.tapes[depth:]


class Meter:
    """``labrys.METER``: the op count of the calling thread's context."""

    @property
    def ops(self) -> int:
        return current().ops

    @ops.setter
    def ops(self, value: int) -> None:
        current().ops = value


METER = Meter()
