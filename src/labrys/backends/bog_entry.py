"""A compiled def whose parameters or result hold a recursive function's BOG: the
heap's record lists come from Python (a :class:`BogTape`) and leave with the
BOGs (Note [BOGs across the boundary] in labrys.ad.bog_boundary; the backends
never import ``labrys.ad``, so the converters come in a ConcreteDef).

    Python → compiled:  [sufrevpass f] (dt, box)  ↦  heap = this call's lists, the box's
                        record lists adopted;  box ↦ its index
    compiled → Python:  [suffwdpass f] x  ↦  (t, k)  ↦  (t, TapedBog(tape, R, k))

A non-recursive function's BOG needs no tape: it crosses as a ``MachineBog``,
its compiled value unconverted (:func:`machine_converters`).
"""
from __future__ import annotations

from typing import Any, Callable

from ..context import Limits
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.types import TBase, TSum, TTensor, TTuple, Type
from ..memory import address_space_window
from .closure_boundary import FAILURES, Boundary, direct
from .numba_soa import nested


class BogTape:
    """The record lists of one compiled call, by record type (the ``tape`` of
    labrys.ad.bog_boundary): what a taped BOG made by the call indexes, kept alive by
    every such BOG handed to Python."""

    __slots__ = ("lists", "into", "outof", "memo", "keep", "pushed", "adopted", "__weakref__")

    def __init__(self, lists: dict[Type, Any], into: dict[Type, Callable], outof: dict[Type, Callable]) -> None:
        self.lists, self.into, self.outof = lists, into, outof
        self.memo: dict[int, int] = {}  # id(box) -> its index, for one conversion
        self.keep: list = []            # the boxes in memo
        self.pushed = False
        self.adopted: list | None = None  # (list, its length when adopted)

    def read(self, record: Type, k: int) -> Any:
        return self.outof[record](self.lists[record][k])

    def push(self, record: Type, value: Any) -> int:
        self.pushed = True
        lst = self.lists[record]
        lst.append(self.into[record](value))
        return len(lst) - 1

    def shares(self, box) -> bool:
        """Whether box indexes this call's lists; a call that has written nothing adopts the
        lists of the first box it meets (the box is then read in place, no copy)."""
        mine, theirs = self.lists.get(box.record), box.tape.lists.get(box.record)
        if theirs is None or mine is None:
            return False
        if mine is theirs:
            return True
        if self.pushed or self.adopted is not None:
            return False
        self.adopted = []
        for t, lst in box.tape.lists.items():
            if t in self.lists:
                self.lists[t] = lst
                self.adopted.append((lst, len(lst)))
        return True

    def release(self) -> None:
        """Drop what this call appended to adopted lists (its result holds no BOG of them)."""
        for lst, n in self.adopted or ():
            if len(lst) > n:
                del lst[n:]
        self.adopted = None


def bog_entry(backend, d: ir.Def, compiled: Any, boundary: Boundary, boxes, to_machine: Callable,
              from_machine: Callable, original: ir.Def) -> Callable[[Any], Any]:
    """The Python callable of the concrete def d, its heap's record lists made (or adopted)
    here; ``boxes`` (a ConcreteDef) converts its BOGs with the call's tape."""
    compiled = direct(compiled)
    records = dict(boundary.table.records)  # record type -> its list in the heap
    into = {t: to_machine(t) for t in records}
    outof = {t: from_machine(t) or (lambda x: x) for t in records}
    convert = [to_machine(p.type) for p in d.params]
    back = from_machine(d.ret) or (lambda x: x)
    unbox, rebox = boxes.unbox, boxes.rebox
    slow: list[Callable] = []

    def on_python(arg: Any) -> Any:  # Note [Compiled fallback]
        if not slow:
            from .python import PythonBackend
            slow.append(PythonBackend.generate(backend, original))
        return slow[0](arg)

    def run(arg: Any) -> Any:
        args = (arg,) if len(convert) == 1 else arg
        heap = list(boundary.new_heap())
        tape = BogTape({t: heap[k] for t, k in records.items()}, into, outof)
        try:
            machine = [c(x if u is None else u(x, tape)) for c, u, x in zip(convert, unbox, args)]
            tape.memo, tape.keep = {}, []
            for t, k in records.items():
                heap[k] = tape.lists[t]
            if Limits.max_memory is None:
                result = compiled(*machine, tuple(heap))
            else:
                with address_space_window():
                    result = compiled(*machine, tuple(heap))
            out = back(result)
            out = out if rebox is None else rebox(out, tape)
        except FAILURES:
            tape.release()
            return on_python(arg)
        if not boxes.returns_tape:
            tape.release()
        return out

    run.fast = None
    run.__name__ = f"compiled {show_name(d.name)}"
    return run


# --- a non-recursive function's BOG: kept in its compiled representation -------------------

def is_bog(t: Type) -> bool:
    return isinstance(t, TBase) and t.name == "BOG"


def holds_bog(t: Type) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        if is_bog(x):
            return True
        if isinstance(x, TTuple):
            stack.extend(x.elems)
        elif isinstance(x, TSum):
            stack += [x.left, x.right]
        elif isinstance(x, TTensor):
            stack.append(x.elem)
    return False


def outside_bogs(orig: Type, conc: Type) -> list[Type]:
    """The parts of the concrete type conc that cross the boundary converted: not a BOG of
    the tagged type orig (it crosses as it is), unless that BOG holds vectors of tuples of
    vectors, which no other backend could read (Note [Rows of structs of arrays])."""
    if is_bog(orig):
        return [conc] if nested(conc) else []
    if isinstance(orig, TTuple) and isinstance(conc, TTuple) and holds_bog(orig):
        return [x for o, c in zip(orig.elems, conc.elems) for x in outside_bogs(o, c)]
    return [conc]


def machine_converters(orig: Type, conc: Type, to_machine: Callable, from_machine: Callable,
                       boxes) -> tuple[Callable, Callable]:
    """(run-time value of orig → compiled value of conc, and back), a BOG of orig crossing
    as a ``MachineBog``: its compiled value, unconverted (Note [BOGs across the boundary])."""
    if is_bog(orig):
        box = boxes.machine_box
        unbox, rebox = boxes.converter.convert(orig, True), boxes.converter.convert(orig, False)
        into, back = to_machine(conc), from_machine(conc) or (lambda x: x)

        def inward(v: Any) -> Any:
            if isinstance(v, box) and v.ctype == conc:
                return v.machine
            return into(unbox(v, None))  # made by another backend: converted

        def read(machine: Any) -> Any:
            return rebox(back(machine), None).value

        return inward, (lambda machine: box(machine, conc, read))
    if isinstance(orig, TTuple) and isinstance(conc, TTuple) and holds_bog(orig):
        parts = [machine_converters(o, c, to_machine, from_machine, boxes) for o, c in zip(orig.elems, conc.elems)]
        return (lambda v: tuple(p[0](x) for p, x in zip(parts, v)),
                lambda m: tuple(p[1](x) for p, x in zip(parts, m)))
    into, back = to_machine(conc), from_machine(conc) or (lambda x: x)
    if holds_bog(orig):  # a BOG inside a vector or a sum: the whole value converted
        unbox, rebox = boxes.converter.convert(orig, True), boxes.converter.convert(orig, False)
        return (lambda v: into(unbox(v, None))), (lambda m: rebox(back(m), None))
    return into, back
