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
A recursive f's BOG holds its own BOG, a type of unbounded size: Note
[Recursive BOGs].

At the boundary (a BOG returned to Python, or passed back in) the value is
an opaque :class:`.bog_runtime.Bog` box, as on every backend: a
``MachineBog`` holding the compiled value, or a ``TapedBog`` for a recursive
function's (Note [BOGs across the boundary] in :mod:`.bog_boundary`, whose
:class:`.bog_boundary.BogConverter` converts a BOG made by another backend).

Note [Recursive BOGs]
~~~~~~~~~~~~~~~~~~~~~
A recursive f's BOG holds its callee's BOG, which holds its callee's, and so
on: in Numba's types (no recursive tuples) it needs an indirection.  Two were
possible: a stack (the forward pass pushes each activation's BOG, the reverse
pass pops them) or a tape (the forward pass appends each activation's record
to a list, the BOG is the record's index, the reverse pass reads it back).
The stack fits split mode's order only when every BOG is consumed LIFO, which
is true of ``[sufrev f]`` but not of what a program may do with
``[suffwdpass f]``'s results (keep two BOGs, run the reverse of the first one
first, run one reverse pass twice); the tape needs no such argument and
matches the BOG's meaning, a reference to what the reverse pass reads.  So a
*taped* function — one whose BOG structure reaches its own BOG again through
callees' BOGs (self or mutual recursion; :meth:`Concretiser.taped`) — has
the concrete BOG ``Integer``: ``bogPack`` of its record becomes ``(bogPush
r)`` (append, return the index) and ``bogOpen`` becomes ``(bogRead k (lam (w
: R) w))``, R its record type, whose inner BOGs of taped functions are again
indices.  The records live in the compiled module's heap — the typed lists
that already hold closures' environments (Note [Defunctionalisation] in
labrys.backends.numba_closures): one list per record type, fresh for each
call from Python, so a depth-n recursion keeps n records (a non-taped
function's BOG is unchanged: a finite structure, no list).  Reading is O(1);
a record is never mutated, so reading one twice is fine.  A taped BOG that
leaves the call — ``[suffwdpass f]`` called from Python — takes the call's
lists with it, and ``[sufrevpass f]`` reads them in place (Note [BOGs across
the boundary] in :mod:`.bog_boundary`, which says how long they live); a BOG
that stays inside the call (``[sufrev f]``, the default gradient) is freed
when the call returns.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, erase_types, show_name
from ..ir.traverse import map_bottom_up, nodes
from ..ir.types import BOG, INTEGER, TBase, TBogOf, TLam, TSum, TTensor, TTuple, Type, any_part
from ..types.checker import Signature
from .bog_boundary import BogConverter
from .bog_calls import pass_name
from .bog_runtime import MachineBog

PACKING = ("bogPack", "bogOpen")


class NotConcrete(Exception):
    """The BOG has no finite structure (or it is not known): the reason."""


@dataclass
class ConcreteDef:
    """A def with its BOGs concrete, and how its parameters and result cross the boundary."""

    d: ir.Def
    unbox: list        # per parameter: Python value (Bog boxes) -> value of the concrete type, or None
    rebox: Callable | None  # result of the concrete type -> Python value with Bog boxes, or None
    taped: bool = False  # a taped BOG crosses: unbox/rebox take (value, tape) (Note [BOGs across the boundary])
    returns_tape: bool = False  # the result holds a taped BOG (the call's tape outlives it)
    converter: Any = None  # the BogConverter: converters of any tagged type, (value, tape) -> value
    machine_box: Any = MachineBog  # a BOG kept in its compiled representation (not taped)


def _is_bog(t: Type) -> bool:
    return isinstance(t, TBase) and t.name == "BOG"


def mentions_bog(t: Type, memo: dict[int, tuple[Type, bool]] | None = None) -> bool:
    """``BOG`` occurs in t; with a ``memo`` shared by the node types of a def, linear
    in the def (Note [Type facts by identity] in labrys.ir.types)."""
    return any_part(t, _is_bog, memo)


def def_mentions_bog(d: ir.Def) -> bool:
    memo: dict[int, tuple[Type, bool]] = {}
    if mentions_bog(d.ret, memo) or any(mentions_bog(p.type, memo) for p in d.params):
        return True
    return any((isinstance(x, ir.Call) and x.func in PACKING) or (x.type is not None and mentions_bog(x.type, memo))
               for x in nodes(d.body))


class Concretiser:
    """C(·) of the module docstring, over one program's functions (memoised per instance)."""

    def __init__(self, linker) -> None:
        self.linker = linker
        self.functions = linker.functions
        self.memo: dict = {}       # ("fn", f, S) -> C(B_f)
        self.active: list = []     # fn keys being expanded: meeting one again is recursion
        self.types: dict[int, tuple[Type, Type]] = {}  # id(t) -> (t, C(t))
        self.tapes: dict = {}      # fn key -> whether its BOG is taped (Note [Recursive BOGs])
        self.own: Type | None = None  # the record type of the taped function whose pass is being rewritten
        self.hit = False           # a taped BOG was met (set while converting parameters and result)
        self.mentions: dict[int, tuple[Type, bool]] = {}  # mentions_bog's memo (Note [Type facts by identity])

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
                    inner = self.type(t.of)
                    if self.own is not None and inner == self.own:  # Note [Recursive BOGs]
                        self.hit = True
                        return INTEGER
                    return inner
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
        if self.taped(key):  # Note [Recursive BOGs]: an index into its list of records
            self.hit = True
            return INTEGER
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

    # --- recursion (Note [Recursive BOGs]) --------------------------------------------
    @staticmethod
    def keys_in(t: Type) -> list:
        """The functions whose BOGs the structure t holds directly (a loop's or a branch's
        BOG included, not the callees' own)."""
        found, stack = [], [t]
        while stack:
            x = stack.pop()
            if isinstance(x, TBogOf):
                if isinstance(x.of, Type):
                    stack.append(x.of)
                else:
                    found.append(x.of)
            elif isinstance(x, TTuple):
                stack.extend(x.elems)
            elif isinstance(x, TSum):
                stack += [x.left, x.right]
            elif isinstance(x, TTensor):
                stack.append(x.elem)
            elif isinstance(x, TLam):
                stack += [x.arg, x.res]
        return found

    def taped(self, key) -> bool:
        """Whether f's BOG holds, through its callees' BOGs, f's own BOG again."""
        if key not in self.tapes:
            seen: set = set()
            stack = list(self.keys_in(self.expand(TBogOf(key))))
            while stack and key not in seen:
                k = stack.pop()
                if k not in seen:
                    seen.add(k)
                    stack.extend(self.keys_in(self.expand(TBogOf(k))))
            self.tapes[key] = key in seen
        return self.tapes[key]

    def own_record(self, d: ir.Def) -> Type | None:
        """The record type R of the taped function whose split pass d is (None: d is not one)."""
        name = d.name
        if not (isinstance(name, DerivedName) and name.derivation in ("suffwdpass", "sufrevpass")):
            return None
        forward = name.derivation == "suffwdpass"
        tag = (d.ret.elems[1] if isinstance(d.ret, TTuple) and len(d.ret.elems) == 2 else None) if forward \
            else (d.params[1].type if len(d.params) == 2 else None)
        if not isinstance(tag, TBogOf) or not isinstance(tag.of, Type):
            return None
        base = erase_types(name.base)
        for key in self.keys_reachable(tag.of):
            if key[1] != base or (forward and key[2] != d.params[0].type) or not self.taped(key):
                continue
            behind = self.expand(TBogOf(key))
            if (behind.of if isinstance(behind, TBogOf) else behind) == tag.of:
                return self.type(tag.of)
        return None

    def keys_reachable(self, t: Type) -> list:
        seen, order, stack = set(), [], list(self.keys_in(t))
        while stack:
            k = stack.pop()
            if k not in seen:
                seen.add(k)
                order.append(k)
                stack.extend(self.keys_in(self.expand(TBogOf(k))))
        return order

    # --- defs -------------------------------------------------------------------------
    def node(self, x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Call) and x.func in PACKING and self.own is not None:
            taped = self.tape_call(x)
            if taped is not None:
                return taped
        if isinstance(x, ir.Call) and x.func in PACKING:
            return x.arg.elems[0] if x.func == "bogOpen" else x.arg
        changes: dict[str, Any] = {}
        if x.type is not None and mentions_bog(x.type, self.mentions):
            changes["type"] = self.type(x.type)
        if isinstance(x, ir.Lam) and mentions_bog(x.var_type, self.mentions):
            changes["var_type"] = self.type(x.var_type)
        if isinstance(x, ir.Inj) and mentions_bog(x.sum_type, self.mentions):
            changes["sum_type"] = self.type(x.sum_type)
        return dataclasses.replace(x, **changes) if changes else x

    def tape_call(self, x: ir.Call) -> ir.Expr | None:
        """A pack or open of the own record: ``bogPush``/``bogRead`` (Note [Recursive BOGs])."""
        if x.func == "bogPack":
            if x.arg.type != self.own:
                return None
            return ir.Call("bogPush", x.arg, type=INTEGER, span=x.span)
        bog, witness = x.arg.elems
        if self.type(x.type) != self.own:
            return None
        lam = ir.Lam(witness.var, self.own, ir.Var(witness.var, type=self.own), type=TLam(self.own, self.own))
        return ir.Call("bogRead", ir.Tuple((bog, lam), type=TTuple((INTEGER, lam.type))), type=self.own,
                       span=x.span)

    def define(self, d: ir.Def) -> ConcreteDef:
        self.own = self.own_record(d)
        self.hit = False
        params = tuple(dataclasses.replace(p, type=self.type(p.type)) if mentions_bog(p.type) else p
                       for p in d.params)
        takes, self.hit = self.hit, False
        ret = self.type(d.ret)
        out = ir.Def(d.name, ret, params, map_bottom_up(d.body, self.node), span=d.span)
        boundary = BogConverter(self)  # Note [BOGs across the boundary] in .bog_boundary
        unbox = [boundary.convert(p.type, True) for p in d.params]
        rebox = boundary.convert(d.ret, False)
        if takes or self.hit:  # a taped BOG crosses: the converters need the call's tape
            return ConcreteDef(out, unbox, rebox, taped=True, returns_tape=self.hit, converter=boundary)
        return ConcreteDef(out, [None if u is None else (lambda v, u=u: u(v, None)) for u in unbox],
                           None if rebox is None else (lambda v: rebox(v, None)), converter=boundary)


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
