"""The primitive registry: one entry per primitive (LANGUAGE.md §5).

An entry holds everything labrys knows about a primitive: its type rule,
its evaluation and its cost for the op-count meter; the AD modules add their
derivative rules to the same entry (``Primitive.rules``), so adding a
primitive touches one place.

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


@dataclass
class Primitive:
    name: str
    typeof: TypeRule
    impl: Callable[[Type], Fn]
    doc: str
    cost: Cost | None = None  # (result, argument) -> ops; default: numel(result)
    rules: dict[str, Any] = field(default_factory=dict)  # derivative rules, keyed by algorithm

    def ops(self, result: Any, arg: Any) -> int:
        return numel(result) if self.cost is None else self.cost(result, arg)


PRIMITIVES: dict[str, Primitive] = {}


def primitive(name: str, typeof: TypeRule, impl: Callable[[Type], Fn], doc: str,
              cost: Cost | None = None, **rules: Any) -> Primitive:
    """Register a primitive.  ``rules`` are its derivative rules, see Note [Derivative rules]."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name} registered twice")
    PRIMITIVES[name] = p = Primitive(name, typeof, impl, doc, cost, dict(rules))
    return p


# Note [Derivative rules]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A primitive's derivatives are IR builders stored in its entry:
#
#   fwd(args, dargs, types) -> Expr           the tangent of the result
#   rev(args, dr, types)    -> tuple[Expr]    the cotangent of each argument
#
# ``args`` are the call's arguments as atoms (variables or constants: the AD
# passes put programs in A-normal form first, so a rule may repeat them),
# ``dargs`` their tangents, ``dr`` the result's cotangent (an atom), and
# ``types`` the argument types.  Scalar primitives may also give
# ``jacobian(args) -> Expr``, their Jacobian in the linear-map vocabulary of
# seed 000 Fig. 2 (e.g. ∂mul = S(y) ⋈ S(x)), used when the optimiser prints
# the Jacobian stages.  ``nondiff=True`` declares a primitive whose
# derivative is zero (comparisons, sizes, conversions from Integer).  Every
# AD algorithm builds on these two rules, so adding a primitive touches one
# place.


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


class Meter:
    """The op-count meter: scalar operations executed by primitives.

    Backends add ``Primitive.ops(result, arg)`` after every call; primitives
    with internal loops (``sum``, ``sumbuild``) add their additions here.
    """

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops = 0


METER = Meter()
