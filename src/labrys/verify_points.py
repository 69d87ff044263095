"""The points ``labrys verify`` tries: random values of a function's argument
type, edge points, random (co)tangents, and — when every point of the usual
sizes fails (a size assertion, an index out of range) — argument shapes that
the function accepts (docs/verification.md, "Points").

Note [Shapes the function accepts]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Random arguments have every vector of size 3.  A function whose sizes are
related (GMM's ``icf`` rows hold d (d + 1) / 2 Floats, where d is the size of
a data point) or large (a bundle-adjustment camera has 11 parameters) fails
on every such point: verify would check nothing.  So when every
uniform-size point fails, verify tries, in this order:

1. the arguments ``main`` passes to the function: it runs ``main`` on the
   reference interpreter until its first call of the function, and keeps
   that argument's shape (its sizes and Integers), drawing Floats afresh
   within it.  ``main`` stops at that call (it is not run to the end), so
   this costs the work ``main`` does before it;
2. sizes grown from f's own errors (Note [Growing the sizes an error names]
   in :mod:`labrys.verify_sizes`): this needs no ``main``;
3. uniform sizes 1, 2 and 4 (an assertion on a size, which no error names).

The first that gives a checked point is kept, and the report names it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from .cost import sized_value
from .errors import LabrysError
from .ir.nodes import Def
from .ir.types import TTuple, Type
from .values import Inj, Sparse, to_python
from .verify_sizes import describe, grow

EDGES = (0.0, 1.0, -1.0, 1e-8, 1e4)  # edge points: every Float set to one of these
OTHER_SIZES = (1, 2, 4)             # uniform sizes tried after 3 (and main's call) fail


def map_floats(v: Any, leaf: Callable[[tuple[int, ...] | None], Any]) -> Any:
    """v with every Float part replaced: ``leaf(None)`` for a Float, ``leaf(shape)``
    for an array of Floats; Integers, Bools and Strings become ``discrete(x)``
    (kept as they are).  Sizes and sum alternatives are v's."""
    return _map(v, leaf, lambda x: x)


def _map(v: Any, leaf: Callable, discrete: Callable[[Any], Any]) -> Any:
    if isinstance(v, Sparse):
        v = v.dense()
    if isinstance(v, (bool, int, str, np.bool_, np.integer)):
        return discrete(v)
    if isinstance(v, (float, np.floating)):
        return leaf(None)
    if isinstance(v, tuple):
        return tuple(_map(x, leaf, discrete) for x in v)
    if isinstance(v, Inj):
        return Inj(v.left, _map(v.value, leaf, discrete))
    if isinstance(v, np.ndarray) and v.dtype != object:
        return leaf(v.shape)
    if isinstance(v, np.ndarray):
        out = np.empty(v.shape, dtype=object)
        for idx in np.ndindex(v.shape):
            out[idx] = _map(v[idx], leaf, discrete)
        return out
    return [_map(x, leaf, discrete) for x in v]


def tangent_like(v: Any, rng: np.random.Generator) -> Any:
    """A random tangent shaped like the value v (parts in [-1, 1]; () for discrete parts)."""
    return _map(v, lambda shape: _uniform(rng, -1.0, 1.0, shape), lambda x: ())


def with_floats(v: Any, value: float) -> Any:
    """v with every Float part set to ``value`` (an edge point)."""
    return map_floats(v, lambda shape: value if shape is None else np.full(shape, value))


def random_like(v: Any, rng: np.random.Generator) -> Any:
    """A random point of v's shape: Floats in [0.5, 1.5], everything else v's."""
    return map_floats(v, lambda shape: _uniform(rng, 0.5, 1.5, shape))


def _uniform(rng: np.random.Generator, lo: float, hi: float, shape: tuple[int, ...] | None) -> Any:
    return float(rng.uniform(lo, hi)) if shape is None else rng.uniform(lo, hi, shape)


def random_value(t: Type, rng: np.random.Generator, size: int = 3) -> Any:
    """A random value of type t with small sizes (vectors of ``size``, Integers in 0..size)."""
    return sized_value(t, size, rng, random_integers=True)


class _Called(Exception):
    """Raised from the function's first call inside ``main``: stop there."""

    def __init__(self, arg: Any) -> None:
        super().__init__("called")
        self.arg = arg


def argument_from_main(module: Any, sig: Any) -> Any | None:
    """The argument of the first call of ``sig`` in ``main`` (Python values), or
    None (no ``main``, it takes arguments, fails before, or never calls it)."""
    from .backends.interp import Interpreter

    mains = module.checked.functions.candidates("main")
    if len(mains) != 1 or mains[0].arg != TTuple(()):
        return None
    interp = Interpreter(module.checked, module.externals, module.linker)

    def called(arg: Any) -> Any:
        raise _Called(arg)
    interp.cell(sig)[0] = called
    try:
        interp.call(mains[0], ())
    except _Called as stop:
        return to_python(stop.arg)
    except (LabrysError, RecursionError, ArithmeticError, ValueError, MemoryError):
        return None
    return None


def shapes(module: Any, sig: Any, rng: np.random.Generator, f: Callable[[Any], Any],
           tried: list[str]) -> Iterator[tuple[str, Any]]:
    """Shapes to retry when every uniform-size-3 point failed (Note [Shapes the function
    accepts]): (what, template) pairs — main's call, then sizes grown from f's errors
    (Note [Growing the sizes an error names]), then uniform sizes; ``tried`` collects
    what was tried, and why a search found nothing."""
    from_main = argument_from_main(module, sig)
    if from_main is not None:
        tried.append("main's call")
        yield "the shapes of main's call", from_main
    found = grow(f, sig.arg, int(rng.integers(2 ** 32)))
    names = [p.name for p in sig.decl.params] if isinstance(sig.decl, Def) else ["x"]
    if found.value is not None:
        tried.append(f"grown from the errors ({describe(sig.arg, names, found.sizes)})")
        yield f"grown from the errors: {describe(sig.arg, names, found.sizes)}", found.value
    elif found.why:
        tried.append(f"grown from the errors (stopped: {found.why})")
    for n in OTHER_SIZES:
        try:
            value = random_value(sig.arg, rng, n)
        except LabrysError:
            return
        tried.append(f"vectors of {n}")
        yield f"vectors of {n}", value


def tried_text(tried: list[str]) -> str:
    """"vectors of 3; main's call; vectors of 1, 2, 4": consecutive uniform sizes in one."""
    out: list[str] = []
    for what in tried:
        if what.startswith("vectors of ") and out and out[-1].startswith("vectors of "):
            out[-1] += ", " + what.removeprefix("vectors of ")
        else:
            out.append(what)
    return "; ".join(out)
