"""The primitive table: one entry per primitive (docs/reference.md §5).

An entry holds everything labrys knows about a primitive: its type rule, its
evaluation, its cost for the op-count meter, the facts the optimiser and the
AD passes need (purity, constant folding, how it moves reals), its lowering
for the compiled backend, and its derivative rules.  Adding a primitive
touches one place: the call of :func:`primitive` in ``labrys.prelude``.

Note [Primitive table]
~~~~~~~~~~~~~~~~~~~~~~
The table lives here, below the prelude, because the type checker reads it;
the prelude (and the run-time support of the AD algorithms) fills it when
``labrys`` is imported, and every later layer reads it through
:func:`lookup`.  Each AD transformation may also keep its own rule table
keyed by primitive name for the primitives it treats specially (Knossos's
loops, the scalarisation of reductions); :func:`labrys.ad.registry.coverage`
checks that every primitive is classified for every algorithm and backend.

Every primitive takes ONE argument (a tuple when called with several, as all
functions in `.ks`), so ``typeof`` maps the argument type to the result type
(``None``: no overload applies) and ``impl`` maps the argument type to an
evaluator of one value.  Specialising on the static type lets one entry cover
``add`` on Floats, Integers, tensors and tuples without run-time dispatch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir.names import strip_suffix
from ..ir.types import TTuple, Type
from ..values import Fn, numel

TypeRule = Callable[[Type], Type | None]
Cost = Callable[[Any, Any], int]
# (argument atoms as Python source, their types, the result type) -> Python source for Numba, or None
Lowering = Callable[[list[str], list[Type], Type], str | None]


@dataclass
class Primitive:
    name: str
    typeof: TypeRule
    impl: Callable[[Type], Fn]
    doc: str
    cost: Cost | None = None          # (result, argument) -> ops; default: numel(result)
    rules: dict[str, Any] = field(default_factory=dict)  # Note [Derivative rules]
    nondiff: bool = False             # its derivative is zero (comparisons, sizes, conversions)
    impure: bool = False              # has an effect: the optimiser never moves, drops, merges or copies it
    foldable: bool = False            # evaluated at compile time when every argument is a literal
    structural: bool = False          # only moves values around (index, build …): no arithmetic on reals
    elementwise: str | None = None    # the scalar primitive it applies to each element of tensors and tuples
    numba: Lowering | None = None     # its code in the compiled backend (None: see Note [Compiled primitives])

    def ops(self, result: Any, arg: Any) -> int:
        return numel(result) if self.cost is None else self.cost(result, arg)


PRIMITIVES: dict[str, Primitive] = {}


def primitive(name: str, typeof: TypeRule, impl: Callable[[Type], Fn], doc: str, cost: Cost | None = None,
              *, nondiff: bool = False, impure: bool = False, foldable: bool = False, structural: bool = False,
              elementwise: str | None = None, numba: Lowering | None = None, **rules: Any) -> Primitive:
    """Register a primitive.  ``rules`` are its derivative rules, see Note [Derivative rules]."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name} registered twice")
    PRIMITIVES[name] = p = Primitive(name, typeof, impl, doc, cost, dict(rules), nondiff, impure, foldable,
                                     structural, elementwise, numba)
    return p


def unregister(name: str) -> None:
    """Remove a primitive (for tests that register their own)."""
    PRIMITIVES.pop(name, None)


# Note [Derivative rules]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A primitive's derivatives are IR builders stored in its entry:
#
#   fwd(args, dargs, types, y) -> Expr           the tangent of the result
#   rev(args, dr, types, y)    -> tuple[Expr]    the cotangent of each argument
#
# ``args`` are the call's arguments as atoms (variables or constants: the AD
# passes put programs in A-normal form first, so a rule may repeat them),
# ``dargs`` their tangents, ``dr`` the result's cotangent (an atom), ``types``
# the argument types and ``y`` an atom holding the primal result, so that
# e.g. tanh's derivative 1 - y² reuses the value instead of recomputing it.
# Scalar primitives may also give ``jacobian(args) -> Expr``, their
# Jacobian in the linear-map vocabulary of Ellis et al.'s Fig. 2 (e.g.
# ∂mul = S(y) ⋈ S(x)), used when the optimiser prints the Jacobian stages.
# ``nondiff=True`` declares a primitive whose derivative is zero.  Every AD
# algorithm builds on these rules, so adding a primitive touches one place.


def lookup(name: object) -> Primitive | None:
    """The primitive called ``name`` (``add@ff`` finds ``add``), if any."""
    if not isinstance(name, str):
        return None
    return PRIMITIVES.get(name) or PRIMITIVES.get(strip_suffix(name))


def args_of(t: Type, n: int) -> tuple[Type, ...] | None:
    """The ``n`` argument types of a call whose argument has type ``t``."""
    if n == 1:
        return (t,)
    if isinstance(t, TTuple) and len(t.elems) == n:
        return t.elems
    return None


def spread(f: Fn) -> Fn:
    """Evaluator of a several-argument primitive from one of its arguments
    (marked, see Note [Spread arguments] in labrys.opt.anf)."""
    def spreading(a):
        return f(*a)
    spreading.spreads = True
    return spreading
