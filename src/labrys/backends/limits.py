"""Resource limits at run time: how deep user functions may call each other,
and (labrys.memory, Note [Memory limit]) how much memory the process may hold.

Note [Recursion limit]
~~~~~~~~~~~~~~~~~~~~~~
A user's infinite recursion must be the user's error, reported quickly and
with bounded memory, never Python's ``RecursionError`` (an "internal error")
after hundreds of megabytes.  Every backend runs a user function through the
entry :func:`guard_depth` wraps around it (one place: the interpreter's
``compile_function``, which the ``python`` and ``compiled`` backends
inherit), so calls of original and derived functions alike count.  The
count lives in the run-time context (``Context.depth``, Note [Run-time
context]); past ``Limits.max_depth`` (``--max-depth``, ``$LABRYS_MAX_DEPTH``,
:func:`labrys.set_max_depth`; default 200,000) the call stops with
``file:line:col: error: recursion deeper than N in f`` at ``f``'s
definition.  The deep-stack worker's Python limit is sized from the same
number (``util.deep``), so the labrys limit is met first; should Python's
limit be reached anyway (a primitive recursing, an outsized ``--max-depth``)
the innermost user function turns the ``RecursionError`` into the same
positioned error.  Depth counts nested calls, recursive or not: a chain of
10^4 distinct functions is 10^4 deep.
"""
from __future__ import annotations

from typing import Any, Callable

from ..context import Limits, current
from ..errors import LabrysError, Span
from ..memory import MemoryLimit, poll, resident_bytes, show_size


def too_deep(name: str, span: Span | None, limit: int) -> LabrysError:
    return LabrysError(f"recursion deeper than {limit} in {name}", span,
                       ("the limit is set with --max-depth or LABRYS_MAX_DEPTH",))


def guard_depth(fn: Callable[[Any], Any], name: str, span: Span | None) -> Callable[[Any], Any]:
    """``fn`` counting its activations in the run-time context (Note [Recursion limit])."""

    def guarded(arg: Any) -> Any:
        ctx = current()
        depth = ctx.depth = ctx.depth + 1
        try:
            if depth > Limits.max_depth:
                raise too_deep(name, span, Limits.max_depth)
            if Limits.max_memory is not None:
                poll()
            return fn(arg)
        except RecursionError:
            raise too_deep(name, span, min(depth, Limits.max_depth)) from None
        except MemoryLimit as exc:
            raise named(exc, name, span) from None
        except MemoryError:  # Python's own: no limit set, or an allocation outside the guards
            raise named(MemoryLimit(f"out of memory (the process holds {show_size(resident_bytes())})", None,
                                    ("a limit that stops earlier is set with --max-memory",)), name, span) from None
        finally:
            ctx.depth -= 1
    # compiled code's fast entry (Note [Cheap boundaries]): one activation, it calls no Python
    guarded.fast = getattr(fn, "fast", None)
    return guarded


def named(exc: MemoryLimit, name: str, span: Span | None) -> MemoryLimit:
    """The memory error with the innermost user function's name, at the error's own
    position (a ``build``) or else at the function's definition (Note [Memory limit])."""
    if exc.function is not None:
        return exc
    out = MemoryLimit(exc.message.replace(" exceeded", f" exceeded in {name}", 1) if " exceeded" in exc.message
                      else f"{exc.message} in {name}", exc.span or span, exc.notes)
    out.function = name
    return out
