"""Output, identity hints and test-data primitives."""
from __future__ import annotations

import sys

from ..ir.types import FLOAT, INTEGER, TTuple, Type
from ..values import format_value
from .registry import primitive


def _print_impl(t: Type):
    several = isinstance(t, TTuple)

    def print_(arg):
        parts = arg if several else (arg,)
        sys.stdout.write("".join(format_value(x) for x in parts))
        return 0
    return print_


primitive("print", lambda t: INTEGER, _print_impl,
          "Print the arguments with no separators (strings unquoted); returns 0 : Integer.",
          cost=lambda r, a: 0)

for _hint in ("$trace", "$inline", "$copydown"):
    primitive(_hint, lambda t: t, lambda t: lambda x: x, f"({_hint} e) is e at run time: a hint for tools.",
              cost=lambda r, a: 0)

_MASK = (1 << 64) - 1


def ranhashdoub(seed: int) -> float:
    """SplitMix64 of the seed, scaled to [0, 1): deterministic test data."""
    z = (seed * 0x9E3779B97F4A7C15 + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return (z >> 11) / float(1 << 53)


primitive("$ranhashdoub", lambda t: FLOAT if t == INTEGER else None, lambda t: ranhashdoub,
          "($ranhashdoub i): a deterministic pseudo-random Float in [0, 1) from an Integer seed.")
