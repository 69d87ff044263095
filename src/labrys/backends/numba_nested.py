"""Vectors of vectors of tuples for the ``compiled`` backend: flat columns and offsets.

    Γ ⊢ m : Vec (Vec (Tuple E1 … Ek))  ↦  (n : int64, O1 : int64[n + 1], E1[N], …, Ek[N])
    Γ ⊢ m : Vec^r (Tuple E1 … Ek)      ↦  (n, O1, …, O(r−1), E1[N], …, Ek[N])

Note [Nested struct of arrays]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A vector of vectors of flat tuples (dualrevtape's dual of a matrix, ``Vec (Vec
(Tuple Float Integer))``; ADBench hand's skinning weights, ``Vec (Vec (Tuple
Integer Float))``, one row per vertex of 1 to 4 (bone, weight) pairs) may be
ragged, so it is not a 2-D array: it is the tuples of every row one after the
other, one flat column per component, and an offsets array: row i is the
tuples ``O1[i] ≤ j < O1[i + 1]``.  r vectors deep, there are r − 1 offsets
arrays, level d's mapping its entries to ranges of level d + 1's (the last
level's entries are the tuples).  Offsets are absolute: ``index`` returns views
and never rebases, so a deeper level's offsets need not start at 0.

    (size m)       ↦  m[0]
    (index i m)    ↦  r = 2:  (b − a, E1[a:b], …, Ek[a:b])        a, b = O1[i], O1[i + 1]
                      r > 2:  (b − a, O2[a:b + 1], O3, …, E1, …, Ek)
    (build n (lam i row))  ↦  each row's offsets (shifted) and columns appended

``index`` of a rank-2 struct is the plain struct of arrays of the row (Note
[Struct of arrays]): 1-D slices, views, no copies.  ``build`` does not know
the rows' lengths before it runs them (the body may draw tape IDs, so it runs
once), so the arrays grow: when a row does not fit, an array is reallocated
at ``max(2 × capacity, used + row's length × rows left)``.  For a rectangular
nesting the first row's reallocation is the exact total and there is no
other; a ragged one grows geometrically.  The results are the used prefixes
(views).  dualrevtape's Interleave of a Float matrix makes its dual from the
array's shape: offsets ``0, m, 2m, …`` and the values raveled (Note [Deltas on
the tape] in numba_tape.py).

A tuple inside the element tuple is flattened (a column per number, in order;
a unit ``(Tuple)``, the tangent of an Integer, has none), so dualrevtape's dual
of hand's skinning weights, ``Vec (Vec (Tuple Integer (Tuple Float Integer)))``,
is three flat columns; a rank-2 row is then rebuilt as the nested struct of
arrays its tuple type has.  dualrevtape's Interleave of such an input pairs
each Float column with a column of IDs (the q-th real of tuple j gets first +
j·f + q), Deinterleave reads the adjoints back in that order, and the
cotangent of a nested output (a ``Vec (Vec Float)`` array) is seeded row by
row, each row's length checked against the array's shape.

At the boundary (:func:`nested_to_machine`, :func:`nested_from_machine`) a
value is converted level by level in Python, ragged or not: a nested list of
tuples goes in, a ``Vec`` of ``Vec`` of tuples comes out, rows of the
lengths the offsets say (an empty row is an empty ``Vec``).  Every other
operation on such a vector (arithmetic, tangent operations) raises
:class:`Unsupported`: the def runs on ``python`` with a note, never with a
wrong layout.

Note [Ragged vectors of numbers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A ``Vec (Vec Float)`` is an (n, m) array (and ``Vec^r Float`` r-D): the fast
path, with no copy at the boundary.  A ragged one (examples/vectors.ks's
``triangle``: row i has i + 1 entries) has no array form, so each compiled def
has a second, *ragged variant*, generated on first need with every
``Vec^r Float`` and ``Vec^r Integer`` (r ≥ 2) of its module a nested struct of
arrays whose element is the number itself: one flat column and the offsets,

    Γ ⊢ m : Vec (Vec Float)  ↦  (n : int64, O1 : int64[n + 1], E[N])

so that ``index i m`` is the slice ``E[O1[i]:O1[i + 1]]``, which is exactly a
``Vec Float``'s representation (a view), and a deeper nest's row is the
rank − 1 nest as above.  ``build`` of rows appends them (``_grow``).  The
variant is used when an argument's rows differ in shape (the conversion raises
:class:`~labrys.backends.compiled.Ragged`) or when the rectangular code's
build meets rows of different lengths (``tensor sizes differ``, the def
mentioning such a nest); a rectangular call keeps the array code.  A
``Vec (Vec Integer)`` has no array form at all, so a def holding one is
generated as its ragged variant from the start.  Results come back as the
python backend's: a ``Vec`` of ``Vec Float`` rows (float64 arrays).  What the
variant does not lower (arithmetic on whole nests, a struct of arrays with a
nest inside) raises :class:`Unsupported`: that call runs on ``python`` with
a note naming the ragged argument.  The switch is a context variable
(:func:`~labrys.backends.numba_types.ragged_variant`) read by ``soa_rank``
and ``array_rank`` while the variant is generated and its converters made.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import nodes as ir
from ..ir.types import BOOL, FLOAT, TTensor, TTuple, Type
from ..values import dense, make_vec
from .numba_types import COLUMN_DTYPES, Unsupported, layout, soa_leaves, soa_rank


def _dtype(e: Type) -> str:
    return f"_np.{COLUMN_DTYPES[e]}" if e in COLUMN_DTYPES else "_np.float64"


def columns(t: TTensor) -> list[Type]:
    """The types of the flat columns: one per number of the element tuple (a unit has none)."""
    return [e for _, e in soa_leaves(t)]


def tuple_type(t: Type) -> Type:
    """The element tuple (or number), laid out (Note [Closures in a struct of arrays] in numba_types.py)."""
    while isinstance(t, TTensor):
        t = t.elem
    return layout(t)


def _row(et: Type, count: str, column: Callable[[tuple[int, ...]], str], path: tuple[int, ...] = ()) -> str:
    """The rank-1 struct of arrays of a row (Note [Struct of arrays]): a number's column, a tuple
    component's own (count, columns…); a row of numbers is its column (Note [Ragged vectors of numbers])."""
    if not isinstance(et, TTuple):
        return column(path)
    parts = [count]
    for k, e in enumerate(et.elems):
        parts.append(_row(e, count, column, path + (k,)) if isinstance(e, TTuple) else column(path + (k,)))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def nested_numba_type(t: TTensor) -> Any:
    from numba import types
    r = soa_rank(t)
    cols = [types.Array(types.boolean if e == BOOL else types.int64 if e in COLUMN_DTYPES else types.float64, 1, "C")
            for e in columns(t)]
    return types.Tuple((types.int64, *[types.Array(types.int64, 1, "C")] * (r - 1), *cols))


def nested_type_source(t: TTensor) -> str:
    """Source of :func:`nested_numba_type` (the heap's typed lists, .numba_closures)."""
    r = soa_rank(t)
    cols = [f"_nt.Array(_nt.{'boolean' if e == BOOL else 'int64' if e in COLUMN_DTYPES else 'float64'}, 1, 'C')"
            for e in columns(t)]
    offsets = ["_nt.Array(_nt.int64, 1, 'C')"] * (r - 1)
    return "_nt.Tuple((_nt.int64, " + "".join(f"{c}, " for c in offsets + cols) + "))"


def nested_placeholder(t: TTensor) -> str:
    """Source of an empty nested struct of arrays (the absent side of a sum)."""
    offsets = ["_np.zeros(1, _np.int64)"] * (soa_rank(t) - 1)
    cols = [f"_np.zeros(0, {_dtype(e)})" for e in columns(t)]
    return "(0, " + "".join(f"{c}, " for c in offsets + cols) + ")"


def nested_interleave(x: str, rank: int, first: str, contribs: bool = False) -> str:
    """The dual of the C-contiguous Float array x of the given rank (≥ 2), its reals numbered
    from the ID ``first`` in row-major order: offsets from x's shape (with ``contribs``,
    dualrev's (ID, Contrib) pairs: a column of empty Contribs too)."""
    offsets, count = [], f"{x}.shape[0]"
    for d in range(1, rank):
        offsets.append(f"_np.arange({count} + 1) * {x}.shape[{d}]")
        count = f"{count} * {x}.shape[{d}]"
    empty = f", _np.zeros({x}.size, _np.int64)" if contribs else ""
    return f"({x}.shape[0], {', '.join(offsets)}, {x}.ravel().copy(), _np.arange({first}, {first} + {x}.size){empty})"


def t_elem(t: Type) -> TTuple:
    """The element tuple type of a nested struct of arrays."""
    return tuple_type(t)


def nested_count(x: str, t: TTensor) -> str:
    """Source of the number of tuples of the nested struct of arrays x, which came in through the
    boundary (its offsets start at 0): the last offset."""
    return f"{x}[{soa_rank(t) - 1}][-1]"


def nested_dual(x: str, t: TTensor, first: str, contribs: bool = False) -> str:
    """dualrevtape's Interleave of the nested struct of arrays x (Note [Deltas on the tape]): each
    Float column paired with IDs, the q-th real of tuple j getting first + j·f + q; other columns shared
    (with ``contribs``, dualrev's (ID, Contrib) pairs: a column of empty Contribs after each IDs column)."""
    r, leaves = soa_rank(t), soa_leaves(t)
    f = sum(e == FLOAT for _, e in leaves)
    parts, q = [f"{x}[{d}]" for d in range(r)], 0
    for c, (_, e) in enumerate(leaves):
        col = f"{x}[{r + c}]"
        if e == FLOAT:
            parts += [f"{col}.copy()", f"{first} + {f} * _np.arange({col}.shape[0]) + {q}"]
            parts += [f"_np.zeros({col}.shape[0], _np.int64)"] if contribs else []
            q += 1
        else:
            parts.append(col)
    return "(" + ", ".join(parts) + ")"


def nested_adjoints(adj: str, c: str, n: str, x: str, t: TTensor, f: int) -> str:
    """Deinterleave of the nested struct of arrays x: its tangent, x's offsets and one column of
    adjoints per Float column, read from adj[c …] as :func:`nested_dual` numbered them."""
    r = soa_rank(t)
    floats = [q for q, (_, e) in enumerate(e for e in soa_leaves(t) if e[1] == FLOAT)]
    return "(" + ", ".join([f"{x}[{d}]" for d in range(r)] +
                           [f"{adj}[{c} + {q}:{c} + {n} * {f}:{f}].copy()" for q in floats]) + ")"


class NestedMixin:
    """Methods of the Numba emitter for nested structs of arrays (Note [Nested struct of arrays])."""

    def nested_index(self, t: str, i: str, v: str, vt: TTensor) -> None:
        r, k = soa_rank(vt), len(columns(vt))
        j, a, b = self.mod.fresh("i"), self.mod.fresh("a"), self.mod.fresh("b")
        self.emit(f"{j} = _checkindex({i}, {v}[0])")
        self.emit(f"{a} = {v}[1][{j}]")
        self.emit(f"{b} = {v}[1][{j} + 1]")
        if r == 2:
            at = {path: c for c, (path, _) in enumerate(soa_leaves(vt))}
            self.emit(f"{t} = {_row(tuple_type(vt), f'{b} - {a}', lambda p: f'{v}[{2 + at[p]}][{a}:{b}]')}")
        else:
            parts = [f"{v}[2][{a}:{b} + 1]", *(f"{v}[{d}]" for d in range(3, r + k))]
            self.emit(f"{t} = ({b} - {a}, {', '.join(parts)})")

    def nested_ts_sumbuild(self, t: str, n: ir.Expr, lam: ir.Lam, like: ir.Expr, vt: TTensor) -> None:
        """The reverse of a loop over the rows of a ragged ``Vec (Vec Float)`` (Note [Ragged vectors
        of numbers]): ``ts_sumbuild n (lam i … (ts_delta like i row)) like`` is one flat column of
        zeros shaped like ``like``'s, each term's row added into its segment in place."""
        from .numba_tangents import SparseSum
        if soa_rank(vt) != 2 or tuple_type(vt) != FLOAT:
            raise Unsupported(f"primitive ts_sumbuild of {vt}", lam.span)
        size, base = self.atom(n), self.atom(like)
        acc, i = self.mod.fresh("acc"), self.mod.fresh("i")
        self.emit(f"{acc} = _np.zeros({base}[2].shape[0])")
        self.emit(f"for {i} in range({size}):")
        inner = self.indented()
        inner.env[lam.var] = i
        body = lam.body
        while isinstance(body, ir.Let):
            inner.let_step(body)
            body = body.body
        value = inner.sparse_atom(body)
        if not isinstance(value, SparseSum) or value.base is not None or value.shape != f"{base}.shape" or \
                any(outside or isinstance(k, tuple) for k, _, outside in value.terms):
            raise Unsupported(f"primitive ts_sumbuild of {vt} (a term other than a row's one-hot)", lam.span)
        for k, x, _ in value.terms:
            j, a, b = self.mod.fresh("i"), self.mod.fresh("a"), self.mod.fresh("b")
            inner.emit(f"{j} = _checkindex({k}, {base}[0])")
            inner.emit(f"{a} = {base}[1][{j}]")
            inner.emit(f"{b} = {base}[1][{j} + 1]")
            inner.emit(f"{acc}[{a}:{b}] += _shaped({inner.materialise(x)}, {acc}[{a}:{b}])")
        self.emit(f"{t} = ({base}[0], {base}[1], {acc})")

    def nested_build(self, t: str, n: ir.Expr, lam: ir.Lam, vt: TTensor) -> None:
        """Rows (each of rank r − 1) appended one by one (Note [Nested struct of arrays])."""
        r, leaves = soa_rank(vt), columns(vt)
        # where the row holds column c: in a rank-1 row, at its path (each step past the row's count)
        numbers = not isinstance(tuple_type(vt), TTuple)  # Note [Ragged vectors of numbers]
        at = ["".join(f"[{1 + k}]" for k in path) for path, _ in soa_leaves(vt)] if r == 2 else \
            [f"[{r - 1 + c}]" for c in range(len(leaves))]
        size, i = self.atom(n), self.mod.fresh("i")
        top = self.mod.fresh("off")
        levels = [self.mod.fresh("off") for _ in range(r - 2)]   # O2 … O(r−1)
        used = [self.mod.fresh("used") for _ in range(r - 1)]    # entries of levels 2 … r so far
        cols = [self.mod.fresh("col") for _ in leaves]
        self.emit(f"{top} = _np.empty({size} + 1, _np.int64)")
        self.emit(f"{top}[0] = 0")
        for o in levels:
            self.emit(f"{o} = _np.zeros(1, _np.int64)")
        for u in used:
            self.emit(f"{u} = 0")
        for col, e in zip(cols, leaves):
            self.emit(f"{col} = _np.empty(0, {_dtype(e)})")
        self.emit(f"for {i} in range({size}):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = {i}")
        row = inner.atom(lam.body)
        lo, hi = self.mod.fresh("lo"), self.mod.fresh("hi")
        inner.emit(f"{lo} = 0")
        inner.emit(f"{hi} = {row}.shape[0]" if numbers and r == 2 else f"{hi} = {row}[0]")
        left = f"({size} - {i})"
        for d, o in enumerate(levels):  # the row's offsets R[d + 1] become level d + 2's, shifted
            w, src = self.mod.fresh("w"), f"{row}[{d + 1}]"
            inner.emit(f"{w} = {hi} - {lo}")
            inner.emit(f"{o} = _grow({o}, {used[d]} + 1, {used[d]} + 1 + {w}, {used[d]} + 1 + {w} * {left})")
            inner.emit(f"{o}[{used[d]} + 1:{used[d]} + 1 + {w}] = {used[d + 1]} + "
                       f"({src}[{lo} + 1:{hi} + 1] - {src}[{lo}])")
            inner.emit(f"{used[d]} += {w}")
            inner.emit(f"{lo}, {hi} = {src}[{lo}], {src}[{hi}]")
        w = self.mod.fresh("w")
        inner.emit(f"{w} = {hi} - {lo}")
        for c, col in enumerate(cols):
            inner.emit(f"{col} = _grow({col}, {used[-1]}, {used[-1]} + {w}, {used[-1]} + {w} * {left})")
            inner.emit(f"{col}[{used[-1]}:{used[-1]} + {w}] = {row}{at[c]}[{lo}:{hi}]")
        inner.emit(f"{used[-1]} += {w}")
        inner.emit(f"{top}[{i} + 1] = {used[0]}")
        parts = [size, top, *(f"{o}[:{u} + 1]" for o, u in zip(levels, used)), *(f"{c}[:{used[-1]}]" for c in cols)]
        self.emit(f"{t} = ({', '.join(parts)})")


def _leaf(e: Type) -> Callable[[Any], Any]:
    return float if e == FLOAT else bool if e == BOOL else int


def _fill(et: TTuple, reals: Any) -> tuple:
    """The element tuple of type et of the column values (an iterator), in order (a number: the next)."""
    if not isinstance(et, TTuple):
        return next(reals)
    return tuple(_fill(e, reals) if isinstance(e, TTuple) else next(reals) for e in et.elems)


def _at(x: Any, path: tuple[int, ...]) -> Any:
    for k in path:
        x = x[k]
    return x


def nested_to_machine(t: TTensor) -> Callable[[Any], tuple]:
    """A run-time ``Vec^r (Tuple …)``, ragged or not, → (n, offsets…, flat columns…)."""
    r, leaves = soa_rank(t), soa_leaves(t)
    dtypes = [np.bool_ if e == BOOL else np.int64 if e in COLUMN_DTYPES else np.float64 for _, e in leaves]

    def convert(v: Any) -> tuple:
        level = list(dense(v))
        offsets = []
        for _ in range(r - 1):
            nxt: list = []
            off = np.empty(len(level) + 1, np.int64)
            off[0] = 0
            for j, row in enumerate(level):
                nxt.extend(dense(row))
                off[j + 1] = len(nxt)
            offsets.append(off)
            level = nxt
        cols = [np.array([_at(x, path) for x in level], dtype) if level else np.zeros(0, dtype)
                for (path, _), dtype in zip(leaves, dtypes)]
        return (len(offsets[0]) - 1, *offsets, *cols)
    return convert


def nested_from_machine(t: TTensor) -> Callable[[tuple], Any]:
    """(n, offsets…, flat columns…) → a run-time ``Vec`` of ``Vec`` … of tuples."""
    r, et, readers = soa_rank(t), tuple_type(t), [_leaf(e) for _, e in soa_leaves(t)]
    types = [t.elem]
    while isinstance(types[-1], TTensor):
        types.append(types[-1].elem)

    def convert(v: tuple) -> Any:
        cols = [c.tolist() for c in v[r:]]
        count = len(cols[0]) if cols else int(v[r - 1][-1])  # (only units: no column gives the count)
        reals = [[read(x) for x in c] for read, c in zip(readers, cols)]
        tuples = [_fill(et, iter([c[j] for c in reals])) for j in range(count)]

        def entries(d: int, lo: int, hi: int) -> list:
            """Entries lo … hi − 1 of level d (1: the top vector's elements, r: the tuples)."""
            if d == r:
                return tuples[lo:hi]
            off = v[d]
            return [make_vec(types[d], entries(d + 1, int(off[j]), int(off[j + 1]))) for j in range(lo, hi)]
        return make_vec(t.elem, entries(1, 0, int(v[0])))
    return convert


_KINDS = {FLOAT: "fiu", BOOL: "b"}  # the NumPy kinds a column's Python values may have; Integer's: "iu"


def fast_nested(t: TTensor) -> Callable[[Any], tuple | None]:
    """Python lists (or arrays) of … of tuples → the machine form directly, for the fast boundary
    (Note [Cheap boundaries] in boundary.py); None for anything the general path should judge."""
    r, leaves, et = soa_rank(t), soa_leaves(t), tuple_type(t)
    dtypes = {FLOAT: np.float64, BOOL: np.bool_}

    def shaped(x: Any, u: Type) -> bool:
        if not isinstance(u, TTuple):  # a nest of numbers: each column value is checked below
            return True
        return type(x) is tuple and len(x) == len(u.elems) and \
            all(shaped(y, e) for y, e in zip(x, u.elems) if isinstance(e, TTuple))

    def vector(x: Any) -> bool:
        return isinstance(x, list) or (isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype == object)

    def convert(v: Any) -> tuple | None:
        if not vector(v):
            return None
        level, offsets = v, []
        for _ in range(r - 1):
            if not all(vector(row) for row in level):
                return None
            off = np.zeros(len(level) + 1, np.int64)
            np.cumsum([len(row) for row in level], out=off[1:])
            offsets.append(off)
            level = [x for row in level for x in row]
        if not all(shaped(x, et) for x in level):
            return None
        cols = []
        for path, e in leaves:
            values = [_at(x, path) for x in level]
            col = np.array(values) if values else np.zeros(0, dtypes.get(e, np.int64))
            if col.ndim != 1 or col.dtype.kind not in _KINDS.get(e, "iu"):
                return None
            cols.append(col.astype(dtypes.get(e, np.int64)))
        return (len(v), *offsets, *cols)
    return convert
