"""Sizes a function accepts, found from its own errors: when every point of
vectors of 3 fails with an index out of range or a size mismatch, ``labrys
verify`` grows the sizes the error names and tries again (docs/verification.md,
"Sizes the function accepts").

Note [Growing the sizes an error names]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A function that reads a camera's 11 parameters (``(index 10 cam)``) fails on
every vector of 3, and its program need not have a ``main`` whose call shows
sizes that work.  The error itself says what is wrong: "index 3 out of range
for a tensor of size 3" at a position.  So every tensor dimension of the
argument type is a *slot* with its own size (3 to begin with; all the
vectors a ``Vec (Vec Float)`` holds share the inner slot), and the search

- evaluates f (only f: no derivative, so a step is cheap) at a draw of those
  sizes; if f succeeds, that value is the template verify draws Floats in;
- else reads the error: for "index k out of range for a tensor of size n" it
  tries, one slot at a time, each slot of size n grown to k + 1; for "sizes
  differ (a) and (b)" each slot of size a set to b, then each of size b set
  to a;
- keeps the first change after which f's first error is another one (another
  message or another position): that slot was the one the error was about.
  A slot that was not leaves the same error at the same position.  When no
  single slot moves the error, all the slots of size n grow together once;
- stops when nothing moves the error, when a slot would pass ``CAP`` (64)
  or the argument would hold more than ``BUDGET`` (4 096) numbers, after
  ``STEPS`` (64) changes, or at sizes it has tried before.

Integers are drawn from 0..3 by a generator of their own, so growing a
vector does not redraw them (an Integer that indexes a vector keeps pointing
at the same element).  If a draw's Integers are out of any reach (a negative
index), the search continues from the sizes reached with the next of
``DRAWS`` draws.  Everything is seeded from verify's ``--seed``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import LabrysError
from .ir.types import FLOAT, TBase, TSum, TTensor, TTuple, Type
from .values import Inj

START = 3        # every slot's first size (verify's vectors of 3)
INTEGERS = 3     # Integers are drawn from 0..INTEGERS
CAP = 64         # no slot grows beyond this
BUDGET = 4096    # no argument holds more numbers than this
STEPS = 64       # changes of sizes per search
DRAWS = 4        # draws (of Integers and Floats) the search starts from

Slot = tuple[tuple[Any, ...], int]   # (path in the argument type, dimension)

_INDEX = re.compile(r"index (-?\d+|\([-\d, ]+\)) out of range for a tensor of size ([\dx]+)")
_SIZES = re.compile(r"\(?((?:\d+\s*,?\s*)+)\)?\s+and\s+\(?((?:\d+\s*,?\s*)+)\)?")


@dataclass
class Found:
    """What the search ended with: a value f accepts (or None) and what to report."""

    value: Any | None
    sizes: dict[Slot, int]
    why: str = ""   # why it stopped, when no value was found


def slots(t: Type, path: tuple[Any, ...] = ()) -> list[Slot]:
    """Every tensor dimension of t, in the order values are drawn."""
    match t:
        case TTuple(elems):
            return [s for i, e in enumerate(elems) for s in slots(e, path + (i,))]
        case TTensor(rank, elem):
            return [(path, d) for d in range(rank)] + slots(elem, path + ("[]",))
        case TSum(a, b):
            return slots(a, path + ("L",)) + slots(b, path + ("R",))
    return []


def numbers(t: Type, sizes: dict[Slot, int], path: tuple[Any, ...] = ()) -> int:
    """How many scalars a value of t holds at these sizes (a sum: its larger side)."""
    match t:
        case TTuple(elems):
            return sum(numbers(e, sizes, path + (i,)) for i, e in enumerate(elems))
        case TTensor(rank, elem):
            count = 1
            for d in range(rank):
                count *= sizes[(path, d)]
            return count * numbers(elem, sizes, path + ("[]",))
        case TSum(a, b):
            return max(numbers(a, sizes, path + ("L",)), numbers(b, sizes, path + ("R",)))
    return 1


def draw(t: Type, sizes: dict[Slot, int], floats: np.random.Generator, integers: np.random.Generator,
         path: tuple[Any, ...] = ()) -> Any:
    """A value of t with these sizes: Floats in [0.5, 1.5], Integers in 0..INTEGERS
    (the shapes :func:`labrys.cost.sized_value` makes)."""
    match t:
        case TBase("Float"):
            return float(floats.uniform(0.5, 1.5))
        case TBase("Integer"):
            return int(integers.integers(0, INTEGERS + 1))
        case TBase("Bool"):
            return True
        case TBase("String"):
            return "s"
        case TTuple(elems):
            return tuple(draw(e, sizes, floats, integers, path + (i,)) for i, e in enumerate(elems))
        case TTensor(rank, elem):
            shape = tuple(sizes[(path, d)] for d in range(rank))
            if elem == FLOAT:
                return floats.uniform(0.5, 1.5, shape)
            flat = [draw(elem, sizes, floats, integers, path + ("[]",)) for _ in range(int(np.prod(shape)))]
            return flat if rank == 1 else np.array(flat, dtype=object).reshape(shape)
        case TSum(a, b):
            left = bool(integers.integers(0, 2))
            return Inj(left, draw(a if left else b, sizes, floats, integers, path + ("L" if left else "R",)))
    raise LabrysError(f"cannot make inputs of type {t}")


def describe(t: Type, names: list[str], sizes: dict[Slot, int]) -> str:
    """"cam 11, X 3, feat 3": per parameter its dimensions, a nested one after
    the one holding it (``cams 4×11``); a part of a tuple parameter is name.1, ..."""
    params = [(names[0], t, ())] if len(names) == 1 else \
        [(name, e, (i,)) for i, (name, e) in enumerate(zip(names, t.elems if isinstance(t, TTuple) else ()))]
    parts = []
    for name, pt, prefix in params:
        groups: dict[tuple[Any, ...], list[int]] = {}
        for path, d in slots(pt, prefix):
            groups.setdefault(tuple(p for p in path[len(prefix):] if p != "[]"), []).append(sizes[(path, d)])
        for key, dims in groups.items():
            sub = "".join(f".{p + 1}" if isinstance(p, int) else f".{p}" for p in key)
            parts.append(f"{name}{sub} {'×'.join(map(str, dims))}")
    return ", ".join(parts)


def grow(f: Callable[[Any], Any], t: Type, seed: int) -> Found:
    """Search sizes at which f evaluates (Note [Growing the sizes an error names])."""
    sizes = {s: START for s in slots(t)}
    why, steps = "", 0
    for k in range(DRAWS):
        def outcome(at: dict[Slot, int], k: int = k) -> tuple[Any, tuple[str, str] | None]:
            value = draw(t, at, np.random.default_rng([seed, k, 1]), np.random.default_rng([seed, k, 2]))
            try:
                f(value)
            except LabrysError as exc:
                return value, (exc.message, repr(exc.span))
            return value, None

        value, error = outcome(sizes)
        seen = {_key(sizes)}
        while error is not None and steps < STEPS:
            moved, capped = None, False
            for change in _changes(error[0], sizes):
                if _key(change) in seen:
                    continue
                if max(change.values()) > CAP or numbers(t, change) > BUDGET:
                    capped = True
                    continue
                seen.add(_key(change))
                changed = outcome(change)
                if changed[1] != error:
                    moved = change, *changed
                    break
            if moved is None:
                why = (f"{error[0]}; the sizes that could fix it pass {CAP} per vector or {BUDGET} numbers"
                       if capped else f"{error[0]}; no change of the sizes moves it")
                break
            sizes, value, error = moved
            steps += 1
        if error is None:
            return Found(value, sizes)
        if steps >= STEPS:
            return Found(None, sizes, f"{error[0]}; still failing after {STEPS} changes of the sizes")
    return Found(None, sizes, why)


def _key(sizes: dict[Slot, int]) -> tuple[tuple[Slot, int], ...]:
    return tuple(sorted(sizes.items(), key=repr))


def _changes(message: str, sizes: dict[Slot, int]) -> list[dict[Slot, int]]:
    """The size changes that could fix this error, the most specific first:
    one slot at a time, then every slot the error could be about at once."""
    wanted: list[list[tuple[Slot, int]]] = []
    index = _INDEX.search(message)
    if index:
        idx = [int(i) for i in index.group(1).strip("()").split(",")]
        shape = [int(n) for n in index.group(2).split("x")]
        if any(i < 0 for i in idx) or len(idx) != len(shape):
            return []
        for d, (i, n) in enumerate(zip(idx, shape)):
            if i >= n:
                wanted.append([(s, i + 1) for s, size in sizes.items() if size == n and _rank(s, sizes) == len(shape)
                               and (len(shape) == 1 or s[1] == d)])
    elif "sizes differ" in message or "different sizes" in message:
        pair = _SIZES.search(message)
        if pair:
            a = [int(n) for n in pair.group(1).split(",") if n.strip()]
            b = [int(n) for n in pair.group(2).split(",") if n.strip()]
            for d, (m, n) in enumerate(zip(a, b)):
                if m != n:
                    small, large = min(m, n), max(m, n)
                    wanted.append([(s, large) for s, size in sizes.items() if size == small and s[1] == d])
                    wanted.append([(s, small) for s, size in sizes.items() if size == large and s[1] == d])
    out = []
    for group in wanted:
        out.extend({**sizes, s: n} for s, n in group)
    for group in wanted:
        if len(group) > 1:
            out.append({**sizes, **dict(group)})
    return out


def _rank(slot: Slot, sizes: dict[Slot, int]) -> int:
    """The rank of the tensor a slot is a dimension of."""
    path = slot[0]
    return sum(1 for (p, _) in sizes if p == path)
