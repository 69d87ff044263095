"""Elementwise fusion for generated loop code: a chain of elementwise
arithmetic on small vectors is one loop, not one allocated vector per operation.

    Γ ⊢ (op a b) : Vec Float   ↦   Γ ⊢ (assert (eq (size a) (size b))
                                          (build (size a) (lam i (op (index i a) (index i b))))) : Vec Float
        (op elementwise, a and b variables of type Vec Float or Float atoms; then deforestation;
         a build that deforestation did not fuse is given back its original form)

Note [Fusing elementwise chains]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The compiled backend lowers ``(mul a b)`` on vectors to a NumPy expression,
which allocates its result.  The derivatives of ADBench's LSTM are chains of
such operations on vectors of 14 elements (a gate is ``sigmoid`` of ``x ·
w + b``, its cotangent a product of four factors), and ``[rev lstm_step]``
made about a hundred such vectors per call: allocation, not arithmetic, was
most of the LSTM gradient's time.  Here each elementwise operation whose
result is a ``Vec Float`` is first written as the ``build`` it means, so
that deforestation (Note [Deforesting small vectors] in
:mod:`labrys.opt.deforest`) computes an intermediate where its consumer
reads it — *only* when it is read exactly once per element, so no work is
repeated (``tanh cell`` read three times stays a vector).  Deforestation is
run to its fixed point, one vector per round.  Whatever it did not fuse is
turned back into the operation it was, so an isolated operation is lowered
exactly as before.

Semantics are kept: the size check of the NumPy operation becomes an
``assert`` before the loop (a mismatch fails, and the call is re-run on the
python backend, which reports it with the interpreter's message, Note
[Compiled fallback]); every element is computed as before, by the same
scalar primitive, in the same order, so results are bit-for-bit equal.
The rewrite leaves a def unchanged if the rewritten def does not type-check.
"""
from __future__ import annotations

from typing import Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.traverse import fresh_for, map_bottom_up, nodes
from ..ir.types import BOOL, FLOAT, INTEGER, TLam, TTensor, TTuple
from ..types.primitives import lookup
from ..util.deep import deep
from .anf import anf
from .deforest import deforest

VEC_FLOAT = TTensor(1, FLOAT)
MAX_PASSES = 64  # deforest() calls (each up to its own rounds); a chain fuses one vector per round
MAX_NODES = 20_000  # a larger def is left as it is: each round walks the whole def
SKIP = ("ts_add", "ts_scale", "ts_neg")  # tangent sums are sparse-aware; left to their own lowering


def _elementwise(e: ir.Expr) -> str | None:
    """The scalar primitive of an elementwise call on Vec Float whose arguments are atoms, else None."""
    if not (isinstance(e, ir.Call) and isinstance(e.func, str) and e.type == VEC_FLOAT) or e.func in SKIP:
        return None
    prim = lookup(e.func)
    if prim is None or not prim.elementwise:
        return None
    args = ir.call_args(e)
    if not 1 <= len(args) <= 2 or not any(a.type == VEC_FLOAT for a in args):
        return None
    if not all(isinstance(a, ir.Var) and a.type == VEC_FLOAT or isinstance(a, (ir.Var, ir.Const)) and a.type == FLOAT
               for a in args):
        return None
    scalar = lookup(prim.elementwise)
    if scalar is None or scalar.typeof(FLOAT if len(args) == 1 else TTuple((FLOAT,) * len(args))) != FLOAT:
        return None
    return prim.elementwise


def _as_build(e: ir.Call, scalar: str, fresh: Callable[[str], str]) -> tuple[ir.Call, ir.Expr | None]:
    """The build ``e`` means, and the size check it needs (None: one vector operand)."""
    args = ir.call_args(e)
    vectors = [a for a in args if a.type == VEC_FLOAT]
    i = ir.Var(fresh("i"), type=INTEGER)
    elems = tuple(ir.Call("index", ir.Tuple((i, a), type=TTuple((INTEGER, VEC_FLOAT))), type=FLOAT)
                  if a.type == VEC_FLOAT else a for a in args)
    arg = elems[0] if len(elems) == 1 else ir.Tuple(elems, type=TTuple((FLOAT,) * len(elems)))
    lam = ir.Lam(i.name, INTEGER, ir.Call(scalar, arg, type=FLOAT, span=e.span), type=TLam(INTEGER, FLOAT))
    n = ir.Call("size", vectors[0], type=INTEGER)
    build = ir.Call("build", ir.Tuple((n, lam), type=TTuple((INTEGER, lam.type))), type=VEC_FLOAT, span=e.span)
    if len(vectors) == 1:
        return build, None
    return build, _same_size(vectors[0], vectors[1])


def _same_size(a: ir.Var, b: ir.Var) -> ir.Call:
    sizes = (ir.Call("size", a, type=INTEGER), ir.Call("size", b, type=INTEGER))
    return ir.Call("eq", ir.Tuple(sizes, type=TTuple((INTEGER, INTEGER))), type=BOOL)


def _as_operation(e: ir.Expr) -> tuple[ir.Call, tuple[ir.Var, ...]] | None:
    """A build this pass made and deforestation left alone, as the operation it was
    and its vector operands (else None)."""
    if not (isinstance(e, ir.Call) and e.func == "build" and e.type == VEC_FLOAT):
        return None
    n, lam = ir.call_args(e)
    if not (isinstance(lam, ir.Lam) and isinstance(n, ir.Call) and n.func == "size" and isinstance(lam.body, ir.Call)
            and isinstance(lam.body.func, str)):
        return None
    body, i = lam.body, lam.var
    args = []
    for a in ir.call_args(body):
        if isinstance(a, ir.Call) and a.func == "index" and isinstance(a.arg.elems[0], ir.Var) \
                and a.arg.elems[0].name == i and isinstance(a.arg.elems[1], ir.Var):
            args.append(a.arg.elems[1])
        elif isinstance(a, (ir.Var, ir.Const)) and a.type == FLOAT and not (isinstance(a, ir.Var) and a.name == i):
            args.append(a)
        else:
            return None
    vectors = tuple(a for a in args if a.type == VEC_FLOAT)
    prim = lookup(body.func)
    if not vectors or n.arg != vectors[0] or prim is None or prim.elementwise != body.func:
        return None
    arg = args[0] if len(args) == 1 else ir.Tuple(tuple(args), type=TTuple(tuple(a.type for a in args)))
    return ir.Call(body.func, arg, type=VEC_FLOAT, span=e.span), vectors


def _lets(d: ir.Def) -> int:
    return sum(1 for x in nodes(d.body) if isinstance(x, ir.Let))


@deep
def fuse_elementwise(d: ir.Def, check: Callable[[ir.Def], ir.Def]) -> ir.Def:
    """``d`` with its chains of elementwise vector operations fused into loops
    (Note [Fusing elementwise chains]); ``check`` type-checks a def (raising on an error)."""
    if any(k > MAX_NODES for k, _ in enumerate(nodes(d.body))):
        return d
    if not any(_elementwise(x) for x in nodes(d.body)):
        return d
    fresh = fresh_for(d)

    def to_build(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and (scalar := _elementwise(x.rhs)):
            build, same = _as_build(x.rhs, scalar, fresh)
            body = x.body if same is None else ir.Assert(same, x.body, type=x.body.type, span=x.span)
            return ir.Let(x.binder, build, body, type=x.type, span=x.span, binding_span=x.binding_span)
        return x

    current = d.with_body(map_bottom_up(anf(d.body, fresh), to_build))
    lets = _lets(current)
    for _ in range(MAX_PASSES):  # deforest renames apart: a pass that fused nothing has as many lets
        current = deforest(current)
        if _lets(current) == lets:
            break
        lets = _lets(current)

    def back(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and (found := _as_operation(x.rhs)):
            op, vectors = found
            body = x.body
            if len(vectors) == 2 and isinstance(body, ir.Assert) and body.cond == _same_size(*vectors):
                body = body.body  # the operation checks the sizes itself
            return ir.Let(x.binder, op, body, type=x.type, span=x.span, binding_span=x.binding_span)
        return x

    out = d.with_body(map_bottom_up(current.body, back))
    try:
        return check(out)
    except LabrysError:  # Note [Fusing elementwise chains]: never worse than not fusing
        return d
