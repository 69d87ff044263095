"""Loop fusion for generated loop code: a reduction of a build is one loop.

    Γ ⊢ (sum (build n (lam i e))) : T   ↦   Γ ⊢ (sumbuild n (lam i e)) : T

Note [Fusing sum of build]
~~~~~~~~~~~~~~~~~~~~~~~~~~
The simplifier's rule V2 makes this rewrite in derived code; the defs a
user writes are compiled as written, and ``sqnorm`` written as
``(sum (build n f))`` allocated a vector per call only to add it up — in
ADBench GMM once per point and component, in the objective and in its
gradient's forward sweep.  The compiled backend runs this pass on every def
it compiles (ours and the derivations'), so the producer's elements are
added as they are made.  The sum runs in the same order, so the result is
bit-for-bit the same.  Only the direct form is rewritten: moving a
let-bound build to a use could move it into a loop.  The build's size check
stays: a size too large to allocate fails the fused loop's assert, and the call
is re-run unfused on ``python``, which reports it (one semantics, not a loop of
2^62 steps that the interpreter refuses).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import FreshNames, fresh_for, map_bottom_up, nodes
from ..ir.types import BOOL, INTEGER, TTuple
from ..prelude.vectors import max_elements
from ..util.deep import deep


def _fuser(fresh: FreshNames):
    def fuse(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Call) and e.func == "sum" and isinstance(e.arg, ir.Call) and e.arg.func == "build":
            n, body = ir.call_args(e.arg)
            if isinstance(body, ir.Lam) and n.type == INTEGER and e.type is not None and e.type == body.body.type:
                size = ir.Var(fresh("size"), type=INTEGER)
                fits = ir.Call("lte", ir.Tuple((size, ir.Const(max_elements(), INTEGER, type=INTEGER)),
                                               type=TTuple((INTEGER, INTEGER))), type=BOOL)
                loop = ir.Call("sumbuild", ir.Tuple((size, body), type=e.arg.arg.type), type=e.type, span=e.span)
                return ir.Let(size.name, n, ir.Assert(fits, loop, type=e.type, span=e.span), type=e.type,
                              span=e.span)
        return e
    return fuse


@deep
def fuse_loops(d: ir.Def) -> ir.Def:
    """``d`` with every ``(sum (build n f))`` a ``(sumbuild n f)`` (a typed def in, a typed def out)."""
    if not any(isinstance(x, ir.Call) and x.func == "sum" and isinstance(x.arg, ir.Call) and x.arg.func == "build"
               for x in nodes(d.body)):
        return d
    fresh = fresh_for(d)
    return d.with_body(map_bottom_up(d.body, _fuser(fresh)))
