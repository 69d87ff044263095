"""BOGs crossing the compiled backend's boundary: a Python value whose BOGs are
opaque boxes (:class:`.bog_runtime.Bog`, as every backend makes them) to and
from the value of its concrete type (Note [Concrete BOGs] in :mod:`.bog_types`).

    unbox  τ[BOG_f] → C(τ):  Bog(b)          ↦  C(b)                      (f not taped)
                             box of f taped  ↦  the index of its record in the call's tape
    rebox  C(τ) → τ[BOG_f]:  b               ↦  Bog(b)                    (f not taped)
                             k               ↦  TapedBog(tape, R_f, k)    (f taped)

Note [BOGs across the boundary]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A taped function's BOG is an index into its record list (Note [Recursive
BOGs] in :mod:`.bog_types`).  The lists of one call from Python — its
*tape*, one typed list per record type — are made by the backend; a BOG
that leaves the call is a :class:`.bog_runtime.TapedBog`: the tape, the
record type and the index.  The box owns the tape (a reference to its
lists), so the records live exactly as long as some BOG of that call is
reachable from Python, then Python frees them with the box; there is no
explicit free and no dangling index.

Passing a box back in (``[sufrevpass f]``, possibly much later, possibly
twice, possibly after another BOG of f was reversed) gives the call the
box's own lists, so the index is read where it was written and nothing is
copied: the backend's tape *adopts* the lists of the first box it meets if
it has written nothing yet (:meth:`shares`).  Records are never mutated, so
reading one twice, or two calls reading the same lists, is fine; a call may
append (a reverse pass that runs a forward pass inside, e.g. a ``fold``'s
reverse step) — appending moves no index — and the backend drops what it
appended when the call's result holds no BOG of that tape.  Any other box —
made by the python backend, or by another call whose lists this call did
not adopt — is copied in: its records are converted and appended to this
call's lists, children before parents, by an explicit post-order walk (no
Python recursion proportional to the recursion depth the BOG records: a
10⁴-deep BOG is 10⁴ records).  The other way, a ``TapedBog``'s ``value``
(what the python backend's ``bogOpen`` reads) converts one record on demand,
its inner BOGs again ``TapedBog`` s, so a compiled BOG reversed on another
backend is read level by level.

A non-recursive function's BOG needs no tape and crosses as a
:class:`.bog_runtime.MachineBog`: the compiled value of its structure,
unconverted, taken back as is by compiled code of the same structure (no
Python work for an LSTM-sized BOG).  Its ``value`` is converted for another
backend on demand (``labrys.backends.bog_entry``), so a BOG with no such
conversion (vectors of tuples of vectors) does not cross.

The tape (backend side) provides ``read(R, k)``, ``push(R, value)`` (values
in the run-time representation of R, a type without ``BOG``),
``shares(box)`` and ``memo``/``keep`` for one conversion.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir.types import TBogOf, TSum, TTensor, TTuple, Type
from ..values import Inj, dense, make_vec
from .bog_runtime import Bog, TapedBog

Convert = Callable  # (value, tape) -> value


@dataclass(frozen=True)
class Taped:
    """A taped BOG's description: which (for the memo), its record type R, its tagged structure S."""

    ident: object
    record: Type
    structure: Type


class BogConverter:
    """Unbox and rebox converters over one :class:`.bog_types.Concretiser` (its ``own`` set)."""

    def __init__(self, cz) -> None:
        self.cz = cz
        self.memo: dict = {}
        self.keep: list = []  # the types memoised by id

    # --- which BOGs are taped ------------------------------------------------------
    def taped(self, t: TBogOf) -> Taped | None:
        cz = self.cz
        if isinstance(t.of, Type):
            if cz.own is not None and cz.type(t.of) == cz.own:  # the def's own BOG
                return Taped("own", cz.own, t.of)
            return None
        if not cz.taped(t.of):
            return None
        behind = cz.expand(t)
        structure = behind.of if isinstance(behind, TBogOf) and isinstance(behind.of, Type) else behind
        return Taped(("fn", t.of), cz.type(structure), structure)

    # --- converters ----------------------------------------------------------------
    def convert(self, t: Type, unbox: bool) -> Convert | None:
        """Python value of the tagged type t ↔ value of C(t); None: the identity."""
        key = (id(t), unbox)
        if key not in self.memo:
            self.keep.append(t)
            self.memo[key] = self._convert(t, unbox)
        return self.memo[key]

    def _convert(self, t: Type, unbox: bool) -> Convert | None:
        match t:
            case TBogOf():
                tp = self.taped(t)
                if tp is not None:
                    return self._taped(tp, unbox)
                inner = self.convert(self.cz.expand(t), unbox)
                if unbox:
                    return (lambda v, tape: v.value) if inner is None else (lambda v, tape: inner(v.value, tape))
                return (lambda v, tape: Bog(v)) if inner is None else (lambda v, tape: Bog(inner(v, tape)))
            case TTuple(elems):
                parts = [self.convert(e, unbox) for e in elems]
                if all(p is None for p in parts):
                    return None
                return lambda v, tape: tuple(x if p is None else p(x, tape) for p, x in zip(parts, v))
            case TTensor(_, elem):
                f = self.convert(elem, unbox)
                if f is None:
                    return None
                target = self.cz.type(elem) if unbox else elem

                def each(v, tape):
                    arr = dense(v)
                    return make_vec(target, [f(x, tape) for x in arr.flat], arr.shape)
                return each
            case TSum(a, b):
                fa, fb = self.convert(a, unbox), self.convert(b, unbox)
                if fa is None and fb is None:
                    return None
                fa = fa or (lambda x, tape: x)
                fb = fb or (lambda x, tape: x)
                return lambda v, tape: Inj(v.left, (fa if v.left else fb)(v.value, tape))
        return None

    def _taped(self, tp: Taped, unbox: bool) -> Convert:
        key = (tp.ident, unbox)
        if key in self.memo:  # the structure holds the same BOG again: built once, lazily
            return self.memo[key]
        if unbox:
            def inward(box, tape):
                return self.inward(box, tape, tp)
            self.memo[key] = inward
            return inward
        reader: list = []

        def read(value, tape):
            if not reader:
                reader.append(self.convert(tp.structure, False) or (lambda x, _: x))
            return reader[0](value, tape)

        def outward(k, tape):
            return TapedBog(tape, tp.record, int(k), read)
        self.memo[key] = outward
        return outward

    # --- a box copied into a call's tape (Note [BOGs across the boundary]) ------------
    def inward(self, box, tape, tp: Taped) -> int:
        if isinstance(box, TapedBog) and tape.shares(box):
            return box.index
        if id(box) in tape.memo:
            return tape.memo[id(box)]
        order, seen, stack = [], set(), [(box, tp, False)]
        while stack:  # post-order: a record's inner BOGs are appended before it
            b, d, expanded = stack.pop()
            if expanded:
                order.append((b, d))
                continue
            if id(b) in seen or id(b) in tape.memo or (isinstance(b, TapedBog) and tape.shares(b)):
                continue
            seen.add(id(b))
            stack.append((b, d, True))
            found: list = []
            walk = self.walker(d.structure)
            if walk is not None:
                walk(b.value, found)
            stack.extend((c, cd, False) for c, cd in reversed(found))
        tape.keep.extend(order)  # ids in the memo stay valid
        for b, d in order:
            record = self.convert(d.structure, True)
            value = b.value if record is None else record(b.value, tape)  # inner BOGs: memo hits
            tape.memo[id(b)] = tape.push(d.record, value)
        return tape.memo[id(box)]

    def walker(self, t: Type) -> Callable | None:
        """v of the tagged type t -> appends (box, Taped) for each taped BOG directly in v."""
        key = (id(t), "walk")
        if key not in self.memo:
            self.keep.append(t)
            self.memo[key] = self._walker(t)
        return self.memo[key]

    def _walker(self, t: Type) -> Callable | None:
        match t:
            case TBogOf():
                tp = self.taped(t)
                if tp is not None:
                    return lambda v, out: out.append((v, tp))
                inner = self.walker(self.cz.expand(t))
                return None if inner is None else (lambda v, out: inner(v.value, out))
            case TTuple(elems):
                parts = [(k, w) for k, e in enumerate(elems) if (w := self.walker(e)) is not None]
                if not parts:
                    return None

                def each_part(v, out):
                    for k, w in parts:
                        w(v[k], out)
                return each_part
            case TTensor(_, elem):
                w = self.walker(elem)
                if w is None:
                    return None

                def each_elem(v, out):
                    for x in dense(v).flat:
                        w(x, out)
                return each_elem
            case TSum(a, b):
                wa, wb = self.walker(a), self.walker(b)
                if wa is None and wb is None:
                    return None

                def branch(v, out):
                    w = wa if v.left else wb
                    if w is not None:
                        w(v.value, out)
                return branch
        return None
