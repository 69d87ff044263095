"""What is behind a BOG, for the compiled backend: a def of split reverse mode
with every opaque ``BOG`` replaced by its structure type, where that structure
is finite (the program does not recurse through it).

    Γ ⊢ e : τ[BOG_f]   ↦   Γ ⊢ e' : τ[C(f)]      (bogPack b ↦ b,  bogOpen b w ↦ b)

    C(BOG of structure B)      = C(B)
    C(BOG of [suffwdpass f])   = C(B_f),  B_f the BOG structure of f's forward pass
                                 (undefined when computing it reaches f again: recursion)

Note [Concrete BOGs]
~~~~~~~~~~~~~~~~~~~~
The split derivations (:mod:`.bog`) give every BOG the opaque type ``BOG``
(Note [Opaque BOGs]): the type the user sees, and the only one a recursive
function's BOG can have.  Each ``BOG`` they make is a :class:`TBogOf`, which
*is* ``BOG`` to the checker and every pass (equal, same hash, printed
``BOG``) but remembers what is behind it: the structure a ``bogPack`` packs
(a loop's per-iteration BOG, a function's own BOG in its two passes), or, in
the signatures of ``[suffwdpass f]``/``[sufrevpass f]``, f and its argument
type, whose forward pass says its structure.  For a non-recursive f the
structure is a finite type of nested tuples, sums (``if``) and vectors
(loops); :func:`concrete_def` rewrites a def with those types in place of
``BOG`` and the pack/open primitives gone, which the compiled backend
compiles like any def: tuples stay tuples, a sum a tagged tuple, and a
loop's vector of (result, BOG) pairs a struct of arrays — one array per
component of the per-step BOG, n elements each (Note [Struct of arrays]).
A recursive f's BOG holds its own BOG, a type of unbounded size: such defs
(and their callers) are refused with the reason, and run on ``python``.

At the boundary (a BOG returned to Python, or passed back in) the value is
the same opaque :class:`.bog_runtime.Bog` box every backend uses: the compiled
representation is boxed on the way out and unboxed on the way in
(:meth:`Concretiser.unboxer`, :meth:`Concretiser.reboxer`), so a BOG made on
one backend can be read on another.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, show_name
from ..ir.traverse import map_bottom_up, nodes
from ..ir.types import BOG, TBase, TBogOf, TLam, TSum, TTensor, TTuple, Type
from ..types.checker import Signature
from ..values import Inj, dense, make_vec
from .bog_calls import pass_name
from .bog_runtime import Bog

PACKING = ("bogPack", "bogOpen")


class NotConcrete(Exception):
    """The BOG has no finite structure (or it is not known): the reason."""


@dataclass
class ConcreteDef:
    """A def with its BOGs concrete, and how its parameters and result cross the boundary."""

    d: ir.Def
    unbox: list        # per parameter: Python value (Bog boxes) -> value of the concrete type, or None
    rebox: Callable | None  # result of the concrete type -> Python value with Bog boxes, or None


def mentions_bog(t: Type) -> bool:
    match t:
        case TBase(name):
            return name == "BOG"
        case TTuple(elems):
            return any(mentions_bog(e) for e in elems)
        case TTensor(_, elem):
            return mentions_bog(elem)
        case TSum(a, b):
            return mentions_bog(a) or mentions_bog(b)
        case TLam(a, b):
            return mentions_bog(a) or mentions_bog(b)
    return False


def def_mentions_bog(d: ir.Def) -> bool:
    if mentions_bog(d.ret) or any(mentions_bog(p.type) for p in d.params):
        return True
    return any((isinstance(x, ir.Call) and x.func in PACKING) or (x.type is not None and mentions_bog(x.type))
               for x in nodes(d.body))


class Concretiser:
    """C(·) of the module docstring, over one program's functions (memoised per instance)."""

    def __init__(self, linker) -> None:
        self.linker = linker
        self.functions = linker.functions
        self.memo: dict = {}       # ("fn", f, S) -> C(B_f)
        self.active: list = []     # fn keys being expanded: meeting one again is recursion
        self.types: dict[int, tuple[Type, Type]] = {}  # id(t) -> (t, C(t))

    # --- types ------------------------------------------------------------------------
    def expand(self, t: TBogOf) -> Type:
        """One level: the structure behind a tagged BOG (its inner BOGs still tagged)."""
        if isinstance(t.of, Type):
            return t.of
        return self.forward_def(t.of).ret.elems[1]

    def forward_def(self, key) -> ir.Def:
        _, base, s = key
        name = DerivedName("suffwdpass", pass_name(base, s, self.functions))
        try:
            sig = self.functions.resolve(name, s)
        except LabrysError:
            sig = None
        if not isinstance(sig, Signature):
            raise NotConcrete(f"the BOG of {show_name(base)} (no [suffwdpass {show_name(base)}] found)")
        d = self.linker.definition(sig)
        if d is None or not isinstance(d.ret, TTuple) or len(d.ret.elems) != 2:
            raise NotConcrete(f"the BOG of {show_name(base)} (its forward pass is an edef)")
        return d

    def type(self, t: Type) -> Type:
        known = self.types.get(id(t))
        if known is not None and known[0] is t:
            return known[1]
        out = self._type(t)
        self.types[id(t)] = (t, out)
        return out

    def _type(self, t: Type) -> Type:
        match t:
            case TBogOf():
                if isinstance(t.of, Type):
                    return self.type(t.of)
                return self.function(t.of)
            case TBase("BOG"):
                raise NotConcrete("a BOG whose structure is not known (a hand-written pass of type BOG)")
            case TTuple(elems):
                return TTuple(tuple(self.type(e) for e in elems))
            case TTensor(rank, elem):
                return TTensor(rank, self.type(elem))
            case TSum(a, b):
                return TSum(self.type(a), self.type(b))
            case TLam(a, b):
                return TLam(self.type(a), self.type(b))
        return t

    def function(self, key) -> Type:
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            names = [show_name(k[1]) for k in self.active[self.active.index(key):]]
            raise NotConcrete(f"the BOG of {names[0]} holds "
                              + ("its own BOG" if len(names) == 1 else "the BOG of " + " → ".join(names[1:]))
                              + " (recursion: a BOG of unbounded size)")
        self.active.append(key)
        try:
            out = self.type(self.forward_def(key).ret.elems[1])
        finally:
            self.active.pop()
        self.memo[key] = out
        return out

    # --- defs -------------------------------------------------------------------------
    def node(self, x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Call) and x.func in PACKING:
            return x.arg.elems[0] if x.func == "bogOpen" else x.arg
        changes: dict[str, Any] = {}
        if x.type is not None and mentions_bog(x.type):
            changes["type"] = self.type(x.type)
        if isinstance(x, ir.Lam) and mentions_bog(x.var_type):
            changes["var_type"] = self.type(x.var_type)
        if isinstance(x, ir.Inj) and mentions_bog(x.sum_type):
            changes["sum_type"] = self.type(x.sum_type)
        return dataclasses.replace(x, **changes) if changes else x

    def define(self, d: ir.Def) -> ConcreteDef:
        params = tuple(dataclasses.replace(p, type=self.type(p.type)) if mentions_bog(p.type) else p
                       for p in d.params)
        body = map_bottom_up(d.body, self.node)
        out = ir.Def(d.name, self.type(d.ret), params, body, span=d.span)
        return ConcreteDef(out, [self.unboxer(p.type) for p in d.params], self.reboxer(d.ret))

    # --- the boundary -----------------------------------------------------------------
    def unboxer(self, t: Type) -> Callable | None:
        """Python value of the tagged type t (BOGs boxed) -> the value of C(t)."""
        return self._convert(t, unbox=True)

    def reboxer(self, t: Type) -> Callable | None:
        """Value of C(t) -> the Python value of t, each BOG in a :class:`Bog` box."""
        return self._convert(t, unbox=False)

    def _convert(self, t: Type, unbox: bool) -> Callable | None:
        match t:
            case TBogOf():
                inner = self._convert(self.expand(t), unbox)
                if unbox:
                    return (lambda v: v.value) if inner is None else (lambda v: inner(v.value))
                return Bog if inner is None else (lambda v: Bog(inner(v)))
            case TTuple(elems):
                parts = [self._convert(e, unbox) for e in elems]
                if all(p is None for p in parts):
                    return None
                return lambda v: tuple(x if p is None else p(x) for p, x in zip(parts, v))
            case TTensor(_, elem):
                f = self._convert(elem, unbox)
                if f is None:
                    return None
                target = self.type(elem) if unbox else elem

                def each(v):
                    arr = dense(v)
                    return make_vec(target, [f(x) for x in arr.flat], arr.shape)
                return each
            case TSum(a, b):
                fa, fb = self._convert(a, unbox), self._convert(b, unbox)
                if fa is None and fb is None:
                    return None
                ident = (lambda x: x)
                fa, fb = fa or ident, fb or ident
                return lambda v: Inj(v.left, (fa if v.left else fb)(v.value))
        return None


def concrete_def(d: ir.Def, linker) -> ConcreteDef | str | None:
    """d with its BOGs concrete (Note [Concrete BOGs]); None if d has no BOG; the
    reason as a string if a BOG in it has no finite structure."""
    if not def_mentions_bog(d):
        return None
    try:
        return Concretiser(linker).define(d)
    except NotConcrete as why:
        return str(why)


def original_argument(func, arg: Type) -> Type | None:
    """The argument type a call of ``func`` had before :func:`concrete_def`: a
    ``[sufrevpass f]`` takes ``(dT, BOG)`` (None: unchanged)."""
    if isinstance(func, DerivedName) and func.derivation == "sufrevpass" and isinstance(arg, TTuple) \
            and len(arg.elems) == 2:
        return TTuple((arg.elems[0], BOG))
    return None
