"""The structural mutants of CHAD's translations and of split mode's reverse
bindings (the families ``chadfwd``, ``chadrev``, ``split`` of
tests/mutation/structural.py, which plants them)."""
from __future__ import annotations

from typing import Any, Callable

from labrys.ad import bog, chad_common, chad_fwd, chad_types
from labrys.ir import nodes as ir
from labrys.ir.build import C, V, tup
from labrys.ir.nodes import const
from labrys.ir.types import FLOAT
from labrys.types.primitives import lookup
from mutation.mutants import SCALE, scaled

# --- CHAD (Vákár & Smeding): the (co)tangent map of a Float a case produces -------------------

def _chad_fault(tr: Any, out: ir.Expr, g: Any, op: str) -> ir.Expr:
    """A translated Float term (primal, linear map) with its linear map changed:
    chadfwd's maps a context tangent to the Float's, chadrev's the Float's cotangent
    to the context's."""
    x, xd = tr.fresh("mx"), tr.fresh("mxd")
    if isinstance(tr, chad_fwd.Fwd):
        lin = tr.tan(g, lambda v: chad_common.zero(chad_types.f2(FLOAT)) if op == "zero"
                     else C("mul", const(SCALE[op]), ir.App(V(xd), v)))
    else:
        lin = tr.back(FLOAT, lambda v: chad_common.zero(tr.ctx(g)) if op == "zero"
                      else ir.App(V(xd), C("mul", const(SCALE[op]), v)))
    return ir.Let((x, xd), out, tup(V(x), lin))


def construct(e: ir.Expr) -> str | None:
    """The construct e is, as the structural mutants name cases: let (``let_tuple``
    for a tuple pattern), if, tuple, get, app, case, lam, build, sumbuild, fold,
    call (of a user function) or prim (of a primitive: tests/mutation/mutants.py)."""
    match e:
        case ir.Let(x, _, _):
            return "let" if isinstance(x, str) else "let_tuple"
        case ir.If():
            return "if"
        case ir.Tuple(elems) if elems:
            return "tuple"
        case ir.Get():
            return "get"
        case ir.App():
            return "app"
        case ir.Case():
            return "case"
        case ir.Lam():
            return "lam"
        case ir.Call(f, _) if f in ("build", "sumbuild", "fold"):
            return f
        case ir.Call(f, _):
            return "call" if lookup(f) is None else "prim"
    return None


def cases(table: dict[str, str]) -> Callable[[ir.Expr], str | None]:
    """A family's classifier: the constructs it has a case for, by the family's name of it."""
    return lambda e: table.get(construct(e))


_LET_TUPLE_TOO = {"let": "let", "let_tuple": "let", "if": "if", "tuple": "tuple", "get": "get"}
nabla_case = cases(_LET_TUPLE_TOO | {"build": "build", "sumbuild": "sumbuild", "fold": "fold", "call": "call",
                                     "prim": "call"})           # Knossos ∇: every call, and the loops
dual_case = cases(_LET_TUPLE_TOO | {"app": "app", "case": "case", "lam": "lam", "call": "call"})
chad_case = cases({"let": "let", "if": "if", "tuple": "tuple", "get": "get", "app": "app", "case": "case",
                   "call": "call"})


def chad_mutate(tr: Any, e: ir.Expr, out: ir.Expr, m: Any, g: Any) -> ir.Expr | None:
    op, site = m.op, m.site
    if op == "swap":
        return None
    if m.case == "let" and isinstance(out, ir.Let) and site == 0 and e.rhs.type == FLOAT:
        return ir.Let(out.binder, _chad_fault(tr, out.rhs, g, op), out.body)
    if m.case == "if" and isinstance(out, ir.Let) and isinstance(out.body, ir.If) and e.type == FLOAT and site < 2:
        b = out.body
        branch = ir.If(b.cond, _chad_fault(tr, b.then, g, op), b.orelse) if site == 0 else \
            ir.If(b.cond, b.then, _chad_fault(tr, b.orelse, g, op))
        return ir.Let(out.binder, out.rhs, branch)
    if m.case == "tuple":
        floats = [k for k, x in enumerate(e.elems) if x.type == FLOAT]
        if site >= len(floats):
            return None
        return _nth_let_rhs(out, floats[site], lambda rhs: _chad_fault(tr, rhs, g, op))
    if m.case in ("get", "app", "call", "case") and e.type == FLOAT and site == 0:
        return _chad_fault(tr, out, g, op)
    return None


def _nth_let_rhs(out: ir.Expr, k: int, f: Callable[[ir.Expr], ir.Expr]) -> ir.Expr | None:
    """out with the rhs of its k-th nested let changed (a tuple's components are bound in order)."""
    lets: list[ir.Let] = []
    x = out
    while isinstance(x, ir.Let) and len(lets) <= k:
        lets.append(x)
        x = x.body
    if len(lets) <= k:
        return None
    rebuilt = lets[k].body
    rebuilt = ir.Let(lets[k].binder, f(lets[k].rhs), rebuilt)
    for outer in reversed(lets[:k]):
        rebuilt = ir.Let(outer.binder, outer.rhs, rebuilt)
    return rebuilt


# --- split mode (BOG AD, Ellis et al. §11): the reverse bindings a binding's case emits -------

def _split_case(rhs: ir.Expr) -> str | None:
    match rhs:
        case ir.Var():
            return "var"
        case ir.Call("dup", _):
            return "dup"
        case ir.Tuple(elems) if elems:
            return "tuple"
        case ir.Get():
            return "get"
        case ir.If():
            return "if"
        case ir.Call(f, _) if f in ("build", "sumbuild", "fold", "ifold"):
            return "loop"
        case ir.Call(f, _) if lookup(f) is None:
            return "call"
    return None


def wrap_split(m: Any, fired: list[int]):
    """Fault the ``site``-th reverse binding (∂ = value) that one case of
    :meth:`labrys.ad.bog.Split.binding` emits: ``ts_neg``, ``ts_scale 2`` or
    ``ts_scale 0`` of its value."""
    original = bog.Split.binding

    def mutated(self, b, binder, rhs, where):
        before = len(b.cur)
        out = original(self, b, binder, rhs, where)
        k = before + m.site
        if _split_case(rhs) == m.case and k < len(b.cur):
            name, value = b.cur[k]
            if not isinstance(value, str):  # "∂t": the block's incoming cotangent, bound later
                fired[0] += 1
                b.cur[k] = (name, scaled(m.op, value))
        return out
    return original, mutated


# --- Knossos: applying and transposing a closed linear map (linear.Transposer) ------------------

LM_CASES = {"lmCompose": "compose", "lmAdd": "add", "lmVCat": "vcat", "lmHCat": "hcat", "lmBuild": "build",
            "lmSumBuild": "build", "lmBuildT": "build", "lmScale": "scale", "lmOne": "one"}


def wrap_lm(m: Any, fired: list[int], cls: type, method: str):
    """Fault what one case of ``Transposer.apply_lm`` (M ⊙ v, Knossos fwd) or
    ``Transposer.reverse_lm`` (r ⊙ᴿ M, Knossos rev) returns: ``ts_neg``,
    ``ts_scale 2`` or ``ts_scale 0`` of it, or for ``lmAdd`` only one term."""
    original = getattr(cls, method)

    def mutated(self, f, arg, lm, *rest):
        if LM_CASES.get(f) != m.case:
            return original(self, f, arg, lm, *rest)
        if m.op in ("drop0", "drop1"):
            if f != "lmAdd":
                return original(self, f, arg, lm, *rest)
            fired[0] += 1
            keep = arg.elems[1 if m.op == "drop0" else 0]
            return self.apply(keep, rest[0], rest[1], rest[2]) if method == "apply_lm" else \
                self.reverse_closed(keep, rest[0], rest[1])
        fired[0] += 1
        got = original(self, f, arg, lm, *rest)
        return scaled(m.op, got)
    return original, mutated
