"""The laws of linear maps as rewrite rules (Ellis et al. Figs. 2, 4, 5,
with the transposes of Fig. 5), used to optimise ``[D f]`` and ``R$f`` for the
pipeline view.

    Γ ⊢ m : LM S T   ↦   Γ ⊢ laws(m) : LM S T

Primitive Jacobians on Floats expand to their Fig. 2 form; linear-map lets
are inlined when small or used once (the notes' "inline ∂x at each
occurrence"); compositions, sums and transposes are simplified to a
fixpoint.  Every rule is oriented one way only, so rewriting terminates.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName
from ..ir.traverse import map_bottom_up, size, substitute
from ..ir.types import FLOAT, TLM, TTuple
from ..types.primitives import lookup
from ..util.deep import deep
from .simplify import variable_uses

INLINE_SIZE = 40


def _args(e: ir.Call) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


def _is(e: ir.Expr, name: str) -> bool:
    return isinstance(e, ir.Call) and e.func == name


def _law(e: ir.Expr, witness: ir.Expr) -> ir.Expr:
    """One rewrite at the root of ``e``, or ``e`` itself."""
    if isinstance(e, ir.Call) and isinstance(e.func, DerivedName) and e.func.derivation == "D":
        prim = lookup(e.func.base)
        arg_t = e.arg.type
        floats = arg_t == FLOAT or isinstance(arg_t, TTuple) and all(t == FLOAT for t in arg_t.elems)
        if prim is not None and "jacobian" in prim.rules and floats:
            return prim.rules["jacobian"](_args(e))  # Fig. 2
        return e
    if not isinstance(e, ir.Call) or not isinstance(e.func, str):
        return e
    a = _args(e)
    match e.func:
        case "lmCompose":
            m, n = a
            if _is(m, "lmOne"):
                return n  # R2
            if _is(n, "lmOne"):
                return m
            if _is(m, "lmZero"):
                return C("lmZero", witness, _args(m)[1])  # R1
            if _is(m, "lmScale") and _is(n, "lmScale"):
                return C("lmScale", _args(n)[0], C("mul", _args(m)[1], _args(n)[1]))  # R7
            if _is(m, "lmHCat") and _is(n, "lmVCat") and len(_args(m)) == len(_args(n)):
                terms = [C("lmCompose", x, y) for x, y in zip(_args(m), _args(n))]  # R6
                total = terms[0]
                for t in terms[1:]:
                    total = C("lmAdd", total, t)
                return total
            if _is(n, "lmCompose"):
                p, q = _args(n)
                return C("lmCompose", C("lmCompose", m, p), q) if _is(m, "lmScale") and _is(p, "lmScale") else e
        case "lmAdd":
            m, n = a
            if _is(n, "lmZero"):
                return m  # R3
            if _is(m, "lmZero"):
                return n
            if _is(m, "lmScale") and _is(n, "lmScale"):
                return C("lmScale", _args(m)[0], C("add", _args(m)[1], _args(n)[1]))  # R7
            if _is(m, "lmOne") and _is(n, "lmScale"):
                return C("lmScale", _args(n)[0], C("add", ir.const(1.0), _args(n)[1]))  # R8
            if _is(m, "lmScale") and _is(n, "lmOne"):
                return C("lmScale", _args(m)[0], C("add", _args(m)[1], ir.const(1.0)))
            if _is(m, "lmOne") and _is(n, "lmOne"):
                return C("lmScale", _args(m)[0], ir.const(2.0))
        case "lmTranspose":
            return _transpose(a[0])
    return e


def _transpose(m: ir.Expr) -> ir.Expr:
    """mᵀ by the transposes of Fig. 5."""
    t = lambda x: C("lmTranspose", x)  # noqa: E731
    match m:
        case ir.Let(b, rhs, body):
            return ir.Let(b, rhs, t(body))  # R13: float lets out
        case ir.If(c, x, y):
            return ir.If(c, t(x), t(y))
        case ir.Call(f, _) if isinstance(f, str):
            a = _args(m)
            if f in ("lmOne", "lmScale"):
                return m
            if f == "lmZero":
                return C("lmZero", a[1], a[0])
            if f == "lmCompose":
                return C("lmCompose", t(a[1]), t(a[0]))
            if f == "lmAdd":
                return C("lmAdd", t(a[0]), t(a[1]))
            if f in ("lmVCat", "lmHCat"):
                return C("lmHCat" if f == "lmVCat" else "lmVCat", *map(t, a))
            if f in ("lmBuild", "lmBuildT", "lmSumBuild"):
                n, body = a[:2]
                flipped = {"lmBuild": "lmBuildT", "lmBuildT": "lmBuild"}.get(f, f)
                return C(flipped, n, ir.Lam(body.var, body.var_type, t(body.body)))
            if f == "lmTranspose":
                return a[0]
    return C("lmTranspose", m)


def _inline_lm_lets(e: ir.Expr) -> ir.Expr:
    uses = variable_uses(e)

    def rule(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and (isinstance(x.rhs.type, TLM) or
                                                                   x.binder.startswith("∂")):
            if uses[x.binder] <= 1 or size(x.rhs) <= INLINE_SIZE:
                return substitute(x.body, {x.binder: x.rhs})
        return x
    return map_bottom_up(e, rule)


@deep
def optimise_lm(e: ir.Expr, witness: ir.Expr, rounds: int = 12) -> ir.Expr:
    """Inline linear-map lets, then apply the laws to a fixpoint."""
    e = _inline_lm_lets(e)
    for _ in range(rounds):
        new = map_bottom_up(e, lambda x: _law(x, witness))
        if new == e:
            break
        e = new
    return e
