"""Smeding & Vákár's ``dualrevtape`` (§9.3) on the ``compiled`` backend: its run-time
primitives as code over the tape of :mod:`.numba_tape_runtime`.

    Γ ⊢ (drtZero) : Integer                  ↦  _drt_fresh(_tape)
    Γ ⊢ (drtOp j1 ∂1 … jn ∂n) : Integer      ↦  _drt_op(_tape, (j1, …, jn), (∂1, …, ∂n))
    Γ ⊢ (drtInputs x) : D[S]                 ↦  _drt_begin(_tape); x's reals paired with fresh IDs
    Γ ⊢ (drtGradient x y dt) : dS            ↦  adj seeded at y's IDs with dt; _drt_sweep; adj read like x

Note [The tape in generated code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The IR stays as it is: ``drtOp`` and ``drtZero`` are impure primitives whose
state is the run of the current derivative call (Note [The ID monad in the run
time] in ``labrys.ad.dualrev_runtime``).  On this backend that run is a tape
object (Note [The tape as arrays]) that a module whose code uses it passes to
every generated function as a last hidden parameter ``_tape``, beside the
recursion budget ``_room``; the module's entry makes an empty one.  The
generator learns that a module needs it when it first emits a call of one of
these primitives (:class:`NeedsTape`), and then generates the module again
with the parameter: modules that do not use it are unchanged.  IDs are drawn in
the order the statements run, which is the IR's left-to-right order, so loops
and recursion number their ops as the Python run time does (P1, P9).

Note [Deltas on the tape]
~~~~~~~~~~~~~~~~~~~~~~~~~
Krawiec et al.'s ``deltarev`` names every compound Delta with ``deltaLet`` before
it enters a dual number (§7.1), so its tape is a DAG of Delta nodes and the same
arrays hold it: a Delta is the ID of a node (machine int64), ``(Zero)`` a node
without operands, ``(Scale r d)`` a node with one pair (d, r), ``(Add d e)`` one with
pairs (d, 1) and (e, 1), and ``(deltaLet d)`` is d itself, already a node.  Nodes are
made in evaluation order, so each node's operands are older than it, and the
sweep of ``dualrevtape`` (IDs descending, each node once, a node whose adjoint is
0 skipped as §7.3's loop skips a binding) is Fig. 10's ``eval``.  ``deltaInputs`` and
``deltaGradient`` are ``drtInputs`` and ``drtGradient``: inputs are Vars 1..a.  The
naive ``deltarev2`` walks the same nodes as a tree, and ``dualrev``'s Contribs are
entries of this tape too (Notes [Naive eval₂ on the tape], [Contribs on the tape] in
numba_contrib_runtime.py).

Interleave and Deinterleave walk the input and output by their static types
(one case per type, as :mod:`labrys.ad.dual_io` walks values): Float, Integer,
Bool, String, tuples, ``Vec Float`` (a struct of arrays of values and IDs),
``Vec`` of tuples of those, sums (the absent side gets ID 0 and is never
read), and ``Vec (Vec … Float)`` (Note [Nested struct of arrays] in
:mod:`.numba_nested`).  Another input or output type raises :class:`Unsupported`: the
derivative runs on ``python`` with a note.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import BOOL, CONTRIB, DELTA, FLOAT, INTEGER, STRING, TSum, TTensor, TTuple, Type
from ..types.tangent import is_constant_tangent, tangent_type
from .numba_nested import nested_adjoints, nested_count, nested_dual, nested_interleave, t_elem
from .numba_sums import placeholder
from .numba_types import Unsupported, array_rank, holds_data, is_soa, soa_matrix, soa_rank

# Smeding & Vákár's dualrevtape, then Krawiec et al.'s deltarev (Note [Deltas on the tape])
# and Smeding & Vákár's dualrev, Krawiec et al.'s deltarev2 (Notes [Contribs on the tape], [Naive eval₂ on the
# tape] in numba_contrib_runtime.py)
TAPE_PRIMITIVES = ("drtZero", "drtOp", "drtInputs", "drtGradient",
                   "Zero", "Scale", "Add", "deltaLet", "deltaInputs", "deltaGradient",
                   "drcZero", "drcOp", "drcInputs", "drcGradient", "delta2Inputs", "delta2Gradient")
CONTRIB_IO = ("drcInputs", "drcGradient")  # whose Floats' dual parts are (ID, Contrib), not an ID


# dualrevtape's, deltarev's and dualrev's dual of a Float
DUAL_FLOATS = ((FLOAT, INTEGER), (FLOAT, DELTA), (FLOAT, TTuple((INTEGER, CONTRIB))))


class NeedsTape(Exception):
    """The module calls a tape primitive: generate it again with ``_tape`` threaded."""


def _elements(x: str, t: Type) -> list[str]:
    """Source of the number of elements of the vectors in x : t (a guess at a tape's size)."""
    if isinstance(t, TTuple):
        return [n for k, u in enumerate(t.elems) for n in _elements(f"{x}[{k}]", u)]
    if is_soa(t):
        return [f"{x}[0] * {len(t.elem.elems)}"]
    if array_rank(t) is not None:
        return [f"{x}.size"]
    return []


def tape_entry(call: str, params: list[tuple[str, Type]]) -> list[str]:
    """The body of a module's entry that threads a tape: a call on a tape with room for
    4 IDs per element of the vector arguments (a guess), and once more on one of the size it
    needed if it did not fit (Note [The tape as arrays]); a large tape comes from the pool and
    goes back to it (Note [A pool of tapes])."""
    size = " + ".join(["1024"] + [f"4 * {n}" for x, t in params for n in _elements(x, t)])
    return [f"    _ids = {size}", "    _tape = _drt_take(_ids, 2 * _ids)", f"    _r = {call}",
            "    if not _drt_fits(_tape):",
            "        _tape = _drt_refit(_tape)", f"        _r = {call}",
            "        if not _drt_fits(_tape):", '            raise ValueError("the tape did not fit twice")',
            "    _drt_give(_tape)", "    return _r"]


def tape_boundary(d: ir.Def) -> None:
    """A Delta is a node of a tape that lives only inside one compiled call: it cannot be
    an argument or the result of the call (``[delta f]`` called from outside a run)."""
    for what, t in [(f"parameter {p.name}", p.type) for p in d.params] + [("result", d.ret)]:
        if holds_data(t, (DELTA, CONTRIB)):
            raise Unsupported(f"{what} of type {t} (a Delta or Contrib outside a run of deltarev or dualrev)", d.span)


def _tuple(parts: list[str]) -> str:
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _floats_per_element(t: Type, span) -> int:
    """How many reals one element of a vector of tuples holds (its leaves: Float or constant)."""
    if t == FLOAT:
        return 1
    if t in (INTEGER, BOOL):
        return 0
    if isinstance(t, TTuple):
        return sum(_floats_per_element(e, span) for e in t.elems)
    raise Unsupported(f"dualrevtape's input or output with vector elements of type {t}", span)


class TapeMixin:
    """The dualrevtape rules of the Numba emitter (Note [The tape in generated code])."""

    def tape_call(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> bool:
        if name not in TAPE_PRIMITIVES:
            return False
        if not self.mod.tape:
            raise NeedsTape(name)
        if name in ("drtZero", "Zero"):
            self.emit(f"{t} = _drt_fresh(_tape)")
        elif name == "drcZero":
            self.emit(f"{t} = (_drt_fresh(_tape), 0)")
        elif name == "drcOp":  # Note [Contribs on the tape]
            us, ds = [self.atom(a) for a in args[0::2]], [self.atom(a) for a in args[1::2]]
            i = self.mod.fresh("id")
            if len(us) in (1, 2):
                self.emit(f"{i} = _drc_op{len(us)}(_tape, "
                          f"{', '.join(f'{u}[0], {u}[1], {d}' for u, d in zip(us, ds))})")
            else:
                self.emit(f"{i} = _drc_op(_tape, {_tuple([f'{u}[0]' for u in us])}, "
                          f"{_tuple([f'{u}[1]' for u in us])}, {_tuple(ds)})")
            self.emit(f"{t} = ({i}, {i})")
        elif name == "drtOp":
            xs = [self.atom(a) for a in args]
            if len(xs) in (2, 4):  # Note [A tape write without branches]
                self.emit(f"{t} = _drt_op{len(xs) // 2}(_tape, {', '.join(xs)})")
            else:
                self.emit(f"{t} = _drt_op(_tape, {_tuple(xs[0::2])}, {_tuple(xs[1::2])})")
        elif name == "Scale":
            r, u = (self.atom(a) for a in args)
            self.emit(f"{t} = _drt_op1(_tape, {u}, {r})")
        elif name == "Add":
            u, v = (self.atom(a) for a in args)
            self.emit(f"{t} = _drt_op2(_tape, {u}, 1.0, {v}, 1.0)")
        elif name == "deltaLet":
            self.emit(f"{t} = {self.atom(args[0])}")
        elif name in ("drtInputs", "deltaInputs", "drcInputs", "delta2Inputs"):
            x = self.atom(args[0])
            self.emit("_drt_begin(_tape)")
            self.emit(f"{t} = {self.interleave(x, args[0].type, e)}")
        else:
            x, y, dt = (self.atom(a) for a in args)
            adj, first = self.mod.fresh("adj"), self.mod.fresh("base")
            self.emit(f"{first} = _drt_base(_tape)")
            self.emit(f"{adj} = _drt_adjoints(_tape)")
            if name == "drcGradient":  # the staging array's Contribs (Note [Contribs on the tape])
                self.emit(f"{adj}_cb = _drc_staging(_tape)")
            self.seed_outputs(adj, first, y, args[1].type, dt, args[2].type, e)
            if name == "drcGradient":
                self.emit(f"_drc_sweep(_tape, {adj}, {adj}_cb)")
            elif name == "delta2Gradient":  # the seeds are walked into adjoints of their own
                self.emit(f"{adj}_in = _np.zeros({adj}.shape[0])")
                self.emit(f"_delta2_walk(_tape, {adj}, {adj}_in)")
                adj = f"{adj}_in"
            else:
                self.emit(f"_drt_sweep(_tape, {adj})")
            c = self.mod.fresh("c")
            self.emit(f"{c} = 1")
            self.emit(f"{t} = {self.deinterleave(adj, c, x, args[0].type, e)}")
        return True

    # --- Interleave: x's reals paired with fresh IDs, left to right --------------------------

    def interleave(self, x: str, t: Type, e: ir.Call) -> str:
        if is_constant_tangent(t) and not isinstance(t, TSum):
            return x
        if t == FLOAT:
            i = self.mod.fresh("id")
            self.emit(f"{i} = _drt_fresh(_tape)")
            return f"({x}, {_image(i, '0', e)})"
        if isinstance(t, TTuple):
            return _tuple([self.interleave(f"{x}[{k}]", u, e) for k, u in enumerate(t.elems)])
        if isinstance(t, TTensor) and t.elem in (INTEGER, BOOL):  # no reals: its dual is itself
            return x
        if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
            first = self.mod.fresh("id")
            self.emit(f"{first} = _drt_ids(_tape, {x}.shape[0])")
            ids = _ids(f"{x}.shape[0]", f"_np.arange({first}, {first} + {x}.shape[0])", e)
            return f"({x}.shape[0], {x}.copy(), {ids})"
        if is_soa(t):
            r = _floats_per_element(t.elem, e.span)
            first = self.mod.fresh("id")
            self.emit(f"{first} = _drt_ids(_tape, {x}[0] * {r})")
            return self._soa_ids(x, t, f"{first}", r, [0], e)
        if isinstance(t, TSum):
            return self._sum(x, t, lambda em, v, u: em.interleave(v, u, e), lambda em, v, u: _unseeded(em, v, u, e))
        if soa_matrix(t):  # Note [Nested struct of arrays] in numba_nested.py
            first = self.mod.fresh("id")
            self.emit(f"{first} = _drt_ids(_tape, {nested_count(x, t)} * {_floats_per_element(t_elem(t), e.span)})")
            return nested_dual(x, t, first, contribs=e.func in CONTRIB_IO)
        if _nested_vec(t):  # a matrix (or deeper): Note [Nested struct of arrays]
            first = self.mod.fresh("id")
            self.emit(f"{first} = _drt_ids(_tape, {x}.size)")
            return nested_interleave(x, array_rank(t), first, contribs=e.func in CONTRIB_IO)
        raise Unsupported(f"dualrevtape's input of type {t}", e.span)

    def _soa_ids(self, x: str, t: TTensor, first: str, r: int, q: list[int], e: ir.Call) -> str:
        """The dual of the struct of arrays x: the q-th real of element i gets first + i·r + q."""
        parts = [f"{x}[0]"]
        for k, u in enumerate(t.elem.elems):
            col = f"{x}[{k + 1}]"
            if u == FLOAT:
                ids = f"{first} + {r} * _np.arange({x}[0]) + {q[0]}"
                parts.append(f"({x}[0], {col}.copy(), {_ids(f'{x}[0]', ids, e)})")
                q[0] += 1
            elif isinstance(u, TTuple):
                parts.append(self._soa_ids(col, TTensor(1, u), first, r, q, e))
            else:
                parts.append(col)
        return _tuple(parts)

    def _sum(self, x: str, t: TSum, active, absent) -> str:
        """(tag, left, right): the present side by ``active``, the other by ``absent``."""
        left, right = self.mod.fresh("l"), self.mod.fresh("r")
        self.emit(f"if {x}[0]:")
        inner = self.indented()
        inner.emit(f"{left} = {active(inner, f'{x}[1]', t.left)}")
        inner.emit(f"{right} = {absent(inner, f'{x}[2]', t.right)}")
        self.emit("else:")
        inner = self.indented()
        inner.emit(f"{left} = {absent(inner, f'{x}[1]', t.left)}")
        inner.emit(f"{right} = {active(inner, f'{x}[2]', t.right)}")
        return f"({x}[0], {left}, {right})"

    # --- Deinterleave: seed the outputs, read the inputs' adjoints ---------------------------

    def seed_outputs(self, adj: str, base: str, y: str, yt: Type, dt: str, dtt: Type, e: ir.Call) -> None:
        """adj[ID − base] += the cotangent, for every real of the output (⊙_T of Fig. 15)."""
        if is_constant_tangent(dtt):
            return
        if dtt == FLOAT and e.func in CONTRIB_IO:  # staged at its own ID with its own Contrib (P6)
            self.emit(f"{adj}[{y}[1][0] - {base}] += {dt}")
            self.emit(f"{adj}_cb[{y}[1][0] - {base}] = {y}[1][1]")
        elif dtt == FLOAT:
            self.emit(f"{adj}[{y}[1] - {base}] += {dt}")
        elif isinstance(dtt, TTuple):
            for k, (u, v) in enumerate(zip(yt.elems, dtt.elems)):
                self.seed_outputs(adj, base, f"{y}[{k}]", u, f"{dt}[{k}]", v, e)
        elif isinstance(dtt, TTensor) and dtt.rank == 1 and dtt.elem == FLOAT:
            self._seed_column(adj, base, f"{y}[0]", f"{y}[2]", dt, e)
        elif is_soa(dtt):
            self.emit(f"if {y}[0] != {dt}[0]:")
            self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            self._seed_soa(adj, base, y, yt, dt, dtt, e)
        elif soa_matrix(yt) and array_rank(dtt) == soa_rank(yt) and t_elem(yt).elems in DUAL_FLOATS:
            self._seed_nested(adj, base, y, soa_rank(yt), dt, e)
        elif isinstance(dtt, TSum):
            self.emit(f"if {y}[0] != {dt}[0]:")
            self.indented().emit('raise ValueError("the cotangent\'s alternative differs from the output\'s")')
            self.emit(f"if {y}[0]:")
            self.indented().seed_outputs(adj, base, f"{y}[1]", yt.left, f"{dt}[1]", dtt.left, e)
            self.emit("else:")
            self.indented().seed_outputs(adj, base, f"{y}[2]", yt.right, f"{dt}[2]", dtt.right, e)
        else:
            raise Unsupported(f"dualrevtape's output cotangent of type {dtt}", e.span)

    def _seed_nested(self, adj: str, base: str, y: str, r: int, dt: str, e: ir.Call) -> None:
        """The dual of a Float array of rank r (a nested struct of arrays: values, IDs and for
        dualrev Contribs, flat) seeded with the array dt, row by row: each row's length checked
        against dt's shape."""
        em, lo, hi, idx = self, "0", f"{y}[0]", []
        em.emit(f"if {hi} != {dt}.shape[0]:")
        em.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
        for d in range(r):
            k = self.mod.fresh("i")
            em.emit(f"for {k} in range({hi} - {lo}):")
            em, idx = em.indented(), idx + [k]
            if d == r - 1:
                em.emit(f"{adj}[{y}[{r + 1}][{lo} + {k}] - {base}] += {dt}[{', '.join(idx)}]")
                if e.func in CONTRIB_IO:
                    em.emit(f"{adj}_cb[{y}[{r + 1}][{lo} + {k}] - {base}] = {y}[{r + 2}][{lo} + {k}]")
                break
            a, b = self.mod.fresh("a"), self.mod.fresh("b")
            em.emit(f"{a} = {y}[{d + 1}][{lo} + {k}]")
            em.emit(f"{b} = {y}[{d + 1}][{lo} + {k} + 1]")
            em.emit(f"if {b} - {a} != {dt}.shape[{d + 1}]:")
            em.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            lo, hi = a, b

    def _seed_column(self, adj: str, base: str, n: str, ids: str, dt: str, e: ir.Call) -> None:
        self.emit(f"if {n} != {dt}.shape[0]:")
        self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
        i = self.mod.fresh("i")
        self.emit(f"for {i} in range({n}):")
        if e.func in CONTRIB_IO:  # ids is the column of (ID, Contrib): (n, IDs, Contribs)
            self.indented().emit(f"{adj}[{ids}[1][{i}] - {base}] += {dt}[{i}]")
            self.indented().emit(f"{adj}_cb[{ids}[1][{i}] - {base}] = {ids}[2][{i}]")
        else:
            self.indented().emit(f"{adj}[{ids}[{i}] - {base}] += {dt}[{i}]")

    def _seed_soa(self, adj: str, base: str, y: str, yt: TTensor, dt: str, dtt: TTensor, e: ir.Call) -> None:
        for k, (u, v) in enumerate(zip(yt.elem.elems, dtt.elem.elems)):
            if is_constant_tangent(v):
                continue
            if v == FLOAT:  # the column of duals is itself (n, values, IDs)
                self._seed_column(adj, base, f"{y}[0]", f"{y}[{k + 1}][2]", f"{dt}[{k + 1}]", e)
            else:
                self._seed_soa(adj, base, f"{y}[{k + 1}]", TTensor(1, u), f"{dt}[{k + 1}]", TTensor(1, v), e)

    def deinterleave(self, adj: str, c: str, x: str, t: Type, e: ir.Call) -> str:
        """dS shaped like x : t, its reals adj[c], adj[c+1], … in Interleave's order."""
        if is_constant_tangent(t) and not isinstance(t, TSum):
            return _units(x, t, e)
        if t == FLOAT:
            g = self.mod.fresh("g")
            self.emit(f"{g} = {adj}[{c}]")
            self.emit(f"{c} += 1")
            return g
        if isinstance(t, TTuple):
            return _tuple([self.deinterleave(adj, c, f"{x}[{k}]", u, e) for k, u in enumerate(t.elems)])
        if isinstance(t, TTensor) and t.rank == 1 and t.elem in (INTEGER, BOOL):  # units: its length
            return _units(x, t, e)
        if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
            g = self.mod.fresh("g")
            self.emit(f"{g} = {adj}[{c}:{c} + {x}.shape[0]].copy()")
            self.emit(f"{c} += {x}.shape[0]")
            return g
        if is_soa(t):
            r = _floats_per_element(t.elem, e.span)
            value = self._soa_adjoints(adj, c, x, t, r, [0], e)
            g = self.mod.fresh("g")
            self.emit(f"{g} = {value}")
            self.emit(f"{c} += {x}[0] * {r}")
            return g
        if isinstance(t, TSum):
            def absent(em, v, u):
                return placeholder(tangent_type(u), array_rank)
            return self._sum(x, t, lambda em, v, u: em.deinterleave(adj, c, v, u, e), absent)
        if soa_matrix(t):
            g, n = self.mod.fresh("g"), self.mod.fresh("n")
            self.emit(f"{n} = {nested_count(x, t)}")
            self.emit(f"{g} = {nested_adjoints(adj, c, n, x, t, _floats_per_element(t_elem(t), e.span))}")
            self.emit(f"{c} += {n} * {_floats_per_element(t_elem(t), e.span)}")
            return g
        if _nested_vec(t):  # row by row, as Interleave drew them
            g = self.mod.fresh("g")
            self.emit(f"{g} = {adj}[{c}:{c} + {x}.size].copy().reshape({x}.shape)")
            self.emit(f"{c} += {x}.size")
            return g
        raise Unsupported(f"dualrevtape's input of type {t}", e.span)

    def _soa_adjoints(self, adj: str, c: str, x: str, t: TTensor, r: int, q: list[int], e: ir.Call) -> str:
        parts = [f"{x}[0]"]
        for k, u in enumerate(t.elem.elems):
            col = f"{x}[{k + 1}]"
            if u == FLOAT:
                parts.append(f"{adj}[{c} + {q[0]}:{c} + {x}[0] * {r}:{r}].copy()")
                q[0] += 1
            elif isinstance(u, TTuple):
                parts.append(self._soa_adjoints(adj, c, col, TTensor(1, u), r, q, e))
            else:
                parts.append(f"({x}[0],)")
        return _tuple(parts)


def _nested_vec(t: Type) -> bool:
    """``Vec (Vec … Float)``, at least two deep: its dual is a nested struct of arrays."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTensor) and (array_rank(t) or 0) >= 2


def _image(i: str, contrib: str, e: ir.Call) -> str:
    """A Float's dual part: its ID, or for dualrev (ID, Contrib) (Note [Contribs on the tape])."""
    return f"({i}, {contrib})" if e.func in CONTRIB_IO else i


def _ids(n: str, ids: str, e: ir.Call) -> str:
    """The column of the dual parts of n Floats with IDs ids: the IDs, or for dualrev (n, IDs, [] each)."""
    return f"({n}, {ids}, _np.zeros({n}, _np.int64))" if e.func in CONTRIB_IO else ids


def _unseeded(em, x: str, t: Type, e: ir.Call) -> str:
    """The absent side of an input sum: its reals with ID 0 (never read, never swept)."""
    if is_constant_tangent(t) and not isinstance(t, TSum):
        return x
    if t == FLOAT:
        return f"({x}, {_image('0', '0', e)})"
    if isinstance(t, TTuple):
        return _tuple([_unseeded(em, f"{x}[{k}]", u, e) for k, u in enumerate(t.elems)])
    if isinstance(t, TTensor) and t.elem in (INTEGER, BOOL):
        return x
    if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
        return f"({x}.shape[0], {x}.copy(), {_ids(f'{x}.shape[0]', f'_np.zeros({x}.shape[0], _np.int64)', e)})"
    if is_soa(t):
        parts = [f"{x}[0]"]
        for k, u in enumerate(t.elem.elems):
            col = f"{x}[{k + 1}]"
            if u == FLOAT:
                parts.append(f"({x}[0], {col}.copy(), {_ids(f'{x}[0]', f'_np.zeros({x}[0], _np.int64)', e)})")
            elif isinstance(u, TTuple):
                parts.append(_unseeded(em, col, TTensor(1, u), e))
            else:
                parts.append(col)
        return _tuple(parts)
    if isinstance(t, TSum):
        return f"({x}[0], {_unseeded(em, f'{x}[1]', t.left, e)}, {_unseeded(em, f'{x}[2]', t.right, e)})"
    raise Unsupported(f"dualrevtape's input of type {t}", None)


def _units(x: str, t: Type, e: ir.Call) -> str:
    """The tangent of a value whose type holds no Float: units, and lengths of vectors."""
    if t in (INTEGER, BOOL, STRING):
        return "()"
    if isinstance(t, TTuple):
        return _tuple([_units(f"{x}[{k}]", u, e) for k, u in enumerate(t.elems)])
    if isinstance(t, TTensor) and t.rank == 1 and t.elem in (INTEGER, BOOL):
        return f"({x}.shape[0],)"
    if is_soa(t):
        return _tuple([f"{x}[0]"] + [f"({x}[0],)" if u in (INTEGER, BOOL) else _units(f"{x}[{k + 1}]", TTensor(1, u), e)
                                     for k, u in enumerate(t.elem.elems)])
    raise Unsupported(f"dualrevtape's input of type {t}", e.span)
