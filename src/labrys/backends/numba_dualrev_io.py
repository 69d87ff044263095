"""Interleave and the output seeding of Smeding & Vákár's staged versions D¹–D⁵ on the
``compiled`` backend (Note [Staged versions in compiled code] in numba_dualrev.py),
for inputs and outputs with vectors.

    x : Float                 ↦  (x, bp)                       bp the version's image: a closure
                                                               (D¹, D²) or (ID, closure) (D³–D⁵)
    x : Vec Float             ↦  (n, values, image column)     Note [Staged duals of vectors]
    x : Vec (Tuple Float …)   ↦  (n, (n, values, image column), …)
    x : Vec (Vec Float)       ↦  (n, offsets, values, image leaves…)   (Note [Nested struct of arrays])
    x : Integer, Bool, String, Vec Integer, Vec Bool  ↦  x
    x : Tuple …               ↦  the tuple of its parts' duals

Note [Staged duals of vectors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The dual of a ``Vec Float`` is a ``Vec (Tuple Float image)``, a struct of
arrays (Note [Struct of arrays] in numba_soa.py) whose image column holds the
closures as two int64 columns, tags and heap slots (Note [Closures in a struct
of arrays] in numba_types.py), beside an ID column from D³ on.  Interleave
fills the columns in one loop per Float column: element i's backpropagator is
made (and its ID drawn) as a scalar input's is, its real's position in c
(``q + i·r + k``, element-major as Deinterleave reads c back, r the reals of an
element) captured where the version needs it.  The count of the input's reals
``a`` (the size of c) is known only at run time now, so it is a variable of the
generated code.  The output seeding walks the output's dual the same way: one
loop per Float column, element i's backpropagator applied to (or staged with)
the cotangent's element i, the lengths checked against the cotangent's.

Note [Staged duals of nested vectors of tuples]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A ``Vec (Vec (Tuple Integer Float))`` input (ADBench hand's skinning weights) is a
nested struct of arrays, flat columns and offsets (Note [Nested struct of arrays] in
numba_nested.py); its dual keeps the offsets and the non-Float columns, and each Float
column becomes its values followed by the image's flat int64 columns ([IDs,] tags,
slots), since a flattened ``(Tuple Float image)`` leaf is those numbers in that order.
The q-th real of tuple j is at position ``pos + j·f + q`` of c, f the reals per tuple,
which is where dualrevtape's Deinterleave of the same struct reads it back.  Float
nests of any depth (hand's base relatives, ``Vec (Vec (Vec Float))``) are raveled as
a matrix is, with one offsets array per level from the array's shape.
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.types import BOOL, FLOAT, INTEGER, STRING, TTensor, TTuple, Type
from ..types.tangent import is_constant_tangent
from .numba_nested import nested_count, t_elem
from .numba_soa import element
from .numba_tape import _floats_per_element
from .numba_types import Unsupported, array_rank, is_soa, soa_leaves, soa_matrix, soa_rank

Seed = Callable[[object, str, str], None]  # (emitter, backpropagator, cotangent): emits one output's seeding


def count_reals(x: str, t: Type, e: ir.Call) -> str:
    """Source of the number of reals of x : t (Interleave's a)."""
    if t == FLOAT:
        return "1"
    if t in (INTEGER, BOOL, STRING) or (isinstance(t, TTensor) and t.elem in (INTEGER, BOOL)):
        return "0"
    if isinstance(t, TTuple):
        return " + ".join([count_reals(f"{x}[{k}]", u, e) for k, u in enumerate(t.elems)] or ["0"])
    if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
        return f"{x}.shape[0]"
    if is_soa(t) and isinstance(t.elem, TTuple):
        return f"{x}[0] * {_floats_per_element(t.elem, e.span)}"
    if _float_nest(t):
        return f"{x}.size"
    if soa_matrix(t):
        return f"{nested_count(x, t)} * {_floats_per_element(t_elem(t), e.span)}"
    raise Unsupported(f"a staged dualrev version's input of type {t}", e.span)


def _matrix(t: Type) -> bool:
    """``Vec (Vec Float)``: a 2-D array, its dual a nested struct of arrays of rank 2."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTensor) and array_rank(t) == 2


def _float_nest(t: Type) -> bool:
    """``Vec (Vec … Float)``, two or more deep: an N-D array, its dual a nested struct of arrays."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTensor) and (array_rank(t) or 0) >= 2


class StagedIOMixin:
    """Interleave and output seeding of the staged versions; the emitter provides ``leaf``
    (the version's image of an input real) and ``image_type``."""

    def staged_interleave(self, v: str, x: str, t: Type, a: str, e: ir.Call) -> str:
        """The dual of x : t, the reals at positions 0, 1, … of c (size a) in Deinterleave's order."""
        pos = self.mod.fresh("q")
        self.emit(f"{pos} = _np.int64(0)")
        return self._dual(v, x, t, a, pos, e)

    def _dual(self, v: str, x: str, t: Type, a: str, pos: str, e: ir.Call) -> str:
        if t == FLOAT:
            d = self.mod.fresh("d")
            self.emit(f"{d} = ({x}, {self.input_image(v, a, pos)})")
            self.emit(f"{pos} += 1")
            return d
        if t in (INTEGER, BOOL, STRING) or (isinstance(t, TTensor) and t.elem in (INTEGER, BOOL)):
            return x
        if isinstance(t, TTuple):
            parts = [self._dual(v, f"{x}[{k}]", u, a, pos, e) for k, u in enumerate(t.elems)]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
            n = self.mod.fresh("n")
            self.emit(f"{n} = {x}.shape[0]")
            vals, leaves = self._column(v, x, n, a, pos, "1", 0)
            self.emit(f"{pos} += {n}")
            return f"({n}, {vals}, {self._image_column(v, n, leaves)})"
        if is_soa(t) and isinstance(t.elem, TTuple):
            r = _floats_per_element(t.elem, e.span)
            value = self._soa_dual(v, x, t.elem, a, pos, str(r), [0], e)
            d = self.mod.fresh("d")
            self.emit(f"{d} = {value}")
            self.emit(f"{pos} += {x}[0] * {r}")
            return d
        if _float_nest(t):  # row-major, as Deinterleave reshapes c's slice; offsets from x's shape
            flat, n = self.mod.fresh("flat"), self.mod.fresh("n")
            self.emit(f"{flat} = _np.ascontiguousarray({x}).ravel()")
            self.emit(f"{n} = {flat}.shape[0]")
            vals, leaves = self._column(v, flat, n, a, pos, "1", 0)
            self.emit(f"{pos} += {n}")
            offsets, count = [], f"{x}.shape[0]"
            for d in range(1, array_rank(t)):
                offsets.append(f"_np.arange({count} + 1) * {x}.shape[{d}]")
                count = f"{count} * {x}.shape[{d}]"
            return f"({x}.shape[0], {', '.join(offsets)}, {vals}, {', '.join(leaves)})"
        if soa_matrix(t):  # Note [Staged duals of nested vectors of tuples]
            r, f = soa_rank(t), _floats_per_element(t_elem(t), e.span)
            n = self.mod.fresh("n")
            self.emit(f"{n} = {nested_count(x, t)}")
            parts, q = [f"{x}[{d}]" for d in range(r)], 0
            for c, (_, u) in enumerate(soa_leaves(t)):
                col = f"{x}[{r + c}]"
                if u == FLOAT:
                    vals, leaves = self._column(v, col, n, a, pos, str(f), q)
                    parts += [vals, *leaves]
                    q += 1
                elif u in (INTEGER, BOOL):
                    parts.append(col)
                else:
                    raise Unsupported(f"a staged dualrev version's input with vector elements of type {t_elem(t)}",
                                      e.span)
            self.emit(f"{pos} += {n} * {f}")
            return "(" + ", ".join(parts) + ")"
        raise Unsupported(f"a staged dualrev version's input of type {t}", e.span)

    def _soa_dual(self, v: str, x: str, et: TTuple, a: str, pos: str, r: str, q: list[int], e: ir.Call) -> str:
        parts = [f"{x}[0]"]
        for k, u in enumerate(et.elems):
            col = f"{x}[{k + 1}]"
            if u == FLOAT:
                vals, leaves = self._column(v, col, f"{x}[0]", a, pos, r, q[0])
                parts.append(f"({x}[0], {vals}, {self._image_column(v, f'{x}[0]', leaves)})")
                q[0] += 1
            elif isinstance(u, TTuple):
                parts.append(self._soa_dual(v, col, u, a, pos, r, q, e))
            elif u in (INTEGER, BOOL):
                parts.append(col)
            else:
                raise Unsupported(f"a staged dualrev version's input with vector elements of type {et}", e.span)
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def _column(self, v: str, col: str, n: str, a: str, pos: str, r: str, q: int) -> tuple[str, list[str]]:
        """(the values, the image's flat int64 columns: [IDs,] tags, slots) of a Float column."""
        vals, tags, slots, i, bp = (self.mod.fresh(w) for w in ("vals", "tags", "slots", "i", "bp"))
        ids = self.mod.fresh("ids") if v != "dr1" and v != "dr2" else None
        self.emit(f"{vals} = {col}.copy()")
        for c in (ids, tags, slots):
            if c:
                self.emit(f"{c} = _np.empty({n}, _np.int64)")
        self.emit(f"for {i} in range({n}):")
        body = self.indented()
        body.emit(f"{bp} = {body.input_image(v, a, f'{pos} + {i} * {r} + {q}')}")
        if ids:
            body.emit(f"{ids}[{i}] = {bp}[0]")
        clo = f"{bp}[1]" if ids else bp
        body.emit(f"{tags}[{i}] = {clo}[0]")
        body.emit(f"{slots}[{i}] = {clo}[1]")
        return vals, [c for c in (ids, tags, slots) if c]

    @staticmethod
    def _image_column(v: str, n: str, leaves: list[str]) -> str:
        if len(leaves) == 2:  # a closure: (n, tags, slots)
            return f"({n}, {leaves[0]}, {leaves[1]})"
        return f"({n}, {leaves[0]}, ({n}, {leaves[1]}, {leaves[2]}))"  # (ID, closure)

    # --- the outputs ------------------------------------------------------------------------

    def seed_each(self, y: str, dt: str, dtt: Type, image: Type, seed: Seed, e: ir.Call) -> None:
        """seed(emitter, bp, z) for every real of the output (its dual y) and its cotangent dt."""
        if is_constant_tangent(dtt):
            return
        if dtt == FLOAT:
            seed(self, f"{y}[1]", dt)
        elif isinstance(dtt, TTuple):
            for k in reversed(range(len(dtt.elems))):  # output_parts' order
                self.seed_each(f"{y}[{k}]", f"{dt}[{k}]", dtt.elems[k], image, seed, e)
        elif isinstance(dtt, TTensor) and dtt.rank == 1 and dtt.elem == FLOAT:
            self._seed_staged_column(f"{y}[0]", f"{y}[2]", dt, f"{dt}.shape[0]", image, seed)
        elif is_soa(dtt) and isinstance(dtt.elem, TTuple):
            self.emit(f"if {y}[0] != {dt}[0]:")
            self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            for k, u in enumerate(dtt.elem.elems):
                if is_constant_tangent(u):
                    continue
                if u == FLOAT:
                    self._seed_staged_column(f"{y}[{k + 1}][0]", f"{y}[{k + 1}][2]", f"{dt}[{k + 1}]",
                                      f"{dt}[{k + 1}].shape[0]", image, seed)
                else:
                    self.seed_each(f"{y}[{k + 1}]", f"{dt}[{k + 1}]", TTensor(1, u), image, seed, e)
        elif _matrix(dtt):  # (n, offsets, values, image leaves…): rows checked against dt's shape
            i, j, lo, hi = (self.mod.fresh(w) for w in ("i", "j", "lo", "hi"))
            self.emit(f"if {y}[0] != {dt}.shape[0]:")
            self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            self.emit(f"for {i} in range({y}[0]):")
            row = self.indented()
            row.emit(f"{lo} = {y}[1][{i}]")
            row.emit(f"{hi} = {y}[1][{i} + 1]")
            row.emit(f"if {hi} - {lo} != {dt}.shape[1]:")
            row.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            row.emit(f"for {j} in range({hi} - {lo}):")
            leaves = [f"{y}[{3 + k}][{lo} + {j}]" for k in range(3 if isinstance(image, TTuple) else 2)]
            bp = f"({leaves[0]}, ({leaves[1]}, {leaves[2]}))" if len(leaves) == 3 else f"({leaves[0]}, {leaves[1]})"
            seed(row.indented(), bp, f"{dt}[{i}, {j}]")
        else:
            raise Unsupported(f"a staged dualrev version's output cotangent of type {dtt}", e.span)

    def _seed_staged_column(self, n: str, img: str, dt: str, m: str, image: Type, seed: Seed) -> None:
        i = self.mod.fresh("i")
        self.emit(f"if {n} != {m}:")
        self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
        self.emit(f"for {i} in range({n}):")
        body = self.indented()
        seed(body, element(TTensor(1, image), img, i), f"{dt}[{i}]")
