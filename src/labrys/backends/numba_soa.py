"""Vectors of tuples for the ``compiled`` backend: a struct of arrays.

    Γ ⊢ v : Vec (Tuple E1 … Ek)  ↦  (n : int64, ⟦Vec E1⟧, …, ⟦Vec Ek⟧)
    Γ ⊢ v : Vec (Sum A B)        ↦  (n : int64, ⟦Vec Bool⟧, ⟦Vec A⟧, ⟦Vec B⟧)
    a component Ej = Vec (Tuple F1 … Fl)  ↦  rows: (m, F1's column with one more rank, …)

Note [Struct of arrays]
~~~~~~~~~~~~~~~~~~~~~~~
Numba arrays hold numbers, so a vector of tuples is a tuple of its length
and one column per component: a Float or Integer component is a float64 /
int64 array, a Float-vector component the usual array of one more rank
(rectangular, checked where values enter), a tuple component a struct of
arrays itself.  A vector of sums ``Vec (Sum A B)`` is laid out as the tagged
tuple each sum is (Note [Compiled sums]): a boolean tag column and the
columns of both slots, the absent slot's holding a placeholder, so reading
element i gives exactly the tagged tuple ``case`` reads (split mode's
per-step BOGs of an ``if`` inside a loop; Note [Concrete BOGs] in
labrys.ad.bog_types).  ``Vec (Tuple)`` (the tangent of a ``Vec Integer``) is just
``(n,)``.  The length comes first so that a vector with no columns still
has one.  One case per construct that reads or makes such a vector:

    (size v)              ↦  v[0]
    (index i v)           ↦  (v[1][i], …, v[k][i])          i checked against v[0]
    (build n (lam i e))   ↦  columns allocated, then col_j[i] = e_j in one loop
    (fold f a v)          ↦  a loop over i, the element as for index
    ts_zero / ts_add / ts_scale / ts_neg of a Vec (Tuple)  ↦  its length (sizes checked)

Every other operation on such a vector (arithmetic, equality, tangent
operations, nestings other than those of the two Notes below) raises
:class:`Unsupported`: the def runs on ``python`` with a note, never with a
wrong layout.

Note [Rows of structs of arrays]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Split mode's BOG of a loop whose body runs a loop of its own (GMM's
per-point BOGs hold each component's inner loop: ``Vec (Tuple … (Vec (Tuple
Float …)))``) is a vector of tuples with a component that is itself a vector
of tuples.  Its column is the inner struct of arrays one rank up: ``(m,
columns…)`` whose every column has a leading index over the outer elements
— an n×m array for a Float, n×m×d for a ``Vec Float`` — with the inner
length m shared (rectangular: each iteration's inner vector must have the
same length, checked as the build writes it; a ragged one raises and the
call re-runs on ``python``, Note [Compiled fallback]).  Element i of the
outer vector reads the rows ``(m, col[i], …)``: a plain struct of arrays of
the inner vector, views and no copies, on which ``index``, ``size`` and
``fold`` work as on any other.  A ``build`` with vector components (a Float
vector's column is an (n, d) array; a rows component as above) allocates
those columns when the first iteration that has them gives their shape and
checks every later one against it; under a sum's slot (a per-step BOG of an
``if``) only the iterations where that slot is present write — the absent
slot holds an empty placeholder and is never read — and a column no
iteration wrote is n empty rows.  Such vectors live inside compiled code only: a def
whose parameters or result hold one runs on ``python`` (its values would
need converting row by row).

A vector of vectors of flat tuples is a struct of arrays of its own, flat columns
and offsets: Note [Nested struct of arrays] in numba_nested.py.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import nodes as ir
from ..ir.types import BOOL, FLOAT, INTEGER, TSum, TTensor, TTuple, Type
from ..values import Inj, dense, make_vec
from .numba_nested import NestedMixin
from .numba_types import (
    COLUMN_DTYPES,
    UNITS,
    Unsupported,
    array_rank,
    components,
    involves_soa,
    is_soa,
    soa_matrix,
)


def _tuple(parts: list[str]) -> str:
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def element(t: TTensor, v: str, i: str) -> str:
    """The element i of the struct of arrays v (of type t) as a tuple expression."""
    parts = []
    for k, e in enumerate(components(t.elem)):
        col = f"{v}[{k + 1}]"
        if is_soa(e):  # Note [Rows of structs of arrays]
            parts.append(rows(e, col, i))
        elif is_soa(TTensor(1, e)):
            parts.append(element(TTensor(1, e), col, i))
        else:
            parts.append(f"{col}[{i}]")
    return _tuple(parts)


def rows(t: TTensor, v: str, i: str) -> str:
    """Row i of a rows struct (one rank up, Note [Rows of structs of arrays]): the struct of
    arrays of the inner vector of element i."""
    parts = [f"{v}[0]"]
    for k, e in enumerate(components(t.elem)):
        col = f"{v}[{k + 1}]"
        parts.append(rows(e, col, i) if is_soa(e) else rows(TTensor(1, e), col, i) if is_soa(TTensor(1, e))
                     else f"{col}[{i}]")
    return _tuple(parts)


def nested(t: Type) -> bool:
    """Does t hold a vector of tuples with a vector-of-tuples component (rows), at any depth?"""
    if isinstance(t, TTuple):
        return any(nested(e) for e in t.elems)
    if isinstance(t, TSum):
        return nested(t.left) or nested(t.right)
    if isinstance(t, TTensor):
        return _has_rows(t.elem) if is_soa(t) else nested(t.elem)
    return False


def _has_rows(e: Type) -> bool:
    return any(is_soa(c) or (isinstance(c, (TTuple, TSum)) and _has_rows(c)) for c in components(e))


def _dtype(e: Type) -> str:
    return f"_np.{COLUMN_DTYPES[e]}" if e in COLUMN_DTYPES else "_np.float64"


def column_rank(e: Type, depth: int) -> int:
    """The rank of the array holding component e at ``depth`` nested vectors."""
    return depth + (array_rank(e) or 0)


class SoaMixin(NestedMixin):
    """Methods of the Numba emitter for vectors of tuples (Note [Struct of arrays])."""

    def soa_call(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> None:
        if name == "size" and soa_matrix(args[0].type):  # Note [Nested struct of arrays]
            self.emit(f"{t} = {self.atom(args[0])}[0]")
        elif name == "index" and soa_matrix(args[1].type):
            self.nested_index(t, self.atom(args[0]), self.atom(args[1]), args[1].type)
        elif name == "build" and isinstance(args[1], ir.Lam) and soa_matrix(e.type) and args[0].type == INTEGER:
            self.nested_build(t, args[0], args[1], e.type)
        elif name == "ts_sumbuild" and isinstance(args[1], ir.Lam) and soa_matrix(e.type) and args[0].type == INTEGER:
            self.nested_ts_sumbuild(t, args[0], args[1], args[2], e.type)  # Note [Ragged vectors of numbers]
        elif name == "size" and is_soa(args[0].type):
            self.emit(f"{t} = {self.atom(args[0])}[0]")
        elif name == "index" and is_soa(args[1].type):
            i, v = self.atom(args[0]), self.atom(args[1])
            k = self.mod.fresh("i")
            self.emit(f"{k} = _checkindex({i}, {v}[0])")
            self.emit(f"{t} = {element(args[1].type, v, k)}")
        elif name == "build" and isinstance(args[1], ir.Lam) and is_soa(e.type) and args[0].type == INTEGER:
            self.soa_build(t, args[0], args[1], e.type)
        elif name == "fold" and isinstance(args[0], ir.Lam) and is_soa(args[2].type):
            self.emit(f"{t} = {self.atom(args[1])}")
            v, i = self.atom(args[2]), self.mod.fresh("i")
            self.emit(f"for {i} in range({v}[0]):")
            inner = self.indented()
            inner.emit(f"{inner.mod.bind(inner.env, args[0].var)} = ({t}, {element(args[2].type, v, i)})")
            inner.emit(f"{t} = {inner.atom(args[0].body)}")
        elif name == "fold" and isinstance(args[0], ir.Lam) and not involves_soa(args[2].type):
            self.fold(t, args[0], args[1], args[2])  # a struct of arrays in the state only: the plain loop
        elif name == "ifold" and isinstance(args[1], ir.Lam) and args[0].type == INTEGER:
            self.ifold(t, args[0], args[1], args[2])
        elif e.type == UNITS and name in ("ts_zero", "ts_add", "ts_scale", "ts_neg"):
            self.unit_tangent(t, name, [self.atom(a) for a in args], args)
        else:
            raise Unsupported(f"primitive {name} on {e.arg.type}", e.span)

    def unit_tangent(self, t: str, name: str, xs: list[str], args: tuple[ir.Expr, ...]) -> None:
        """The tangent of a ``Vec Integer`` is a ``Vec (Tuple)``: only its length is data."""
        if name == "ts_zero":
            x = xs[0]
            self.emit(f"{t} = ({x}.shape[0],)" if args[0].type != UNITS else f"{t} = {x}")
            return
        if name == "ts_add":
            self.emit(f"if {xs[0]}[0] != {xs[1]}[0]:")
            self.indented().emit('raise ValueError("tensor sizes differ")')
        self.emit(f"{t} = {xs[-1]}")

    def soa_build(self, t: str, n: ir.Expr, lam: ir.Lam, vt: TTensor) -> None:
        size = self.atom(n)
        i = self.mod.fresh("i")
        writes: list[str] = []  # statements after the body's value § (the atom x), per iteration
        after: list[str] = []   # statements after the loop
        ragged = '    raise ValueError("a vector of tuples whose inner vectors differ in length")'

        def guarded(cond: str | None, lines: list[str]) -> None:
            """Lines run only where ``cond`` holds (the slot of a sum that is present)."""
            writes.extend(lines if cond is None else [f"if {cond}:", *("    " + x for x in lines)])

        def leaf(path: str, e: Type, rank: int, cond: str | None) -> str:
            """A column stacking the scalar or array at §{path} over the iterations."""
            col = self.mod.fresh("col")
            if rank == 0:
                self.emit(f"{col} = _np.empty({size}, {_dtype(e)})")
                writes.append(f"{col}[{i}] = §{path}")  # an absent slot's placeholder is a number too
                return col
            # Note [Rows of structs of arrays]: shaped by the first row present, checked after; the
            # rows of an absent sum slot are never read
            seen = self.mod.fresh("seen")
            self.emit(f"{col} = _np.empty(({'0, ' * (rank + 1)}), {_dtype(e)})")
            self.emit(f"{seen} = False")
            guarded(cond, [f"if not {seen}:", f"    {col} = _np.empty(({size},) + §{path}.shape, {_dtype(e)})",
                           f"    {seen} = True", f"elif §{path}.shape != {col}.shape[1:]:", ragged,
                           f"{col}[{i}] = §{path}"])
            after.extend([f"if not {seen}:", f"    {col} = _np.zeros(({size}, {'0, ' * rank}), {_dtype(e)})"])
            return col

        def both(cond: str | None, more: str) -> str:
            return more if cond is None else f"({cond}) and ({more})"

        def of_tuple(et: Type, path: str, cond: str | None) -> list[str]:
            """Columns of the tuple (or tagged sum) value at §{path} (an element)."""
            parts = []
            for k, e in enumerate(components(et)):
                p = f"{path}[{k}]"
                c = cond if not isinstance(et, TSum) or k == 0 else \
                    both(cond, f"§{path}[0]" if k == 1 else f"not §{path}[0]")
                if is_soa(e):
                    parts.append(of_struct(e, p, 1, c))
                elif isinstance(e, (TTuple, TSum)):
                    parts.append(_tuple([size, *of_tuple(e, p, c)]))
                else:
                    parts.append(leaf(p, e, column_rank(e, 0), c))
            return parts

        def of_struct(vt: TTensor, path: str, depth: int, cond: str | None) -> str:
            """The struct of arrays at §{path} (``depth`` nested vectors) stacked one rank up."""
            m, seen = self.mod.fresh("m"), self.mod.fresh("seen")
            self.emit(f"{m} = 0")
            self.emit(f"{seen} = False")
            guarded(cond, [f"if not {seen}:", f"    {m} = §{path}[0]", f"    {seen} = True",
                           f"elif §{path}[0] != {m}:", ragged])
            parts = [m]
            for k, e in enumerate(components(vt.elem)):
                p = f"{path}[{k + 1}]"
                if is_soa(e):
                    parts.append(of_struct(e, p, depth + 1, cond))
                elif isinstance(e, (TTuple, TSum)):
                    parts.append(of_struct(TTensor(1, e), p, depth, cond))
                else:
                    parts.append(leaf(p, e, column_rank(e, depth), cond))
            return _tuple(parts)

        value = _tuple([size, *of_tuple(vt.elem, "", None)])
        self.emit(f"for {i} in range({size}):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = {i}")
        x = inner.atom(lam.body)
        for line in writes:
            inner.emit(line.replace("§", x))
        for line in after:
            self.emit(line)
        self.emit(f"{t} = {value}")


def soa_numba_type(t: TTensor, numba_type: Callable[[Type], Any], depth: int = 1) -> Any:
    from numba import types
    cols = []
    for e in components(t.elem):
        if is_soa(e):  # Note [Rows of structs of arrays]
            cols.append(soa_numba_type(e, numba_type, depth + 1))
        elif is_soa(TTensor(1, e)):
            cols.append(soa_numba_type(TTensor(1, e), numba_type, depth))
        elif e == BOOL:
            cols.append(types.Array(types.boolean, depth, "C"))
        elif depth == 1:
            cols.append(numba_type(TTensor(1, e)))
        else:
            cols.append(types.Array(types.int64 if e in COLUMN_DTYPES else types.float64, column_rank(e, depth), "C"))
    return types.Tuple((types.int64, *cols))


def soa_type_source(t: TTensor, depth: int = 1) -> str:
    """Source of :func:`soa_numba_type` (the heap's typed lists, .numba_closures)."""
    cols = []
    for e in components(t.elem):
        if is_soa(e):
            cols.append(soa_type_source(e, depth + 1))
        elif is_soa(TTensor(1, e)):
            cols.append(soa_type_source(TTensor(1, e), depth))
        else:
            dt = "_nt.boolean" if e == BOOL else "_nt.int64" if e in COLUMN_DTYPES else "_nt.float64"
            cols.append(f"_nt.Array({dt}, {column_rank(e, depth)}, 'C')")
    return f"_nt.Tuple((_nt.int64, {''.join(c + ', ' for c in cols)}))"


def soa_placeholder(t: TTensor, depth: int = 1) -> str:
    """Source of an empty struct of arrays (the absent side of a sum, Note [Compiled sums])."""
    cols = []
    for e in components(t.elem):
        if is_soa(e):
            cols.append(soa_placeholder(e, depth + 1))
        elif is_soa(TTensor(1, e)):
            cols.append(soa_placeholder(TTensor(1, e), depth))
        else:
            cols.append(f"_np.zeros(({'0, ' * column_rank(e, depth)}), {_dtype(e)})")
    return "(0, " + "".join(f"{c}, " for c in cols) + ")"


def soa_to_machine(t: TTensor, to_machine: Callable[[Type], Callable]) -> Callable[[Any], Any]:
    """A run-time vector of tuples → (n, columns…)."""
    columns = [(lambda xs: np.array(xs, dtype=np.bool_)) if e == BOOL else to_machine(TTensor(1, e))
               for e in components(t.elem)]
    tagged = _tagged(t.elem)

    def convert(v: Any) -> tuple:
        items = [tagged(x) for x in dense(v)] if tagged else list(dense(v))
        return (len(items), *(c([x[k] for x in items]) for k, c in enumerate(columns)))
    return convert


def soa_from_machine(t: TTensor, from_machine: Callable[[Type], Callable | None]) -> Callable[[Any], Any]:
    """(n, columns…) → a run-time vector of tuples."""
    readers = []
    for e in components(t.elem):
        back = None if e == BOOL else from_machine(TTensor(1, e))
        if e in (FLOAT, BOOL):
            readers.append(lambda col: [float(x) for x in col])
        elif back is None:  # an array of rows
            readers.append(lambda col: list(col))
        else:
            readers.append(lambda col, back=back: list(dense(back(col))))

    def convert(v: tuple) -> np.ndarray:
        cols = [read(c) for read, c in zip(readers, v[1:])]
        rows = [tuple(c[i] for c in cols) for i in range(v[0])]
        if isinstance(t.elem, TSum):  # (tag, left, right) -> Inj
            rows = [Inj(bool(r[0]), r[1] if r[0] else r[2]) for r in rows]
        return make_vec(t.elem, rows)
    return convert


def _tagged(t: Type) -> Callable[[Any], Any] | None:
    """A run-time sum as (tag, left, right), the absent side a placeholder (Note
    [Compiled sums]), for its columns; None when t is not a sum (sums inside a
    component are the component's own columns)."""
    if isinstance(t, TSum):
        absent_l, absent_r = _python_placeholder(t.left), _python_placeholder(t.right)
        return lambda v: (True, v.value, absent_r) if v.left else (False, absent_l, v.value)
    return None


def _python_placeholder(t: Type) -> Any:
    if isinstance(t, TTuple):
        return tuple(_python_placeholder(e) for e in t.elems)
    if isinstance(t, TSum):
        return Inj(True, _python_placeholder(t.left))
    if isinstance(t, TTensor):
        return make_vec(t.elem, [], (0,) * t.rank)
    return {FLOAT: 0.0, INTEGER: 0, BOOL: False}.get(t, "")
