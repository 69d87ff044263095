"""Scratch vectors for the ``compiled`` backend's generator (:mod:`.numba_source`):
an elementwise vector operation inside a loop writes into one buffer per
site instead of allocating a new vector per iteration.

    Γ ⊢ (let (z (op a b)) body) : τ    (inside a loop; op elementwise on Vec Float;
                                         z does not escape body, see below)
      ↦  if scr.shape[0] != size(a): scr = empty(size(a))
         for q < size(a): scr[q] = op(a[q], b[q])
         z = scr ; body

Note [Scratch vectors]
~~~~~~~~~~~~~~~~~~~~~~
The gradient of ADBench's GMM computes ``z = x_i − μ_k`` for every point and
component, once in the primal sweep and once more in the reverse one: two
d-vectors allocated and freed per (i, k), 5·10⁴ allocations per call at
d10 K25, about a quarter of the gradient's time.  Such a vector only lives
for one iteration: it is read by ``index``, measured by ``size``, and serves
as the shape of a cotangent (``ts_delta``'s and ``ts_zero``'s first argument,
a ``ts_sumbuild``'s shape argument).  Then one buffer per site, made when the
function starts and grown when a size differs, can hold it in every
iteration: the site runs again only after its let body has finished with
the last value (the body cannot contain the site itself; a recursive call
has its own frame).  The escape test is syntactic and conservative: any
other use of the variable (a result, a tuple that is anything but a
ts_sumbuild's shape, an argument of a call, a lambda that is not a loop's
inline body) keeps the allocating form, which is always right.

Each element is computed by the same scalar primitive as the elementwise
fusion uses (Note [Fusing elementwise chains] in labrys.opt.elementwise), in
the same order, so results are bit-for-bit those of the NumPy operation;
operands of different sizes raise as ``_shaped`` does (the call then re-runs
on ``python``, which reports it, Note [Compiled fallback]).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import children
from ..ir.types import FLOAT, TTuple
from ..opt.elementwise import SKIP, VEC_FLOAT
from ..types.primitives import Primitive, lookup

INLINE_BODIES = ("build", "sumbuild", "ts_sumbuild", "fold", "ifold")  # their lambdas are emitted inline
_SHAPE_ONLY = {"size": (0,), "ts_zero": (0,), "ts_delta": (0,), "index": (1,)}  # call -> argument positions


def vector_operation(e: ir.Expr) -> Primitive | None:
    """The scalar primitive of an elementwise call of one or two arguments (Vec Float or
    Float, at least one a vector) whose result is a Vec Float, else None."""
    if not (isinstance(e, ir.Call) and isinstance(e.func, str) and e.type == VEC_FLOAT) or e.func in SKIP:
        return None
    prim = lookup(e.func)
    args = ir.call_args(e)
    if prim is None or not prim.elementwise or not 1 <= len(args) <= 2 or VEC_FLOAT not in [a.type for a in args] \
            or any(a.type not in (VEC_FLOAT, FLOAT) for a in args):
        return None
    scalar = lookup(prim.elementwise)
    if scalar is None or scalar.numba is None or \
            scalar.typeof(FLOAT if len(args) == 1 else TTuple((FLOAT,) * len(args))) != FLOAT:
        return None
    return scalar


def _parents(body: ir.Expr) -> tuple[dict[int, ir.Expr], list[ir.Expr]] | None:
    """Each node's parent (by id), and the nodes; None if body has a lambda that is not a loop's inline body."""
    parent: dict[int, ir.Expr] = {}
    seen: list[ir.Expr] = []
    stack = [body]
    while stack:
        x = stack.pop()
        seen.append(x)
        if isinstance(x, ir.Lam):
            p = parent.get(id(x))
            call = parent.get(id(p)) if p is not None else None
            if not (isinstance(p, ir.Tuple) and isinstance(call, ir.Call) and call.func in INLINE_BODIES):
                return None
        for c, _ in children(x):
            parent[id(c)] = x
            stack.append(c)
    return parent, seen


def stays_inside(name: str, body: ir.Expr) -> bool:
    """True if the vector ``name`` is only read, measured or used as a shape in ``body``
    (Note [Scratch vectors]); False when in doubt."""
    found = _parents(body)
    if found is None:
        return False
    parent, seen = found
    if any(name in bound for x in seen for _, bound in children(x)):
        return False  # shadowed somewhere: not worth telling the bindings apart
    work = [name]
    checked: set[str] = set()
    while work:
        var = work.pop()
        if var in checked:
            continue
        checked.add(var)
        for x in seen:
            if isinstance(x, ir.Var) and x.name == var and not _harmless(x, parent, work):
                return False
    return True


def _harmless(v: ir.Var, parent: dict[int, ir.Expr], work: list[str]) -> bool:
    """Whether this occurrence only reads or measures the vector; a tuple let-bound to a
    variable used only as a ts_sumbuild's shape queues that variable in ``work``."""
    p = parent.get(id(v))
    if isinstance(p, ir.Call) and p.func in _SHAPE_ONLY and p.arg is v and _SHAPE_ONLY[p.func] == (0,):
        return True
    if isinstance(p, ir.Tuple):
        k = next(k for k, x in enumerate(p.elems) if x is v)
        call = parent.get(id(p))
        if isinstance(call, ir.Call) and call.arg is p and isinstance(call.func, str) \
                and k in _SHAPE_ONLY.get(call.func, ()):
            return True
        if isinstance(call, ir.Call) and call.func == "ts_sumbuild" and call.arg is p and k == 2:
            return True
        if isinstance(call, ir.Let) and call.rhs is p and isinstance(call.binder, str):
            work.append(call.binder)  # (let (t (tuple … v …)) …): every use of t must be harmless too
            return True
    return False


class ScratchMixin:
    """The Numba emitter's rule for elementwise vector lets inside loops (Note [Scratch vectors])."""

    def let_step(self, e: ir.Let) -> None:
        if self.depth > 1 and isinstance(e.binder, str) and self.scratch(e):
            return
        super().let_step(e)

    def scratch(self, e: ir.Let) -> bool:
        prim = vector_operation(e.rhs)
        if prim is None or not stays_inside(e.binder, e.body):
            return False
        args = ir.call_args(e.rhs)
        if prim.numba([f"_x{k}" for k in range(len(args))], [FLOAT] * len(args), FLOAT) is None:
            return False
        xs = [self.atom(a) for a in args]
        vectors = [x for a, x in zip(args, xs) if a.type == VEC_FLOAT]
        q = self.mod.fresh("i")
        code = prim.numba([f"{x}[{q}]" if a.type == VEC_FLOAT else x for a, x in zip(args, xs)],
                          [FLOAT] * len(args), FLOAT)
        buf = self.mod.fresh("scr")
        self.fn.lines.insert(0, (f"    {buf} = _np.empty(0)", None))
        n = f"{vectors[0]}.shape[0]"
        for other in vectors[1:]:
            self.emit(f"if {other}.shape[0] != {n}:")
            self.indented().emit('raise ValueError("tensor sizes differ")')
        self.emit(f"if {buf}.shape[0] != {n}:")
        self.indented().emit(f"{buf} = _np.empty({n})")
        self.emit(f"for {q} in range({n}):")
        self.indented().emit(f"{buf}[{q}] = {code}")
        self.emit(f"{self.mod.bind(self.env, e.binder)} = {buf}")
        return True
