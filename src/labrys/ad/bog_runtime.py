"""The run-time side of split reverse mode: a BOG is an opaque box (Note [Opaque
BOGs] in :mod:`labrys.ad.bog`), packed and opened by two primitives."""
from __future__ import annotations

from ..ir.types import BOG, TBogOf, TLam, Type
from ..types.primitives import args_of, primitive, spread


def _one(result, arg) -> int:
    return 1


def _open_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and ab[0] == BOG and isinstance(ab[1], TLam) and ab[1].arg == ab[1].res:
        return ab[1].res
    return None


class Bog:
    """A BOG at run time: an opaque box, so keeping one costs one operation on the
    op meter, like the reference it is (Note [Opaque BOGs])."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<BOG>"


primitive("bogPack", lambda t: TBogOf(t), lambda t: Bog,
          "(bogPack b): a function's BOG behind the opaque type BOG (split reverse mode).", _one, nondiff=True)
primitive("bogOpen", _open_type, lambda t: spread(lambda b, w: b.value),
          "(bogOpen b (lam (w : B) w)): the BOG b as its structure type B (split reverse mode).", _one,
          nondiff=True)
