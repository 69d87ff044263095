"""IR → Python with explicit loops, for ``numba.njit``: the code generator of
the ``compiled`` backend.

It reuses the statement emitter of :mod:`labrys.backends.pysource` (and its
Note [Generated names]); what differs is what a node may be and how calls
become code.  Representations: Float / Integer / Bool are machine scalars
(float64, int64, boolean), tuples are tuples, ``Tensor N Float`` is a
C-contiguous float64 array, String a Numba string; sums are tagged tuples
(:mod:`.numba_sums`), vectors of tuples structs of arrays (:mod:`.numba_soa`),
``rfold`` two loops (:mod:`.numba_rfold`); user functions may recurse (Note
[Compiled recursion]); a def that prints orchestrates (Note [Orchestration]
in compiled.py).  ``build`` is a preallocated array filled by a
loop, ``sumbuild`` and ``sum`` accumulate in a loop without allocating (a
Float accumulator is a scalar; a vector accumulator is added into in
place), ``fold`` is a loop over an accumulator.  A lambda may only appear as
the body of such a loop.  Anything else raises :class:`Unsupported` with the
construct and its position, and the def runs on the ``python`` backend.
"""
from __future__ import annotations

from ..context import Limits
from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import fresh_for, nodes
from ..ir.types import INTEGER, TTensor, TTuple, Type, has_function
from ..opt.anf import desugar_map
from ..opt.deforest import deforest, inline_leaves
from ..opt.elementwise import fuse_elementwise
from ..opt.fusion import fuse_loops
from ..types.checker import Signature, check_def
from ..types.primitives import Primitive
from .numba_bogs import BOG_TAPE, BogTapeMixin
from .numba_bounds import hoist_index_checks
from .numba_closures import ClosureMixin, ClosureTable
from .numba_delta1 import DELTA1_IO, Delta1Mixin
from .numba_dualrev import STAGED_PRIMITIVES, StagedMixin, staged_boundary
from .numba_eta import eta_loops
from .numba_fastmath import decorator_flags
from .numba_loops import LoopMixin
from .numba_parallel import ParallelMixin
from .numba_rfold import RFoldMixin
from .numba_scratch import ScratchMixin
from .numba_soa import SoaMixin
from .numba_sums import SumMixin
from .numba_tangents import SparseSum, TangentMixin, rebuild, units_only
from .numba_tape import TAPE_PRIMITIVES, TapeMixin, tape_boundary, tape_entry
from .numba_types import (
    MAX_NODES,
    MAX_STATEMENTS,
    Orchestration,
    Unsupported,
    array_rank,
    float_tensor,
    involves_soa,
    oversized,
    representable,
)
from .pysource import Emitter, Function, PyModuleSource

HEADER = '''import math as _math

import numpy as _np
from numba import njit as _njit

_nan = float("nan")
_inf = float("inf")
'''
DECORATOR = '@_njit(cache=_cache, error_model="numpy")'  # _cache and the helpers (numba_runtime): set by cache.py
LOOP_CALLS = ("build", "sumbuild", "ts_sumbuild", "fold", "rfold")  # lowered as loops, lambdas inline
BUILTINS_USED = {"float", "range", "abs", "AssertionError", "IndexError", "ValueError", "ZeroDivisionError"}
MAX_ROOM = 100_000  # Note [Compiled recursion]
def room() -> int:
    """Note [Compiled recursion]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    Self- and mutual recursion compile as Numba functions calling each other
    (Numba infers a recursive function's type from its non-recursive
    branches).  Every generated function takes the recursion budget
    ``_room`` last and passes ``_room - 1`` to the user functions it calls;
    a function on a cycle of calls (found when its generation reaches itself
    again) first checks ``_room > 0``.  The entry starts the budget at
    ``--max-depth`` (at most 100,000: native frames live on the deep-stack
    worker's 1 GiB stack, Note [Deep programs]); past it the call raises and
    re-runs on ``python`` (Note [Compiled fallback]), which reports
    ``recursion deeper than N`` exactly as the interpreter does, or finishes a
    legitimately deeper recursion.  A module with a cycle is compiled without
    Numba's disk cache: Numba's cached object code of a recursive function
    crashes when loaded (numba/numba#6061), so such modules are compiled anew
    in each process (small: recursive defs are scalar code)."""
    return min(Limits.max_depth, MAX_ROOM)


class NumbaModuleSource(PyModuleSource):
    """A def and every user function it calls (transitively), as one njit module."""

    def __init__(self, backend, tape: bool = False, bogs: bool = False) -> None:
        super().__init__(backend)
        self.tape = tape  # Note [The tape in generated code] (numba_tape.py)
        self.names: dict[int, tuple[str, int]] = {}  # id(signature) -> generated function, arity
        self.active: list[int] = []  # callees being generated, outermost first
        self.generated: dict[int, Function] = {}
        self.cyclic: set[str] = set()  # generated functions on a cycle of calls
        self.direct: dict[int, list[str]] = {}  # Note [Nested accumulation]
        self.parallel: set[str] = set()  # functions with a prange loop (Note [Parallel reverse sums])
        self.reassociated: set[str] = set()  # a parallel sum's chunks, compiled with FASTMATH (same Note)
        self.closures = ClosureTable(self, LoopEmitter)  # Note [Defunctionalisation]
        if bogs:  # a recursive function's BOG crosses: the heap's record lists come from Python
            self.closures.used = self.closures.crosses = True  # (Note [BOGs across the boundary], labrys.ad)

    def add_def(self, d: ir.Def) -> str:
        """The module's entry: a function of d's parameters that starts the recursion
        budget (Note [Compiled recursion]) and calls d's body."""
        tape_boundary(d)
        staged_boundary(d)  # Note [Staged versions in compiled code]
        sig = self.signature_of(d)
        if sig is not None:
            callee, n = self.user_function(sig, d.span)
        else:
            callee, n = self.generate_def(d, Function(self.fresh("fn"), [])), len(d.params)
        self.closures.close([p.type for p in d.params] + [d.ret])
        args = [f"_a{k}" for k in range(n)]
        entry = Function(self.fresh("fn"), args + (["_heap"] if self.closures.crosses else []))
        budget = f"_np.int64({room()})" if self.closures.used else str(room())  # Note [Closure tags are not literals]
        heap = [] if self.closures.crosses else [f"{self.closures.new_heap}()" if self.closures.used else "()"]
        call = f"{callee}({', '.join(entry.params + heap + [budget] + (['_tape'] if self.tape else []))})"
        if self.tape:  # Note [The tape as arrays]
            params = [(x, p.type) for x, p in zip(args, d.params)]
            entry.lines += [(line, None) for line in tape_entry(call, params)]
        else:
            entry.lines.append((f"    return {call}", None))
        self.functions.append(entry)
        return entry.name

    def signature_of(self, d: ir.Def) -> Signature | None:
        """The program's signature whose def is d (None: a def of its own, e.g. a test's),
        so that a recursive def is generated once, as its own callee."""
        arg = d.params[0].type if len(d.params) == 1 else TTuple(tuple(p.type for p in d.params))
        try:
            sig = self.hooks.functions.resolve(d.name, arg)
        except LabrysError:  # a name the program does not know
            return None
        if not isinstance(sig, Signature) or sig.ret != d.ret:
            return None
        return sig if self.hooks.definition(sig) is d else None  # not another def of the same name

    def generate_def(self, d: ir.Def, fn: Function) -> str:
        """d's body as the function ``fn`` of d's parameters and the recursion budget ``_room``."""
        # plain: no function values beyond a loop's body.  A closure is found across modules by
        # its lambda (key_of in .numba_closures), so a def with closures is not rewritten below.
        functional: dict = {}  # has_function's memo: linear in the def (Note [Type facts by identity])
        plain = not any(has_function(t, functional) for t in [p.type for p in d.params] + [d.ret])
        bodies: set[int] = set()  # a loop's (tuple n (lam …)): its lambda is the loop body, not a value
        for k, x in enumerate(nodes(d.body)):
            if isinstance(x, ir.Call) and x.func == "print":
                raise Orchestration("print", x.span)
            if k > MAX_NODES:
                raise Unsupported(f"a body of more than {MAX_NODES} nodes", d.span)
            if isinstance(x, ir.Call) and x.func in LOOP_CALLS and isinstance(x.arg, ir.Tuple):
                bodies.add(id(x.arg))
            if plain and not isinstance(x, ir.Lam) and x.type is not None and has_function(x.type, functional) \
                    and not (id(x) in bodies and all(isinstance(y, ir.Lam) or not has_function(y.type, functional)
                                                     for y in x.elems)):
                plain = False
        d = inline_leaves(d, self.leaf_callee) if plain else d
        d = fuse_loops(self.without_map(eta_loops(d)))  # Note [Fusing sum of build] in labrys.opt.fusion
        d = deforest(d) if plain else d  # Note [Deforesting small vectors] in labrys.opt.deforest
        d = fuse_elementwise(d, self.checked) if plain else d  # Note [Fusing elementwise chains]
        for p in d.params:
            if not representable(p.type):
                raise Unsupported(f"parameter {p.name} of type {p.type}", p.span or d.span)
        if not representable(d.ret):
            raise Unsupported(f"result of type {d.ret}", d.span)
        env: dict[str, str] = {}
        fn.params = [self.bind(env, p.name) for p in d.params] + self.hidden("_room")
        self.functions.append(fn)
        LoopEmitter(self, fn, env).tail(d.body)
        return fn.name

    def leaf_callee(self, call: ir.Call) -> ir.Def | None:
        """The def a call of a user function runs; None for a primitive or an edef."""
        try:
            target = self.hooks.functions.resolve(call.func, call.arg.type)
        except LabrysError:
            return None
        return self.hooks.definition(target) if isinstance(target, Signature) else None

    def checked(self, d: ir.Def) -> ir.Def:
        """d type-checked again, its BOGs concrete again: the checker types a call of a split
        pass by its signature, whose BOG is opaque (Note [Concrete BOGs] in labrys.ad.bog_types)."""
        return self.hooks.without_bogs(check_def(d, self.hooks.functions), d.span)

    def without_map(self, d: ir.Def) -> ir.Def:
        """(map f v) over a vector as the build it is, so its lambda becomes a loop body."""
        if not any(isinstance(x, ir.Call) and x.func in ("map", "map2") for x in nodes(d.body)):
            return d
        fresh = fresh_for(d)
        return self.checked(d.with_body(desugar_map(d.body, fresh)))

    def hidden(self, room: str) -> list[str]:
        """The hidden last arguments: the closures' heap (Note [Defunctionalisation]), the
        recursion budget, and the tape where the module uses one."""
        return ["_heap", room, "_tape"] if self.tape else ["_heap", room]

    def user_function(self, sig: Signature, span: Span | None) -> tuple[str, int]:
        """The generated function for a callee, and its number of parameters (without ``_room``)."""
        key = id(sig)
        if key in self.active:  # Note [Compiled recursion]
            for member in self.active[self.active.index(key):]:
                self.recursive(self.generated[member])
        if key not in self.names:
            d = self.definition(sig, span)
            fn = Function(self.fresh("fn"), [])
            self.names[key], self.generated[key] = (fn.name, len(d.params)), fn
            self.active.append(key)
            try:
                self.generate_def(d, fn)
            finally:
                self.active.pop()
        return self.names[key]

    def recursive(self, fn: Function) -> None:
        """fn is on a cycle of calls: it checks the recursion budget first."""
        if fn.name not in self.cyclic:
            self.cyclic.add(fn.name)
            fn.lines[:0] = [("    if _room <= 0:", None),
                            ('        raise ValueError("recursion deeper than the compiled budget")', None)]

    def definition(self, sig: Signature, span: Span | None) -> ir.Def:
        """The typed def a call runs: the program's, or the generated derived one."""
        d = self.hooks.definition(sig)
        if d is None:
            raise Unsupported(f"call of {show_name(sig.name)} (an edef)", span)
        too_big = oversized(d)  # before the walks of without_bogs (Note [Oversized defs go to python first])
        if too_big is not None:
            raise too_big
        return self.hooks.without_bogs(d, span)  # Note [Concrete BOGs] in labrys.ad.bog_types

    def resolve(self, func, arg: Type):
        """The function a call names; a ``[sufrevpass f]`` whose BOG argument was made
        concrete is found by its opaque type."""
        opaque = self.hooks.original_argument(func, arg)
        try:
            found = self.hooks.functions.resolve(func, arg)
        except LabrysError:
            if opaque is None:
                raise
            found = None
        return found if found is not None or opaque is None else self.hooks.functions.resolve(func, opaque)

    def text(self) -> str:
        size = sum(len(fn.lines) for fn in self.functions)
        if size > MAX_STATEMENTS:
            raise Unsupported(f"a body of {size} statements (more than {MAX_STATEMENTS})", None)
        out = [HEADER + ("from numba import prange as _prange\n" if self.parallel else ""), *self.closures.globals()]
        decorator = DECORATOR.replace("cache=_cache", "cache=False") if self.cyclic else DECORATOR
        for fn in self.functions:
            flags = decorator_flags(fn.name, self.parallel, self.reassociated)  # Note [Reassociation on one thread]
            out += ["", decorator[:-1] + flags, f"def {fn.name}({', '.join(fn.params)}):"]
            out += [line for line, _ in hoist_index_checks(fn.lines)]  # Note [Hoisted index checks]
        return "\n".join(out) + "\n"


class LoopEmitter(StagedMixin, ScratchMixin, BogTapeMixin, TapeMixin, Delta1Mixin, ClosureMixin, ParallelMixin,
                  TangentMixin, SumMixin, SoaMixin, RFoldMixin, LoopMixin, Emitter):
    """Statements for Numba: loops instead of higher-order primitives."""

    mod: NumbaModuleSource

    def scoped(self, depth: int) -> "LoopEmitter":
        return LoopEmitter(self.mod, self.fn, dict(self.env), depth)

    def outline(self, e: ir.Expr) -> str:
        """Note [Deep nesting in generated code], passing the recursion budget on."""
        names = sorted(self.mod.free_vars(e))
        fn = Function(self.mod.fresh("out"), [])
        env: dict[str, str] = {}
        fn.params = [self.mod.bind(env, n) for n in names] + self.mod.hidden("_room")
        self.mod.functions.append(fn)
        LoopEmitter(self.mod, fn, env).tail(e)
        t = self.mod.fresh()
        args = [self.atom(ir.Var(n)) for n in names]
        self.emit(f"{t} = {fn.name}({', '.join(args + self.mod.hidden('_room'))})")
        return t

    def atom(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Var) and isinstance(self.env.get(e.name), SparseSum):
            self.env[e.name] = self.materialise(self.env[e.name])
        if e.type is not None and not representable(e.type) and not isinstance(e, ir.Lam):
            raise Unsupported(f"a value of type {e.type}", e.span)
        return super().atom(e)

    def literal(self, value) -> str:
        if isinstance(value, str):  # a Numba unicode string
            return repr(value)
        if isinstance(value, float) and value != value:
            return "_nan"
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return "_inf" if value > 0 else "(-_inf)"
        if type(value) is int and not -2**31 <= value < 2**31:
            # CPython folds `9223372036854775807 * 2` to a big int before Numba sees it, which
            # Numba then types as uint64: a call is not folded, so the product wraps (docs/reference.md §5)
            return f"_np.int64({value})"
        return super().literal(value)

    def check(self, e: ir.Assert, cond: ir.Expr) -> None:
        self.emit(f"if not {self.atom(cond)}:")
        self.indented().emit('raise AssertionError("assertion failed")')

    def assign(self, t: str, e: ir.Expr) -> None:
        match e:
            case ir.Call(func, arg):
                self.call(t, e, func, arg)
            case ir.Tuple() | ir.Get() | ir.Assert():
                super().assign(t, e)
            case ir.Inj():
                self.inject(t, e, array_rank)
            case ir.Lam() | ir.FnRef():  # Note [Defunctionalisation]
                self.closure(t, e)
            case ir.App():
                self.apply(t, e)
            case _:
                raise Unsupported(_WHAT.get(type(e), type(e).__name__), e.span)

    # --- calls ----------------------------------------------------------------------

    def call(self, t: str, e: ir.Call, func, arg: ir.Expr) -> None:
        target = self.mod.resolve(func, arg.type)
        args = ir.call_args(e)
        if isinstance(target, Signature):
            callee, n = self.mod.user_function(target, e.span)
            parts = [self.atom(a) for a in args] if n > 1 and isinstance(arg, ir.Tuple) else None
            if parts is None:
                a = self.atom(arg)
                parts = [a] if n == 1 else [f"{a}[{k}]" for k in range(n)]
            self.emit(f"{t} = {callee}({', '.join(parts + self.mod.hidden('_room - 1'))})")
            return
        name = target.name
        if name == "print":
            raise Orchestration("print", e.span)
        if self.closure_vector(t, name, args, e):  # Note [Defunctionalisation]
            return
        if name == "rfold" and isinstance(args[0], ir.Lam) and isinstance(args[1], ir.Lam):
            return self.rfold(t, args, e)
        if self.staged_call(t, name, args, e):  # Note [Staged versions in compiled code]
            return
        if self.tape_call(t, name, args, e):  # Note [The tape in generated code]
            return
        if self.delta1_call(t, name, args, e):  # Note [deltarev1 compiled]
            return
        if self.bog_tape_call(t, name, args, e):  # Note [Recursive BOGs] in labrys.ad.bog_types
            return
        if name in ("ts_zero", "ts_add", "ts_scale", "ts_neg") and isinstance(e.type, TTuple) \
                and units_only(e.type) and all(units_only(a.type) for a in args):
            self.emit(f"{t} = {self.tangent_primitive(name, args, e.type)}")  # Note [Units in tangent tuples]
            return
        if (involves_soa(e.type) or any(involves_soa(a.type) for a in args)) and name not in MAKES_SOA:
            return self.soa_call(t, name, args, e)  # Note [Struct of arrays]
        if name in ("build", "sumbuild") and isinstance(args[1], ir.Lam):
            return self.loop(t, name, args[0], args[1], e)
        if name == "fold" and isinstance(args[0], ir.Lam):
            return self.fold(t, args[0], args[1], args[2])
        if name == "ifold" and isinstance(args[1], ir.Lam) and args[0].type == INTEGER:
            return self.ifold(t, args[0], args[1], args[2])
        if name == "ts_sumbuild" and isinstance(args[1], ir.Lam) and args[0].type == INTEGER:
            accs = self.ts_sumbuild(args[0], args[1], args[2])
            self.emit(f"{t} = {rebuild(e.type, accs)}")
            return
        value = self.sparse_value(e)
        if value is not None:
            self.emit(f"{t} = {self.materialise(value)}")
            return
        code = self.tangent_primitive(name, args, e.type)
        if code is not None:
            self.emit(f"{t} = {code}")
            return
        types = [a.type for a in args]
        xs = [self.atom(a) for a in args]
        if len(args) == 1 and isinstance(types[0], TTuple) and getattr(target.impl(types[0]), "spreads", False):
            # Note [Spread arguments] in opt/anf.py: a tuple variable holding the arguments
            xs, types = [f"{xs[0]}[{k}]" for k in range(len(types[0].elems))], list(types[0].elems)
        if name == "sum" and (float_tensor(types[0]) or types[0] == TTensor(1, INTEGER)) and types[0].rank == 1:
            return self.sum(t, xs[0], types[0].elem)
        code = _primitive(target, types, xs, e.type)
        if code is None and not isinstance(arg, ir.Tuple) and isinstance(arg.type, TTuple):
            # (f p) with p a tuple is (f (get$1 p) … (get$n p)), as a written tuple is spread
            code = _primitive(target, list(arg.type.elems), [f"{xs[0]}[{k}]" for k in range(len(arg.type.elems))],
                              e.type)
        if code is None:
            raise Unsupported(f"primitive {name} on {arg.type}", e.span)
        self.emit(f"{t} = {code}")


_WHAT = {ir.Lam: "lambda", ir.App: "call of a function value", ir.FnRef: "function reference (fn NAME)"}


# Note [Compiled primitives]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A primitive's code for Numba is a fact of its entry (``Primitive.numba``):
# given the argument atoms as Python source and their types, the expression
# to emit, or None where it has none (the def then runs on the python
# backend, with a note).  The loops (build, sumbuild, fold, sum) and the
# tangent operations are this generator's own rules (:meth:`LoopEmitter.call`,
# :mod:`.numba_tangents`) because they emit statements, not an expression.

# LoopEmitter.call's own rules:
LOOPS = {"build", "sumbuild", "fold", "ifold", "ts_sumbuild", "sum", "map", "map2", "rfold"}
# primitives whose ``numba`` code takes tuple arguments (others: None; SUF copies tuples):
TUPLE_ARGUMENTS = {"index", "dualZip", "dup", "elim"}
# primitives whose ``numba`` code lays out the structs of arrays it makes (Note [Struct of arrays]):
MAKES_SOA = {"dualZip"}
TANGENT_OPERATIONS = {"ts_add", "ts_scale", "ts_neg", "ts_zero", "ts_dot", "dot", "ts_delta", "deltaVec"}


def support(prim: Primitive) -> str:
    """How the compiled backend runs a call of ``prim``: "lowered" (its entry's Numba
    code), "loop" or "tangent" (this generator's own rules), or "python" (the def
    falls back to the python backend, with a note)."""
    if prim.numba is not None:
        return "lowered"
    if prim.name in LOOPS:
        return "loop"
    if any(prim.name in names for names in (TAPE_PRIMITIVES, BOG_TAPE, DELTA1_IO, STAGED_PRIMITIVES)):
        return "tape"
    return "tangent" if prim.name in TANGENT_OPERATIONS else "python"


def _primitive(prim: Primitive, types: list[Type], xs: list[str], result: Type) -> str | None:
    """Numba code for a primitive call on atoms ``xs`` of ``types``, or None."""
    if prim.numba is None or not all(representable(t) for t in types) or not representable(result):
        return None
    if prim.elementwise and isinstance(result, TTuple):  # arithmetic on tuples: leaf by leaf
        parts = []
        for k, elem in enumerate(result.elems):
            code = _primitive(prim, [t.elems[k] if isinstance(t, TTuple) else t for t in types],
                              [f"{x}[{k}]" if isinstance(t, TTuple) else x for t, x in zip(types, xs)], elem)
            if code is None:
                return None
            parts.append(f"({code})")
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if prim.name not in TUPLE_ARGUMENTS and any(isinstance(t, TTuple) for t in types):  # SUF copies tuples
        return None
    return prim.numba(xs, types, result)
