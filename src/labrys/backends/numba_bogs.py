"""A recursive function's BOG on the ``compiled`` backend: records in the module's heap.

    Γ ⊢ (bogPush r) : Integer                 ↦  heap[h_R].append(r);  t = len(heap[h_R]) − 1
    Γ ⊢ (bogRead k (lam (w : R) w)) : R       ↦  t = heap[h_R][k]

where ``h_R`` is the heap's list of records of type R (one per record type,
made on first use).  Why a recursive function's BOG is an index into such a
list, and which defs get these calls: Note [Recursive BOGs] in
labrys.ad.bog_types (this module only compiles the two calls, by name: the
backends never import ``labrys.ad``).  The heap is the closures' one (Note
[Defunctionalisation] in :mod:`.numba_closures`): a tuple of typed lists that
every generated function receives as ``_heap`` and that the entry makes
fresh for each call from Python.
"""
from __future__ import annotations

from ..ir import nodes as ir

BOG_TAPE = ("bogPush", "bogRead")


class BogTapeMixin:
    """The two record calls of the Numba emitter."""

    def bog_tape_call(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> bool:
        if name not in BOG_TAPE:
            return False
        if name == "bogPush":
            h = self.mod.closures.records_of(e.arg.type)  # the record, whole (not spread as arguments)
            self.emit(f"_heap[{h}].append({self.atom(e.arg)})")
            self.emit(f"{t} = len(_heap[{h}]) - 1")
        else:
            h = self.mod.closures.records_of(e.type)
            self.emit(f"{t} = _heap[{h}][{self.atom(args[0])}]")
        return True
