"""What CHAD's forward and reverse translations share: building the linear layer's
IR (typed zeros, ``+``, projections of linear tuples, linear functions), the
context's snoc-list (co)tangent, and the checks on what reaches a rule.

Note [Linear terms in the IR]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The translation produces the lowered form of §9 directly: ``lin v -> t`` is
``(lam (v : τ) t)``, ``t • s`` an application, ``0`` and ``+`` the typed
primitives ``chadZero`` and ``chadPlus`` (:mod:`.chad_runtime`), copowers
``chadCopow``/``chadCopowFold``.  Two rewrites of Fig. 6 are applied while
building (the unit laws ``0 + a = a`` and projections of a literal pair), so
the raw output is already free of the most common noise; everything else is
left as the paper's rules produce it.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.traverse import FreshNames
from ..ir.types import FLOAT, UNIT, TTuple, Type
from ..types.checker import Functions
from .chad_types import Context, context, extend


def is_zero(e: ir.Expr) -> bool:
    return (isinstance(e, ir.Call) and e.func == "chadZero") or (isinstance(e, ir.Tuple) and not e.elems) \
        or (isinstance(e, ir.Const) and e.ctype == FLOAT and e.value == 0.0)


def zero(t: Type) -> ir.Expr:
    """The typed 0 of t."""
    if t == FLOAT:
        return ir.Const(0.0, FLOAT)
    if t == UNIT:
        return ir.Tuple(())
    return C("chadZero", ir.Lam("z", t, V("z")))


def plus(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """a + b, with the unit laws of the monoid applied."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return C("chadPlus", a, b)


def lget(i: int, t: TTuple, e: ir.Expr) -> ir.Expr:
    """Component i (1-based) of a linear value e : t, which may be the symbolic zero."""
    n = len(t.elems)
    if isinstance(e, ir.Tuple):
        return e.elems[i - 1]
    if is_zero(e):
        return zero(t.elems[i - 1])
    return ir.Get(i, n, C("chadOpen", e))


class ChadBase:
    """State and helpers of one translation: fresh names, the function table, the
    (co)tangent type map ``lin`` (f2 or r2), and the algorithm's name for messages."""

    algorithm = "chad"

    def __init__(self, functions: Functions, fresh: FreshNames, lin) -> None:
        self.functions, self.fresh, self.lin = functions, fresh, lin

    def ctx(self, gamma: Context | None) -> Type:
        return context(gamma)

    def extend(self, gamma: Context | None, name: str, t: Type) -> Context:
        return extend(gamma, name, t, self.lin)

    def unsupported(self, what: str, e: ir.Expr) -> LabrysError:
        return LabrysError(f"{self.algorithm} does not support {what}", e.span)

    def lam(self, v: str, t: Type, body: ir.Expr) -> ir.Lam:
        return ir.Lam(v, t, body)

    def pair_let(self, rhs: ir.Expr, base: str, body) -> ir.Expr:
        """``let <x, x'> = rhs in body(x, x')`` with fresh x, x' (body gets the names)."""
        x, xd = self.fresh(base), self.fresh(base + "d")
        return ir.Let((x, xd), rhs, body(x, xd))


def args_of_call(e: ir.Call) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


def lam_arg(f: ir.Expr, what: str, e: ir.Expr, algorithm: str) -> ir.Lam:
    if not isinstance(f, ir.Lam):
        raise LabrysError(f"internal: {algorithm} expects a literal lambda in {what} (eta-expanded before)", e.span)
    return f


def hand_written(functions: Functions, f, s: Type, t: Type, names: tuple[str, ...], forward: bool):
    """A derivative the user wrote for f, (def [rev f] ..) or (def [fwd f] ..), which CHAD
    calls instead of differentiating f (AD-MAP: every algorithm uses it); only between
    first-order types, whose (co)tangents are the language's."""
    from ..ir.names import DerivedName, erase_types
    from ..ir.types import has_function
    from ..types.tangent import tangent_type
    if has_function(s) or has_function(t):
        return None
    for name in names:
        derived = DerivedName(name, erase_types(f))
        sig = functions.resolve(derived, TTuple((s, tangent_type(s if forward else t))))
        if sig is not None and isinstance(getattr(sig, "decl", None), ir.Def):
            return derived
    return None
