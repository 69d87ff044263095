"""The run-time side of split reverse mode: a BOG is an opaque box (Note [Opaque
BOGs] in :mod:`labrys.ad.bog`), packed and opened by two primitives."""
from __future__ import annotations

from ..errors import LabrysError
from ..ir.types import BOG, INTEGER, TBogOf, TLam, Type
from ..types.primitives import args_of, primitive, spread


def _one(result, arg) -> int:
    return 1


def _open_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and ab[0] == BOG and isinstance(ab[1], TLam) and ab[1].arg == ab[1].res:
        return ab[1].res
    return None


def _read_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and ab[0] == INTEGER and isinstance(ab[1], TLam) and ab[1].arg == ab[1].res:
        return ab[1].res
    return None


def _compiled_only(t: Type):
    def refuse(*_):
        raise LabrysError("bogPush/bogRead run on the compiled backend only (Note [Recursive BOGs] in "
                          "labrys.ad.bog_types)")
    return refuse


class Bog:
    """A BOG at run time: an opaque box, so keeping one costs one operation on the
    op meter, like the reference it is (Note [Opaque BOGs])."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<BOG>"


class MachineBog(Bog):
    """A BOG made by compiled code, kept in the compiled representation of its structure
    type ``ctype`` (a non-recursive function's: tuples, sums, structs of arrays): compiled
    code of the same structure takes it back as is, with no conversion either way (Note
    [BOGs across the boundary] in :mod:`.bog_boundary`); ``value``, what another
    backend reads, is converted on demand."""

    __slots__ = ("machine", "ctype", "reader", "_read")

    def __init__(self, machine, ctype: Type, reader) -> None:
        self.machine, self.ctype, self.reader = machine, ctype, reader
        self._read = None

    @property
    def value(self):
        if self._read is None:
            self._read = (self.reader(self.machine),)
        return self._read[0]


class TapedBog(Bog):
    """A recursive function's BOG made by compiled code and handed to Python: the index of
    its record in the tape (record lists) of the call that made it, which the box keeps
    alive (Note [BOGs across the boundary] in :mod:`.bog_boundary`).  ``value`` is the
    structure a :class:`Bog` of the other backends holds, read on demand, one level at a
    time (its inner BOGs are again ``TapedBog`` s)."""

    __slots__ = ("tape", "record", "index", "reader", "_read")

    def __init__(self, tape, record: Type, index: int, reader) -> None:
        self.tape, self.record, self.index, self.reader = tape, record, index, reader
        self._read = None

    @property
    def value(self):
        if self._read is None:
            self._read = (self.reader(self.tape.read(self.record, self.index), self.tape),)
        return self._read[0]


primitive("bogPack", lambda t: TBogOf(t), lambda t: Bog,
          "(bogPack b): a function's BOG behind the opaque type BOG (split reverse mode).", _one, nondiff=True)
primitive("bogOpen", _open_type, lambda t: spread(lambda b, w: b.value),
          "(bogOpen b (lam (w : B) w)): the BOG b as its structure type B (split reverse mode).", _one,
          nondiff=True)
# Note [Recursive BOGs] in .bog_types: a recursive function's BOG on the compiled backend is
# an index into a list of per-activation records; only the compiled backend makes these calls
primitive("bogPush", lambda t: INTEGER, _compiled_only,
          "(bogPush r): append the record r of a recursive function's BOG to its list; its index "
          "(split reverse mode, compiled backend).", _one, nondiff=True)
primitive("bogRead", _read_type, _compiled_only,
          "(bogRead k (lam (w : B) w)): the record at index k of the list of B records "
          "(split reverse mode, compiled backend).", _one, nondiff=True)
