"""Output, identity hints and test-data primitives."""
from __future__ import annotations

import sys

from ..ir.types import FLOAT, INTEGER, TTuple, Type
from ..types.primitives import primitive
from ..values import format_value


def _print_impl(t: Type):
    several = isinstance(t, TTuple)

    def print_(arg):
        parts = arg if several else (arg,)
        sys.stdout.write("".join(format_value(x) for x in parts))
        return 0
    return print_


primitive("print", lambda t: INTEGER, _print_impl,
          "Print the arguments with no separators (strings unquoted); returns 0 : Integer.",
          cost=lambda r, a: 0, nondiff=True, impure=True)

for _hint in ("$trace", "$inline", "$copydown"):
    primitive(_hint, lambda t: t, lambda t: lambda x: x, f"({_hint} e) is e at run time: a hint for tools.",
              cost=lambda r, a: 0, impure=_hint == "$trace", structural=True,
              numba=lambda xs, types, res: xs[0], fwd=lambda a, d, t, y: d[0], rev=lambda a, r, t, y: (r,))

_MASK = (1 << 64) - 1


def ranhash(v: int) -> int:
    """The Knossos runtime's integer hash (``knossos.h``), bit for bit."""
    v = (v * 3935559000370003845) & _MASK
    v = (v + 2691343689449507681) & _MASK
    v ^= v >> 21
    v ^= (v << 37) & _MASK
    v ^= v >> 4
    v = (v * 4768777513237032717) & _MASK
    v ^= (v << 20) & _MASK
    v ^= v >> 41
    v ^= (v << 5) & _MASK
    return v


def ranhashdoub(seed: int) -> float:
    """The Knossos ``$ranhashdoub``: ``ranhash(seed)`` scaled to [0, 1), so programs
    written for Knossos reproduce their golden values."""
    return 5.42101086242752217e-20 * float(ranhash(seed & _MASK))


primitive("$ranhashdoub", lambda t: FLOAT if t == INTEGER else None, lambda t: ranhashdoub,
          "($ranhashdoub i): a deterministic pseudo-random Float in [0, 1) from an Integer seed "
          "(the Knossos runtime's hash).", nondiff=True, numba=lambda xs, types, res: f"_ranhashdoub({xs[0]})")
