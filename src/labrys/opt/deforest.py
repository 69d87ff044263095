"""Deforestation for generated loop code: a small vector that is only read
element by element, once per element, is never made.

    Γ ⊢ (let (v (build n (lam i e))) b) : τ        ↦  Γ ⊢ b[(index j v) := e[i := j], (size v) := n] : τ
        when v's one (index j v) is the body of a loop over j < n
    Γ ⊢ (ts_sumbuild (size v) (lam i (ts_delta v i x)) v) : dT(Vec Float)
                                                    ↦  Γ ⊢ (build (size v) (lam i x)) : Vec Float
    Γ ⊢ (f a) : τ  ↦  Γ ⊢ (let (p a) body_f) : τ    when f is a small user def that calls no function

Note [Deforesting small vectors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
ADBench GMM's gradient visits n·K point–component terms, and each made its
small vectors on the heap: ``Qz = (matvec Q z)`` in the forward sweep, the
same again in the reverse sweep, and ``Qz``'s cotangent (a ``ts_sumbuild`` of
one-hots at the loop index, which is a build).  Each is read once per element
by the loop that follows (``sqnorm``'s sum, the cotangent's loop, the outer
product's rows), so the element can be computed where it is read.  The rule
fires only when that is *exactly once* per element: the single ``index`` of
``v`` sits directly in the body of a loop (``build``, ``sumbuild``,
``ts_sumbuild``) over ``j`` whose count is ``v``'s own (after resolving
``size`` and let-bound counts), with no other lambda between ``v``'s let and
the read.  So no work is repeated and every element is still computed (an
element whose computation fails still fails); only the allocation and the
store/load go.  A vector read more often (``z = x_i − μ_k``, read d times by
the matrix–vector product) stays a vector: recomputing it would cost d
subtractions per read.

Small user functions that call no other function (``matvec``, ``sqnorm``)
are inlined first so that their builds meet their consumers; a def is one
module for Numba anyway.  The pass keeps a def typed and its binder names
distinct (it renames the def apart first).
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.traverse import FreshNames, children, fresh_for, map_bottom_up, nodes, size, substitute
from ..ir.types import FLOAT, TLam, TTensor, TTuple
from ..util.deep import deep
from .anf import rename_apart

MAX_INLINE = 120   # nodes of a user def that is inlined
MAX_ROUNDS = 8     # deforestation rounds (each can expose the next: Qz, then its cotangent)
LOOPS = ("build", "sumbuild", "ts_sumbuild")
VEC_FLOAT = TTensor(1, FLOAT)

Callee = Callable[[ir.Call], "ir.Def | None"]


def inline_leaves(d: ir.Def, callee: Callee) -> ir.Def:
    """``d`` with its calls of small user functions that call no function inlined.
    ``callee(call)`` is the def a call of a user function runs (None for a primitive)."""
    if not any(isinstance(x, ir.Call) and isinstance(x.func, str) and callee(x) for x in nodes(d.body)):
        return d
    fresh = fresh_for(d)
    return d.with_body(_inline_leaves(d.body, callee, fresh))


def deforest(d: ir.Def) -> ir.Def:
    """``d`` with its read-once small vectors deforested (Note [Deforesting small vectors])."""
    if not any(isinstance(x, ir.Call) and x.func in LOOPS for x in nodes(d.body)):
        return d
    body = float_lets(rename_apart(d.body, fresh_for(d)))
    for _ in range(MAX_ROUNDS):
        new = float_lets(_deforest_round(_sumbuild_of_deltas(body)))
        if new is body:
            break
        body = new
    if body is d.body:
        return d
    return d.with_body(body)


# --- inlining --------------------------------------------------------------

def _is_leaf(d: ir.Def, callee: Callee) -> bool:
    return size(d.body) <= MAX_INLINE and not any(
        isinstance(x, (ir.App, ir.FnRef)) or isinstance(x, ir.Call) and (not isinstance(x.func, str) or callee(x))
        for x in nodes(d.body))


@deep
def _inline_leaves(e: ir.Expr, callee: Callee, fresh: FreshNames) -> ir.Expr:
    def rewrite(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and isinstance(x.func, str)):
            return x
        d = callee(x)
        if d is None or not _is_leaf(d, callee):
            return x
        args = ((x.arg,) if len(d.params) == 1 else x.arg.elems
                if isinstance(x.arg, ir.Tuple) and len(x.arg.elems) == len(d.params) else None)
        names = {p.name: fresh(p.name) for p in d.params}
        atoms = {p.name: a for p, a in zip(d.params, args or ()) if isinstance(a, (ir.Var, ir.Const))}
        body = substitute(rename_apart(d.body, fresh), {p.name: atoms.get(p.name) or ir.Var(names[p.name], type=p.type)
                                                        for p in d.params}, fresh)
        if args is None:
            return ir.Let(tuple(names[p.name] for p in d.params), x.arg, body, type=x.type, span=x.span)
        for p, a in reversed(list(zip(d.params, args))):
            if p.name not in atoms:  # an atom argument is substituted: no alias for deforestation to see through
                body = ir.Let(names[p.name], a, body, type=x.type, span=x.span)
        return body
    return map_bottom_up(e, rewrite)


@deep
def float_lets(e: ir.Expr) -> ir.Expr:
    """``(let (x (let (y a) b)) c)`` as ``(let (y a) (let (x b) c))`` (binders are distinct)."""
    def rewrite(x: ir.Expr) -> ir.Expr:
        while isinstance(x, ir.Let) and isinstance(x.rhs, ir.Let):
            inner = x.rhs
            x = ir.Let(inner.binder, inner.rhs, rewrite(ir.Let(x.binder, inner.body, x.body, type=x.type, span=x.span,
                                                               binding_span=x.binding_span)),
                       type=x.type, span=inner.span, binding_span=inner.binding_span)
        return x
    return map_bottom_up(e, rewrite)


# --- a sum of one-hots at the loop index is a build ---------------------------

def _sumbuild_of_deltas(e: ir.Expr) -> ir.Expr:
    counts = _Counts(e)

    def rewrite(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and x.func == "ts_sumbuild" and x.type == VEC_FLOAT):
            return x
        n, lam, _like = ir.call_args(x)
        if not (isinstance(lam, ir.Lam) and isinstance(n, ir.Var)):
            return x
        body = _element_of_delta(lam.body, lam.var)
        if body is None or counts.canon(n) != counts.canon(ir.Call("size", body[1])):
            return x
        element = ir.Lam(lam.var, lam.var_type, body[0], type=TLam(lam.var_type, FLOAT), span=lam.span)
        return ir.Call("build", ir.Tuple((n, element), type=TTuple((n.type, element.type))), type=VEC_FLOAT,
                       span=x.span)
    return map_bottom_up(e, rewrite)


def _element_of_delta(body: ir.Expr, i: str) -> tuple[ir.Expr, ir.Var] | None:
    """A loop body whose value is (ts_delta v i x) as (body with value x, v); else None."""
    chain: list[ir.Let] = []
    while isinstance(body, ir.Let):
        chain.append(body)
        body = body.body
    delta = body
    if isinstance(body, ir.Var) and chain and chain[-1].binder == body.name:
        delta = chain.pop().rhs
    if not (isinstance(delta, ir.Call) and delta.func == "ts_delta"):
        return None
    v, j, value = ir.call_args(delta)
    if not (isinstance(v, ir.Var) and v.type == VEC_FLOAT and isinstance(j, ir.Var) and j.name == i
            and value.type == FLOAT):
        return None
    out = value
    for let in reversed(chain):
        out = ir.Let(let.binder, let.rhs, out, type=FLOAT, span=let.span, binding_span=let.binding_span)
    return out, v


# --- deforesting read-once builds -------------------------------------------

class _Counts:
    """Loop counts up to let-bound names: ``t = (size v)`` and ``v = (build n …)`` resolve to n's own."""

    def __init__(self, root: ir.Expr) -> None:
        self.lets: dict[str, ir.Expr] = {}
        for x in nodes(root):
            if isinstance(x, ir.Let) and isinstance(x.binder, str):
                self.lets[x.binder] = x.rhs

    def canon(self, e: ir.Expr) -> ir.Expr:
        for _ in range(64):
            if isinstance(e, ir.Var) and e.name in self.lets and _is_count(self.lets[e.name]):
                e = self.lets[e.name]
            elif isinstance(e, ir.Call) and e.func == "size" and isinstance(e.arg, ir.Var) \
                    and _build_of(self.lets.get(e.arg.name)) is not None:
                e = ir.call_args(_build_of(self.lets[e.arg.name]))[0]
            else:
                break
        return e


def _is_count(e: ir.Expr) -> bool:
    return isinstance(e, ir.Var) or isinstance(e, ir.Call) and e.func == "size" and isinstance(e.arg, ir.Var)


def _build_of(e: ir.Expr | None) -> ir.Call | None:
    if isinstance(e, ir.Call) and e.func == "build" and e.type == VEC_FLOAT:
        n, lam = ir.call_args(e)
        if isinstance(lam, ir.Lam) and lam.body.type == FLOAT and _is_count(n):
            return e
    return None


@deep
def _uses(e: ir.Expr, builds: set[str]) -> dict[str, list]:
    """For each name in ``builds``: its uses as (kind, node, enclosing lambdas and their loop calls, lambda depth
    of its let body).  Kinds: 'index', 'size', 'other'."""
    found: dict[str, list] = {b: [] for b in builds}
    at_let: dict[str, tuple[int, int]] = {}  # lambda depth and branch depth of the let

    def go(x: ir.Expr, lams: tuple, branches: int, parent: ir.Expr | None = None) -> None:
        if isinstance(x, ir.Var):
            if x.name in found:
                found[x.name].append(("other", x, lams, at_let.get(x.name, (0, 0))))
            return
        if isinstance(x, ir.Call) and x.func in ("index", "size"):
            target = x.arg.elems[1] if x.func == "index" and isinstance(x.arg, ir.Tuple) else x.arg
            if isinstance(target, ir.Var) and target.name in found:
                depth, branched = at_let.get(target.name, (0, 0))
                found[target.name].append((x.func, x, lams, (depth, branched - branches)))
                if x.func == "index":
                    go(x.arg.elems[0], lams, branches, x)
                return
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and x.binder in found:
            at_let[x.binder] = (len(lams), branches)
        for k, (child, _) in enumerate(children(x)):
            inner = branches + 1 if isinstance(x, (ir.If, ir.Case)) and k > 0 else branches
            if isinstance(child, ir.Lam):
                loop = parent if isinstance(x, ir.Tuple) else x  # (build (tuple n (lam …)))
                go(child.body, lams + ((child, loop),), inner)
            else:
                go(child, lams, inner, x)
    go(e, (), 0)
    return found


def _deforest_round(e: ir.Expr) -> ir.Expr:
    counts = _Counts(e)
    builds = {name for name, rhs in counts.lets.items() if _build_of(rhs) is not None}
    if not builds:
        return e
    uses = _uses(e, builds)
    chosen: dict[str, ir.Call] = {}
    for name in (n for n in counts.lets if n in builds):  # program order: the same code in every process
        rhs = _build_of(counts.lets[name])
        n = ir.call_args(rhs)[0]
        reads = [u for u in uses[name] if u[0] == "index"]
        if any(u[0] == "other" for u in uses[name]) or len(reads) != 1:
            continue
        _, node, lams, (depth, branched) = reads[0]
        j = node.arg.elems[0]
        if len(lams) != depth + 1 or branched != 0 or not isinstance(j, ir.Var):
            continue
        lam, loop = lams[-1]
        if not (isinstance(loop, ir.Call) and loop.func in LOOPS and lam.var == j.name
                and ir.call_args(loop)[1] is lam and counts.canon(ir.call_args(loop)[0]) == counts.canon(n)):
            continue
        chosen[name] = rhs
        break  # one per round: a chosen build's element may read another
    if not chosen:
        return e

    def rewrite(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and x.binder in chosen:
            return x.body
        if isinstance(x, ir.Call) and x.func in ("index", "size"):
            target = x.arg.elems[1] if x.func == "index" and isinstance(x.arg, ir.Tuple) else x.arg
            if isinstance(target, ir.Var) and target.name in chosen:
                n, lam = ir.call_args(chosen[target.name])
                if x.func == "size":
                    return n
                return substitute(lam.body, {lam.var: x.arg.elems[0]})
        return x
    return map_bottom_up(e, rewrite)
