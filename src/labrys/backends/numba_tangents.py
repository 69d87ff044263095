"""Derivative code for the ``compiled`` backend: the tangent primitives
(``ts_add``, ``ts_scale``, ``ts_zero``, ``ts_dot``, ``dot``), ``ts_sumbuild``,
and sparse one-hot cotangents accumulated in place.

Note [Sparse cotangents, compiled]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The interpreter represents ``ts_delta v i x`` / ``deltaVec n i x`` as a
sparse value (Note [Sparse cotangents]).  Here the generator keeps it
symbolic instead: a let-bound one-hot, or a ``ts_add`` of one-hots and at
most one dense vector, is a :class:`SparseSum` of (index, value) terms in
the generator, and costs nothing at run time.  A loop that accumulates it
(``sumbuild``, ``ts_sumbuild``) emits ``acc[i] += x`` per term; any other
use materialises it (zeros, then the terms).  So the reverse of a loop of
``index`` costs O(n), as in the interpreter, without allocating per
iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import nodes as ir
from ..ir.traverse import nodes
from ..ir.types import FLOAT, INTEGER, TTensor, TTuple, Type
from .numba_types import UNITS, involves_soa

VEC_INTEGER = TTensor(1, INTEGER)

# Note [Units in tangent tuples]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The tangent of a ``Vec Integer`` is a ``Vec (Tuple)``, whose only datum is its length
# (numba_soa.unit_tangent); CHAD's lowered cotangents of a context holding an Integer vector
# are tuples with such a leaf beside Float arrays (ADBench hand's ``ts_zero`` of the context
# (Tuple (Tuple (Tuple) (Vec Integer)) (Vec (Vec (Vec Float))))).  The tangent primitives work
# leaf by leaf, so such a leaf is its length: ts_zero of the Integer vector is (n,), ts_add
# checks that the two lengths agree, and ts_scale / ts_neg leave it as it is.

_SPARSE_MAKERS = ("ts_delta", "deltaVec", "ts_add")


@dataclass
class SparseSum:
    """``base + Σ onehot(shape, index, value)`` (Note [Sparse cotangents, compiled])."""

    shape: str
    terms: list[tuple[str, str, bool]] = field(default_factory=list)   # (index, value, may be out of range)
    base: str | None = None


class Added:
    """A loop's result already added into the enclosing loop's accumulator."""


class Negated(str):
    """An accumulator that a loop subtracts from: its result is negated before it is
    added (Note [Nested accumulation])."""


def _op(acc: str) -> str:
    return "-=" if isinstance(acc, Negated) else "+="


def negate(acc: str) -> str:
    return str.__str__(acc) if isinstance(acc, Negated) else Negated(acc)


ADDED = Added()


def plan_nested_accumulation(direct: dict[int, list], body: ir.Expr, accs: list[str],
                             loop_var: str | None = None) -> None:
    """Note [Nested accumulation]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    Reverse mode nests ts_sumbuild loops: the body of the outer one binds
    ``((ra rb) (ts_sumbuild ...))`` and returns ``(tuple ra rb ...)``.  Summed
    into zeros and then into the outer accumulators, the inner loop would cost
    the size of the whole gradient per outer iteration.  A variable the inner
    loop binds that is used only as a component of the body's result is
    added straight into the outer accumulator of that component; ``direct``
    maps the let to those accumulators (None for the other variables, which
    get accumulators of their own).  A variable used only in ``(ts_delta like i r)``,
    itself a component of the result, is added into row i of that component's
    accumulator (a view, ``acc[i]``): the reverse of ``(index i m)`` inside a loop
    over a row of m accumulates in place, with no row-sized temporary per
    iteration.  Either may go through one ``(y (neg x))`` (the reverse of a
    ``sub``: GMM's ``z = x_i − μ_k``): the inner loop then subtracts from the
    accumulator (:class:`Negated`) and neither ``neg`` nor its operand is
    allocated.  Results equal the unfused ones up to the order of additions."""
    chain, e = [], body
    while isinstance(e, ir.Let):
        chain.append(e)
        e = e.body
    parts = e.elems if isinstance(e, ir.Tuple) and len(accs) > 1 else (e,)
    if len(parts) != len(accs):
        return
    slot = {x.name: k for k, x in enumerate(parts) if isinstance(x, ir.Var)}
    uses: dict[str, int] = {}
    for x in [*(let.rhs for let in chain), e]:
        for node in nodes(x):
            if isinstance(node, ir.Var):
                uses[node.name] = uses.get(node.name, 0) + 1
    bound = [n for let in chain for n in let.names]
    for let in chain:
        rhs = let.rhs
        if not (isinstance(rhs, ir.Call) and rhs.func == "ts_sumbuild" and isinstance(ir.call_args(rhs)[1], ir.Lam)
                and ir.call_args(rhs)[0].type == INTEGER):
            continue
        inner = rhs.type.elems if len(let.names) > 1 else (rhs.type,)
        if any(isinstance(t, TTuple) for t in inner):
            continue
        rows: list[ir.Let] = []
        targets = []
        for name, t in zip(let.names, inner):
            neg, via = _negation(name, t, let, chain, uses, bound)
            if neg is not None:
                rows.append(neg)
            if via in slot and uses.get(via) == 1 and bound.count(via) == 1:
                targets.append(negate(accs[slot[via]]) if neg is not None else accs[slot[via]])
                continue
            row = _row_target(via, t, let, chain, slot, uses, bound, loop_var)
            if row is None and neg is not None:
                rows.remove(neg)
                neg, via = None, name
                row = _row_target(via, t, let, chain, slot, uses, bound, loop_var)
            acc = None if row is None else accs[slot[row.binder]]
            targets.append(None if row is None else
                           ("row", negate(acc) if neg is not None else acc, ir.call_args(row.rhs)[1]))
            if row is not None:
                rows.append(row)
        keys = [str(t) if isinstance(t, str) else str(t[1]) for t in targets if t is not None]
        if keys and len(set(keys)) == len(keys):
            direct[id(let)] = targets
            for row in rows:
                direct[id(row)] = ADDED


def _negation(name: str, t: Type, inner: ir.Let, chain: list[ir.Let], uses: dict[str, int],
              bound: list[str]) -> tuple[ir.Let | None, str]:
    """The let ``(y (neg name))`` of ``chain`` after ``inner`` and y, if name is used only
    there (Note [Nested accumulation]); else (None, name)."""
    if not _is_array(t) or uses.get(name) != 1 or bound.count(name) != 1:
        return None, name
    for let in chain[chain.index(inner) + 1:]:
        rhs = let.rhs
        if isinstance(let.binder, str) and isinstance(rhs, ir.Call) and rhs.func == "neg" \
                and isinstance(rhs.arg, ir.Var) and rhs.arg.name == name and rhs.type == t:
            return let, let.binder
    return None, name


def _row_target(name: str, t: Type, inner: ir.Let, chain: list[ir.Let], slot: dict[str, int],
                uses: dict[str, int], bound: list[str], loop_var: str | None) -> ir.Let | None:
    """The let ``(x (ts_delta like i name))`` of ``chain`` after ``inner``, x a component of
    the result, i bound before ``inner`` (Note [Nested accumulation]); None if there is none."""
    if not _is_array(t) or uses.get(name) != 1 or bound.count(name) != 1:
        return None
    before = {n for let in chain[:chain.index(inner)] for n in let.names} | {loop_var}
    for let in chain[chain.index(inner) + 1:]:
        rhs = let.rhs
        if not (isinstance(let.binder, str) and isinstance(rhs, ir.Call) and rhs.func == "ts_delta"):
            continue
        like, i, x = ir.call_args(rhs)
        if isinstance(x, ir.Var) and x.name == name and isinstance(i, ir.Var) and i.name in before \
                and _is_array(like.type) and like.type.rank == 1 and let.binder in slot and uses.get(let.binder) == 1 \
                and bound.count(let.binder) == 1:
            return let
    return None


def leaves(t: Type, path: str = "") -> list[tuple[str, Type]]:
    """Each non-tuple part of t with its access path (``[0][1]``)."""
    if isinstance(t, TTuple) and t.elems:
        return [leaf for k, e in enumerate(t.elems) for leaf in leaves(e, f"{path}[{k}]")]
    return [(path, t)]


def rebuild(t: Type, names: list[str]) -> str:
    """A tuple expression of type t from one name per leaf (in :func:`leaves` order)."""
    it = iter(names)

    def go(t: Type) -> str:
        if isinstance(t, TTuple) and t.elems:
            parts = [go(e) for e in t.elems]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return next(it)
    return go(t)


def _is_array(t: Type) -> bool:
    return isinstance(t, TTensor)


class TangentMixin:
    """Methods of the Numba emitter for derivative code (see the module docstring)."""

    # --- sparse values ----------------------------------------------------------------

    def let_step(self, e: ir.Let) -> None:
        into = self.mod.direct.pop(id(e), None)
        if into is ADDED:  # Note [Nested accumulation]: the row was accumulated in place
            self.env[e.binder] = ADDED
            return
        if into is not None:  # Note [Nested accumulation]
            into = [self.row_view(t) if isinstance(t, tuple) else t for t in into]
            accs = self.ts_sumbuild(*ir.call_args(e.rhs), into)
            for name, target, acc in zip(e.names, into, accs):
                self.env[name] = ADDED if target else acc
            return
        if isinstance(e.binder, str) and isinstance(e.rhs, ir.Call) and e.rhs.func in _SPARSE_MAKERS \
                and _is_array(e.rhs.type):
            value = self.sparse_value(e.rhs)
            if value is None:
                return super().let_step(e)
            if isinstance(value, SparseSum) and value.base is not None:
                # dense already: made here, not at each use (a use inside a loop would copy it per iteration)
                self.env[e.binder] = self.materialise(value)
                return
            if isinstance(value, SparseSum):
                self.env[e.binder] = value
                return
            self.env[e.binder] = value if value.isidentifier() else self.named(value)
            return
        super().let_step(e)

    def row_view(self, target: tuple) -> str:
        """Row i of an accumulator, as a view to accumulate into (Note [Nested accumulation])."""
        _, acc, i = target
        view = self.named(f"{acc}[_checkindex({self.atom(i)}, {acc}.shape[0])]")
        return Negated(view) if isinstance(acc, Negated) else view

    def named(self, code: str) -> str:
        t = self.mod.fresh()
        self.emit(f"{t} = {code}")
        return t

    def sparse_atom(self, e: ir.Expr):
        """Like ``atom``, but a one-hot (sum) stays a :class:`SparseSum`; a tuple is a list."""
        value = self.sparse_value(e)
        return self.atom(e) if value is None else value

    def sparse_value(self, e: ir.Expr):
        """:meth:`sparse_atom` of the forms that make sparse values; None for others."""
        match e:
            case ir.Var(name) if isinstance(self.env.get(name), (SparseSum, Added)):
                return self.env[name]
            case ir.Let():
                scope = self.scoped(self.depth)
                return scope.sparse_atom(scope.lets(e))
            case ir.Tuple(elems):
                return [self.sparse_atom(x) for x in elems]
            case ir.Call("ts_delta", ir.Tuple((v, i, x))) if v.type.rank == 1:
                like = self.atom(v)
                return SparseSum(f"{like}.shape", [(self.atom(i), self.atom(x), False)])
            case ir.Call("ts_delta", ir.Tuple((v, i, x))) if v.type.elem == FLOAT and i.type == \
                    TTuple((INTEGER,) * v.type.rank):  # a Tensor N Float at an N-tuple index
                like, at = self.atom(v), self.atom(i)
                return SparseSum(f"{like}.shape", [(tuple(f"{at}[{d}]" for d in range(v.type.rank)),
                                                    self.atom(x), False)])
            case ir.Call("deltaVec", ir.Tuple((n, i, x))) if n.type == INTEGER:
                size = self.atom(n)
                return SparseSum(f"({size},)", [(self.atom(i), self.atom(x), True)])
            case ir.Call("ts_add", ir.Tuple((a, b))) if _is_array(e.type) and a.type == b.type:
                left, right = self.sparse_atom(a), self.sparse_atom(b)
                if not isinstance(left, SparseSum) and not isinstance(right, SparseSum):
                    return f"{left} + _shaped({right}, {left})"
                if not isinstance(left, SparseSum):
                    left, right = right, left
                if isinstance(right, SparseSum):
                    if left.base is not None and right.base is not None:
                        right = self.materialise(right)
                    else:
                        return SparseSum(left.shape, left.terms + right.terms, left.base or right.base)
                return SparseSum(left.shape, left.terms, right if left.base is None else
                                 self.named(f"{left.base} + _shaped({right}, {left.base})"))
        return None

    def materialise(self, value) -> str:
        if isinstance(value, list):  # a tuple literal's parts (sparse_value of ir.Tuple)
            return "(" + "".join(f"{self.materialise(x)}, " for x in value) + ")"
        if not isinstance(value, SparseSum):
            return value
        t = self.mod.fresh()
        self.emit(f"{t} = _np.zeros({value.shape})" if value.base is None else
                  f"{t} = _shaped({value.base}, _np.zeros({value.shape})).copy()")
        self.add_terms(t, value)
        return t

    def add_terms(self, acc: str, value: SparseSum) -> None:
        for i, x, may_be_outside in value.terms:
            if isinstance(i, tuple):  # a Tensor N's element (ts_delta at an N-tuple index)
                at = ", ".join(f"_checkindex({c}, {acc}.shape[{d}])" for d, c in enumerate(i))
                self.emit(f"{acc}[{at}] {_op(acc)} {x}")
            elif may_be_outside:   # Note [deltaVec outside its size]
                self.emit(f"if 0 <= {i} < {acc}.shape[0]:")
                self.emit(f"    {acc}[{i}] {_op(acc)} {x}")
            else:
                self.emit(f"{acc}[_checkindex({i}, {acc}.shape[0])] {_op(acc)} {x}")

    # --- accumulation -------------------------------------------------------------------

    def accumulate(self, accs: list[str], t: Type, value) -> None:
        """``accs`` (one variable per leaf of t) += value, in place for arrays."""
        for acc, (path, leaf) in zip(accs, leaves(t)):
            part = value
            for k in _indices(path):
                part = part[k] if isinstance(part, list) else f"{self.materialise(part)}[{k}]"
            if leaf == TTuple(()) or part is ADDED:
                continue
            if isinstance(part, SparseSum):
                self.add_terms(acc, part)
                if part.base is not None:
                    self.emit(f"{acc} {_op(acc)} _shaped({part.base}, {acc})")
            elif _is_array(leaf):
                self.emit(f"{acc} {_op(acc)} _shaped({part}, {acc})")
            else:
                self.emit(f"{acc} {_op(acc)} {part}")

    def ts_sumbuild(self, n: ir.Expr, lam: ir.Lam, like: ir.Expr,
                    into: list[str | None] | None = None) -> list[str]:
        """A ts_sumbuild loop; returns its accumulators, one per leaf of the result:
        fresh zeros, or where ``into`` names one, an enclosing loop's (Note [Nested accumulation])."""
        result = lam.body.type
        size, base = self.atom(n), self.atom(like)
        accs = []
        for (path, leaf), target in zip(leaves(result), into or [None] * len(leaves(result))):
            if target is None:
                target = self.mod.fresh("acc")
                zero = "0.0" if leaf == FLOAT else "()" if leaf == TTuple(()) else f"_np.zeros({base}{path}.shape)"
                self.emit(f"{target} = {zero}")
            accs.append(target)
        if into is None and self.parallel_sum(size, lam, accs, result):  # Note [Parallel reverse sums]
            return accs
        self.sum_loop(size, lam, accs, result)
        return accs

    def sum_loop(self, bounds: str, lam: ir.Lam, accs: list[str], result: Type) -> None:
        """``for i in range(bounds)``, adding ``lam``'s body at i into ``accs``."""
        i = self.mod.fresh("i")
        self.emit(f"for {i} in range({bounds}):")
        inner = self.indented()
        inner.env[lam.var] = i
        plan_nested_accumulation(self.mod.direct, lam.body, accs, lam.var)
        inner.accumulate_body(accs, result, lam.body)

    def accumulate_body(self, accs: list[str], t: Type, e: ir.Expr) -> None:
        """Note [Accumulating in branches]
        ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
        A loop body whose value is an ``if`` (the reverse of a loop over a
        piecewise body: make_Q's diagonal, lower triangle and zeros) adds each
        branch's value into the accumulators inside that branch.  Made into a
        value first, each branch's one-hot was materialised as a vector the size
        of the whole cotangent per iteration, O(d⁴) for make_Q instead of O(d²);
        a zero branch adds nothing."""
        while isinstance(e, ir.Let):
            if isinstance(e.binder, str) and isinstance(e.rhs, ir.If) and isinstance(e.body, ir.Var) \
                    and e.body.name == e.binder:
                e = e.rhs
                continue
            self.let_step(e)
            e = e.body
        if isinstance(e, ir.If):
            self.branches(e, lambda em, x: em.accumulate_body(accs, t, x))
        elif isinstance(e, ir.Call) and e.func == "ts_zero" or isinstance(e, ir.Const) and e.value == 0.0:
            self.emit("pass")
        else:
            self.accumulate(accs, t, self.sparse_atom(e))

    # --- tangent primitives -----------------------------------------------------------

    def tangent_primitive(self, name: str, args: tuple[ir.Expr, ...], result: Type) -> str | None:
        """Code for ts_add / ts_scale / ts_neg / ts_zero / ts_dot / dot, leaf by leaf."""
        if name not in ("ts_add", "ts_scale", "ts_neg", "ts_zero", "ts_dot", "dot"):
            return None
        xs = [self.materialise(self.sparse_atom(a)) for a in args]
        if name in ("ts_zero", "ts_neg") and len(args) != 1:  # one argument, a literal tuple (spread by call_args)
            xs = ["(" + ", ".join(xs) + ")"]
            args = (ir.Tuple(args, type=TTuple(tuple(a.type for a in args))),)
        if name in ("ts_dot", "dot"):
            parts = [self.dot(f"{xs[0]}{p}", f"{xs[1]}{p}", leaf) for p, leaf in leaves(args[0].type)
                     if leaf != TTuple(())]
            return " + ".join(parts) or "0.0"
        names = []
        for path, leaf in leaves(args[-1].type if name != "ts_add" else args[0].type):
            a = f"{xs[0]}{path}"
            if leaf in (UNITS, VEC_INTEGER):  # Note [Units in tangent tuples]
                names.append(self.unit_leaf(name, leaf, a, f"{xs[-1]}{path}"))
                continue
            if name == "ts_add":
                b = f"{xs[1]}{path}"
                code = f"{a} + _shaped({b}, {a})" if _is_array(leaf) else f"{a} + {b}" if leaf == FLOAT else a
            elif name == "ts_scale":  # a unit leaf (an Integer's tangent) stays itself
                code = f"{xs[0]} * {xs[1]}{path}" if leaf == FLOAT or _is_array(leaf) else f"{xs[1]}{path}"
            elif name == "ts_neg":
                code = f"-{a}" if leaf == FLOAT or _is_array(leaf) else a
            else:
                code = "0.0" if leaf == FLOAT else f"_np.zeros({a}.shape)" if _is_array(leaf) else "()"
            names.append(self.named(code))
        return rebuild(result, names)

    def unit_leaf(self, name: str, leaf: Type, a: str, last: str) -> str:
        """Note [Units in tangent tuples]: a ``Vec Integer`` leaf (an int64 array) or its tangent, a
        ``Vec (Tuple)`` (its length, ``(n,)``), in ts_zero / ts_add / ts_scale / ts_neg of a tuple."""
        if name == "ts_zero":
            return self.named(f"({a}.shape[0],)" if leaf == VEC_INTEGER else a)
        if name == "ts_add" and leaf == UNITS:
            self.emit(f"if {a}[0] != {last}[0]:")
            self.indented().emit('raise ValueError("tensor sizes differ")')
        return a if name == "ts_add" else last

    def dot(self, a: str, b: str, leaf: Type) -> str:
        if not _is_array(leaf):
            return f"{a} * {b}"
        t, k = self.mod.fresh(), self.mod.fresh("i")
        self.emit(f"{t} = 0.0")
        self.emit(f"_shaped({b}, {a})")
        self.emit(f"for {k} in _np.ndindex({a}.shape):")
        self.indented().emit(f"{t} += {a}[{k}] * {b}[{k}]")
        return t


def _indices(path: str) -> list[int]:
    return [int(k) for k in path.strip("[]").split("][")] if path else []


def units_only(t: Type) -> bool:
    """Whether t's only vectors of tuples are ``Vec (Tuple)`` leaves (Note [Units in tangent tuples])."""
    return all(leaf in (UNITS, VEC_INTEGER) or not involves_soa(leaf) for _, leaf in leaves(t))
