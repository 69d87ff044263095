"""The memory limit: a run that would hold more than ``--max-memory`` stops
with a positioned error naming the function (docs/reliability.md).

Note [Memory limit]
~~~~~~~~~~~~~~~~~~~
The limit (``--max-memory SIZE``, ``$LABRYS_MAX_MEMORY``,
:func:`labrys.set_max_memory`; none by default) bounds the *resident memory
of the whole process*, labrys and its libraries included (NumPy and Numba
take 150–300 MB before a program runs), because that is what a machine runs
out of.  Three guards enforce it:

1. **Allocation guard.**  A sized allocation (``build``, ``constVec``,
   ``deltaVec``, ``buildFromSparse``) of n elements is 8 n bytes; more than
   the limit is refused before anything is allocated, and one that would
   take the process past the limit is refused: the resident size
   (``/proc/self/statm``; ``getrusage`` elsewhere) is read for every
   allocation of 1 MiB or more and once per MiB of smaller ones.
2. **Polling.**  Every 1024th call of a user function reads the resident
   size and stops the run past the limit, so memory that grows without
   sized allocations (tuples, closures, lists of a recursion) is caught too.
3. **Compiled code** (Numba) allocates outside Python, so a call into it
   runs under an address-space limit (``RLIMIT_AS``) of the address space
   it has now plus what is left of the limit; an allocation past it fails
   in the compiled code, and the call is re-run on the ``python`` backend
   (Note [Compiled fallback]), where guards 1 and 2 give the positioned
   error.  ``RLIMIT_AS`` is not set for the whole process: Numba, LLVM and
   the 1 GiB deep-stack worker reserve far more address space than they
   use, so a process-wide address-space limit would either be far above the
   memory limit or break compilation.  Where ``resource`` is missing (not
   POSIX) guard 3 is skipped.

The error is ``file:line:col: error: memory limit of 500 MB exceeded in f
(...)``, at the definition of the innermost user function running
(``backends.limits.guard_depth`` names it).
"""
from __future__ import annotations

import contextlib
import os
import re
from typing import Iterator

from .context import Limits, current
from .errors import LabrysError

POLL_EVERY = 1024
LARGE = 1 << 20  # allocations at least this large are checked against the resident size at once
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class MemoryLimit(LabrysError):
    """The memory limit was reached; ``function`` is filled in by the innermost
    user function that sees it (``backends.limits.guard_depth``)."""

    function: str | None = None


def parse_size(text: str | int) -> int:
    """Bytes from ``500M``, ``2G``, ``1.5G``, ``1048576`` (K, M, G, T are powers of 1024)."""
    if isinstance(text, int) and not isinstance(text, bool):
        n = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.IGNORECASE)
        if not m:
            raise LabrysError(f"the memory limit must be a size such as 500M or 2G, not {text!r}")
        n = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if n < 1:
        raise LabrysError(f"the memory limit must be positive, not {text!r}")
    return n


def _env_max_memory() -> int | None:
    raw = os.environ.get("LABRYS_MAX_MEMORY", "").strip()
    if not raw:
        return None
    try:
        return parse_size(raw)
    except LabrysError:
        return None


Limits.max_memory = _env_max_memory()


def set_max_memory(size: str | int | None) -> None:
    """Stop a run when the process would hold more than ``size`` bytes (an int,
    or ``"500M"``, ``"2G"``); None removes the limit (Note [Memory limit])."""
    Limits.max_memory = None if size is None else parse_size(size)


def show_size(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n} bytes"


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """The process's resident memory now (its peak where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        try:
            import resource
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except (ImportError, OSError):
            return 0


def _exceeded(limit: int, holds: int, what: str = "") -> MemoryLimit:
    return MemoryLimit(f"memory limit of {show_size(limit)} exceeded{what} (the process holds {show_size(holds)})",
                       None, ("the limit is set with --max-memory or LABRYS_MAX_MEMORY",))


def check_allocation(elements: int, what: str) -> None:
    """Guard 1 of Note [Memory limit]: ``what`` allocates ``elements`` 8-byte numbers."""
    limit = Limits.max_memory
    if limit is None:
        return
    need = 8 * elements
    if need > limit:
        raise _exceeded(limit, resident_bytes(), f": {what} needs {show_size(need)}")
    ctx = current()
    ctx.pending += need
    if need >= LARGE or ctx.pending >= LARGE:  # read the resident size once per MiB allocated
        ctx.pending = 0
        holds = resident_bytes()
        if holds + need > limit:
            raise _exceeded(limit, holds, f": {what} needs {show_size(need)} more")


def poll() -> None:
    """Guard 2 of Note [Memory limit]: every POLL_EVERY-th call reads the resident size."""
    limit = Limits.max_memory
    if limit is None:
        return
    ctx = current()
    ctx.polls += 1
    if ctx.polls % POLL_EVERY == 0:
        holds = resident_bytes()
        if holds > limit:
            raise _exceeded(limit, holds)


@contextlib.contextmanager
def address_space_window() -> Iterator[None]:
    """Guard 3 of Note [Memory limit]: RLIMIT_AS for the duration of a call into compiled code."""
    limit = Limits.max_memory
    try:
        import resource
    except ImportError:
        resource = None  # type: ignore[assignment]
    if limit is None or resource is None:
        yield
        return
    try:
        with open("/proc/self/statm", "rb") as f:
            mapped = int(f.read().split()[0]) * _PAGE
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        room = max(limit - resident_bytes(), 0)
        window = mapped + room if hard == resource.RLIM_INFINITY else min(mapped + room, hard)
        resource.setrlimit(resource.RLIMIT_AS, (window, hard))
    except (OSError, ValueError, IndexError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
