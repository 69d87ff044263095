"""The Σs of §9's lowering of CHAD (Vákár & Smeding, CHAD §9, §10): each Σ of the reverse
translation becomes ``sumbuild``/``ts_sumbuild`` shaped like a primal value (chad_lower_shapes),
with the parts that do not need the loop taken out of it — its zeros (Note [Zeros out of a Σ]) and
its one-hots at an enclosing loop's index (Note [One-hots out of a Σ]) — and ``+`` of tuples split
into its parts.

    Γ ⊢ Σ_i t_i : τ̲ (lowered, typed)  ↦  Γ ⊢ let s = Σ_i t'_i in <parts of s, zeros, one-hots> : τ̲
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import free_vars, map_bottom_up, nodes
from ..ir.types import FLOAT, INTEGER, UNIT, TLam, TTuple
from ..util.deep import deep
from .chad_lower import _args, _tangent, sizeless, spell_out_zeros
from .chad_lower_shapes import _HOLE, Shapes, _binders


def _zero_part(x: ir.Expr) -> bool:
    """A part of a Σ's body that is a zero: the same in every iteration, so taken out of the Σ."""
    return (isinstance(x, ir.Call) and x.func == "ts_zero") or (isinstance(x, ir.Tuple) and not x.elems) \
        or (isinstance(x, ir.Const) and x.ctype == FLOAT and x.value == 0.0)


def hoist_zero_parts(x: ir.Call, fresh, in_range=lambda xs, i: False) -> ir.Expr | None:
    """Note [Zeros out of a Σ]: ``Σ_i (let … in <a_i, 0_x, b_i>)`` as
    ``let s = Σ_i (let … in <a_i, b_i>) in <get$1$2 s, ts_zero x, get$2$2 s>`` (None: nothing to take out).
    The Σ's shape γ, if it has one, is taken apart the same way.  Note [One-hots out of a Σ]: a part
    ``ts_delta xs j w_i`` whose xs and j do not depend on the iteration, with j known to be an index of
    xs (``in_range(xs, j)``), becomes ``ts_delta xs j (Σ_i w_i)``: the Σ sums rows, not copies of xs."""
    n, f, *shape = _args(x)
    lets, tail = [], f.body
    while isinstance(tail, ir.Let):
        lets.append(tail)
        tail = tail.body
    if not isinstance(tail, ir.Tuple):
        return None
    inner = {f.var} | {b for let in lets for b in _binders(let)}
    kept: list[ir.Expr] = []
    kept_shapes: list[ir.Expr | None] = []

    def part_of(g: ir.Expr | None, k: int, size: int) -> ir.Expr | None:
        if g is None:
            return None
        if isinstance(g, ir.Tuple):
            return g.elems[k]
        return ir.Get(k + 1, size, g, type=g.type.elems[k]) if isinstance(g.type, TTuple) else None

    def walk(t: ir.Expr, g: ir.Expr | None):  # the tuple tree: a leaf is kept (its index) or taken out (itself)
        if isinstance(t, ir.Tuple) and t.elems:
            return tuple(walk(p, part_of(g, k, len(t.elems))) for k, p in enumerate(t.elems))
        if _zero_part(t) and not (free_vars(t) & inner):
            return t
        hot = _invariant_one_hot(t, inner, in_range)
        if hot is not None:
            xs, j, w = hot
            kept.append(w)
            kept_shapes.append(ir.Call("index", ir.Tuple((j, xs)), type=xs.type.elem) if shape else None)
            return (_ONE_HOT, xs, j, len(kept) - 1)
        kept.append(t)
        kept_shapes.append(g)
        return len(kept) - 1
    tree = walk(tail, shape[0] if shape else None)
    if not any(isinstance(leaf, ir.Expr) or _is_one_hot(leaf) for leaf in _leaves(tree)):
        return None
    if not kept:
        return _rebuild(tree, None, ())
    flat = kept[0] if len(kept) == 1 else ir.Tuple(tuple(kept), type=TTuple(tuple(k.type for k in kept)))
    body = flat
    for let in reversed(lets):
        body = ir.Let(let.binder, let.rhs, body, type=flat.type, span=let.span)
    like: tuple[ir.Expr, ...] = ()
    if shape and all(g is not None for g in kept_shapes):
        like = (kept_shapes[0] if len(kept) == 1 else
                ir.Tuple(tuple(kept_shapes), type=TTuple(tuple(g.type for g in kept_shapes))),)
    total = ir.Call("chadSumBuild", ir.Tuple((n, ir.Lam(f.var, f.var_type, body, type=TLam(f.var_type, flat.type)),
                                              *like)), type=flat.type, span=x.span)
    s = fresh("s")
    return ir.Let(s, total, _rebuild(tree, ir.Var(s, type=flat.type), kept), type=x.type, span=x.span)


_ONE_HOT = "one-hot"  # a leaf of hoist_zero_parts's tree: (_ONE_HOT, xs, j, k), ts_delta xs j (part k)


def _is_one_hot(leaf) -> bool:
    return isinstance(leaf, tuple) and len(leaf) == 4 and leaf[0] is _ONE_HOT


def _invariant_one_hot(t: ir.Expr, inner: set[str], in_range) -> tuple[ir.Expr, ir.Expr, ir.Expr] | None:
    """(xs, j, w) if t is ``ts_delta xs j w`` with xs and j free of the iteration's binders and j an
    index of xs (Note [One-hots out of a Σ])."""
    if not (isinstance(t, ir.Call) and t.func == "ts_delta" and isinstance(t.arg, ir.Tuple)
            and len(t.arg.elems) == 3):
        return None
    xs, j, w = t.arg.elems
    if free_vars(xs) & inner or free_vars(j) & inner or xs.type is None or getattr(xs.type, "rank", 0) != 1 \
            or j.type != INTEGER or not in_range(xs, j):
        return None
    return xs, j, w


def _leaves(tree):
    stack = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, tuple) and not _is_one_hot(t):
            stack.extend(t)
        else:
            yield t


def _rebuild(tree, s: ir.Expr | None, kept) -> ir.Expr:
    if _is_one_hot(tree):
        _, xs, j, k = tree
        part = _rebuild(k, s, kept)
        return ir.Call("ts_delta", ir.Tuple((xs, j, part)), type=_tangent(xs.type))
    if isinstance(tree, tuple):
        parts = tuple(_rebuild(t, s, kept) for t in tree)
        return ir.Tuple(parts, type=TTuple(tuple(p.type for p in parts)))
    if isinstance(tree, ir.Expr):
        return tree
    return s if len(kept) == 1 else ir.Get(tree + 1, len(kept), s, type=kept[tree].type)


# Note [One-hots out of a Σ]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# In a nested loop, the inner Σ's body often reads one row of an array at an index the inner
# loop does not change: GMM's (index i x) inside the sum over the K components.  Its transpose
# is a one-hot ``ts_delta x i w_k`` in every iteration, and the Σ's accumulator for x is a dense
# n × d zero per data point, added to the outer loop's: O(n² d) for a loop that reads each row
# once.  Since ts_delta is linear in its last argument, Σ_k ts_delta x i w_k = ts_delta x i (Σ_k w_k):
# the Σ sums the rows (shaped like ``index i x``) and one one-hot is made after it.  The side
# condition: x and i do not depend on k, and i is *known* to be an index of x — the variable of
# an enclosing loop over ``size x`` — since the shape ``index i x`` is evaluated even when the Σ
# is empty, where the original never read row i.


# Note [Zeros out of a Σ]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A Σ over the elements of a build or sumbuild (the binder rule of §10) adds, in every
# iteration, the whole context's cotangent, whose parts for the context variables the
# element does not use are zeros (``ts_zero x`` once lowered: x is the primal, in scope).
# Adding them n times would cost n times the size of x (Pitfall 5 of CHAD: quadratic
# builds), so the parts of the body's tuple that are such zeros are taken out of the Σ,
# which then sums only the parts that depend on the iteration.


def _tail(x: ir.Expr) -> ir.Expr:
    while isinstance(x, ir.Let):
        x = x.body
    return x


def _unshaped_zero(x: ir.Expr) -> bool:
    return isinstance(x, ir.Call) and x.func == "chadZero"


def _has_unshaped_zero(x: ir.Expr) -> bool:
    """A zero (symbolic or shaped) among the parts of x's tuple tree (looking through lets only)."""
    stack = [x]
    while stack:
        y = stack.pop()
        if _unshaped_zero(y) or _zero_part(y):
            return True
        if isinstance(y, ir.Tuple):
            stack.extend(y.elems)
        elif isinstance(y, ir.Let):
            stack.append(y.body)
    return False


def add_parts(a: ir.Expr, b: ir.Expr, fresh) -> ir.Expr:
    """Note [Zeros out of a Σ], for +: ``a + b`` of a linear type with a zero part or a tuple
    literal on one side, as the sum of the parts (Table 1's plusPair and plusLet, the unit law
    on the zero parts), so a zero part costs nothing and no ts_add adds literal tuples."""
    if _zero_part(a) or _unshaped_zero(a):
        return b
    if _zero_part(b) or _unshaped_zero(b):
        return a
    if isinstance(a, ir.Let):
        return ir.Let(a.binder, a.rhs, add_parts(a.body, b, fresh), type=a.type, span=a.span)
    if isinstance(b, ir.Let):
        return ir.Let(b.binder, b.rhs, add_parts(a, b.body, fresh), type=b.type, span=b.span)
    t = a.type or b.type
    if isinstance(t, TTuple) and t.elems and (isinstance(a, ir.Tuple) or isinstance(b, ir.Tuple)):
        names, parts = [], []
        for side in (a, b):
            if isinstance(side, ir.Tuple):
                parts.append(side.elems)
            else:  # named, then taken apart
                v = fresh("p")
                names.append((v, side))
                whole = ir.Var(v, type=t)
                parts.append(tuple(ir.Get(k + 1, len(t.elems), whole, type=e) for k, e in enumerate(t.elems)))
        out: ir.Expr = ir.Tuple(tuple(add_parts(x, y, fresh) for x, y in zip(*parts)), type=t)
        for v, side in reversed(names):
            out = ir.Let(v, side, out, type=t)
        return out
    if t == FLOAT:
        return ir.Call("add", ir.Tuple((a, b), type=TTuple((t, t))), type=t)
    if t == UNIT:
        return ir.Tuple((), type=UNIT)
    return ir.Call("ts_add", ir.Tuple((a, b), type=TTuple((t, t))), type=t)


def _loop_counts(e: ir.Expr, env: dict[str, ir.Expr]) -> dict[str, ir.Expr]:
    """Each loop variable of e (a build's, a Σ's) and the loop's count, let-bound names looked
    through (names are unique)."""
    counts: dict[str, ir.Expr] = {}
    for x in nodes(e):
        if isinstance(x, ir.Call) and x.func in ("build", "sumbuild", "ts_sumbuild", "chadSumBuild") \
                and isinstance(x.arg, ir.Tuple) and len(x.arg.elems) >= 2 and isinstance(x.arg.elems[1], ir.Lam):
            n = x.arg.elems[0]
            while isinstance(n, ir.Var) and isinstance(env.get(n.name), ir.Expr):
                n = env[n.name]
            counts[x.arg.elems[1].var] = n
    return counts


def _spread_parts(x: ir.Let) -> ir.Expr:
    """``let s = (let t = Σ … in <p1, …, pk>) in b`` as ``let t = Σ … in b[pi/get$i$k s]`` when b
    reads s only through projections, each part read once or a name or projection: the parts of a Σ whose
    one-hots came out of it (Note [One-hots out of a Σ]) reach the enclosing loop's accumulation as
    one-hots, which the compiled backend writes as single rows, instead of a materialised tuple."""
    s, inner = x.binder, x.rhs
    parts = inner.body.elems
    reads: dict[int, int] = {}
    for y in nodes(x.body):
        if isinstance(y, ir.Get) and isinstance(y.arg, ir.Var) and y.arg.name == s:
            reads[y.index] = reads.get(y.index, 0) + 1
    whole = sum(1 for y in nodes(x.body) if isinstance(y, ir.Var) and y.name == s)
    if whole != sum(reads.values()) or any(k > 1 and not isinstance(parts[i - 1], (ir.Var, ir.Get))
                                           for i, k in reads.items()):
        return x

    def put(y: ir.Expr) -> ir.Expr:
        if isinstance(y, ir.Get) and isinstance(y.arg, ir.Var) and y.arg.name == s:
            return parts[y.index - 1]
        return y
    return ir.Let(inner.binder, inner.rhs, map_bottom_up(x.body, put), type=x.type, span=x.span)


@deep
def shape_sums(e: ir.Expr, fresh) -> ir.Expr:
    """The Σs left by the first rewrite whose zero is shaped like a primal value: ts_sumbuild."""
    shapes = Shapes(e, fresh)
    counts = _loop_counts(e, shapes.env)

    def in_range(xs: ir.Expr, j: ir.Expr) -> bool:  # Note [One-hots out of a Σ]
        n = counts.get(j.name) if isinstance(j, ir.Var) else None
        return isinstance(n, ir.Call) and n.func == "size" and n.arg == xs and isinstance(xs, ir.Var)

    def total(x: ir.Call) -> ir.Expr:
        n, f, *shape = _args(x)
        if sizeless(x.type) and n.type == INTEGER:
            return ir.Call("sumbuild", ir.Tuple((n, f)), type=x.type, span=x.span)
        if n.type == INTEGER and shape and _tangent(shape[0].type) == x.type:
            return ir.Call("ts_sumbuild", ir.Tuple((n, f, shape[0])), type=x.type, span=x.span)
        if n.type == INTEGER:
            like = shapes.like(f.body, {f.var})
            if like is not None and _HOLE not in free_vars(like) and _tangent(like.type) == x.type:
                return ir.Call("ts_sumbuild", ir.Tuple((n, f, like)), type=x.type, span=x.span)
        return x

    def rewrite(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Let) and isinstance(x.binder, str) and isinstance(x.rhs, ir.Let) \
                and isinstance(x.rhs.body, ir.Tuple) and isinstance(x.rhs.rhs, ir.Call) \
                and x.rhs.rhs.func == "ts_sumbuild":
            return _spread_parts(x)
        if isinstance(x, ir.If) and x.type is not None:  # a zero in one branch, shaped like the other
            return ir.If(x.cond, shapes.fill(x.then, x.orelse, set()), shapes.fill(x.orelse, x.then, set()),
                         type=x.type, span=x.span)
        if isinstance(x, ir.Call) and x.func in ("chadSumBuild", "ts_sumbuild") and x.type is not None \
                and isinstance(_args(x)[1], ir.Lam):
            hoisted = hoist_zero_parts(x, fresh, in_range)
            if isinstance(hoisted, ir.Let):
                return ir.Let(hoisted.binder, total(hoisted.rhs), hoisted.body, type=x.type, span=x.span)
            return hoisted if hoisted is not None else total(x) if x.func == "chadSumBuild" else x
        if isinstance(x, ir.Call) and x.func == "ts_add" and isinstance(x.arg, ir.Tuple) and len(x.arg.elems) == 2 \
                and any(_has_unshaped_zero(y) or isinstance(_tail(y), ir.Tuple) for y in x.arg.elems):
            return add_parts(*x.arg.elems, fresh)
        return x
    return spell_out_zeros(map_bottom_up(e, rewrite), fresh)  # Note [Zeros of vectors of records]
