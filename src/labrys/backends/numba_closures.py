"""Closures on the ``compiled`` backend: lambda lifting and defunctionalisation.

    Γ ⊢ (lam (x : S) e) : Lam S T   ↦  (tag, slot)  with  heap[h][slot] = (v1 … vk),
                                        {v1 … vk} = fv(e) \\ {x}, lifted:  λ_tag(v1 … vk, x) = ⟦e⟧
    Γ ⊢ (fn f) : Lam S T             ↦  (tag, 0)     (an empty environment; λ_tag calls f)
    Γ ⊢ (f a) : T,  f : Lam S T      ↦  apply_{Lam S T}(⟦f⟧, ⟦a⟧)   (dispatch on the tag)

Note [Defunctionalisation]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Numba has no closures of its own that can be stored, returned or compared
across functions, so every value of a function type ``Lam S T`` becomes data.
Each lambda (and each ``(fn f)``) whose value may reach a ``Lam S T`` in the
module is one *candidate* of that type, with a tag (its index among the
type's candidates).  Its body is *lifted* into a top-level generated function
of its captured variables (sorted by name), its parameter, and the two hidden
parameters every generated function has (``_heap``, ``_room``).  An
application of a function value calls ``apply_<type>``, which branches on the
tag and calls the lifted function with the environment.

The environment does not live in the value: closures capture closures of
their own type (``compose``, a central difference ``deriv``, every
backpropagator of dual-numbers reverse mode), so a value holding its
environment would need a recursive type, which Numba's tuples cannot be.
Instead every value of every function type is the pair ``(tag, slot)`` of
int64, and the environments live in a *heap*: typed lists of tuples of the
captured values (closures inside them are again pairs), one list per type of
environment, shared by the candidates that capture values of that type (the
tag says whose a slot is).  Making a closure appends its environment and takes
the index; applying it reads it back.  Values are immutable, so the heap only
grows, and it lives as long as one call from Python: the entry is
given a fresh heap (:mod:`labrys.backends.closure_boundary`), and a closure
returned to Python keeps the heap it points into.  A lambda that captures
nothing, and ``(fn f)``, need no slot (``(tag, 0)``).

Which lambdas are candidates: every lambda the module's code makes (found
while generating, including those of derived code such as backpropagators),
and, for each function type that can enter the module from Python (one in a
parameter or the result of the entry, or captured by such a lambda), every
lambda and ``(fn f)`` of that type in the program (Python code — a printing
``main``, Note [Orchestration] — makes closures that the compiled code must
then run; the python backend marks each closure it makes with its lambda and
captured values, ``_ks``).  A candidate from the program that cannot itself
be compiled is left out; a value of it arriving from Python makes that one
call run on ``python`` (as a ragged vector does).  ``apply`` is on a cycle of
calls as soon as one lifted lambda applies a function of its own type (found
in the generated calls); such a module is compiled without Numba's disk cache
(Note [Compiled recursion]), others are cached.  Every ``apply`` checks the
recursion budget.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir import nodes as ir
from ..ir.traverse import children
from ..ir.types import INTEGER, TLam, TSum, TTensor, TTuple, Type
from ..types.checker import Signature
from ..types.primitives import PRIMITIVES
from .numba_types import Orchestration, Unsupported, closure_vec
from .pysource import Function

_CALL = re.compile(r"\b(_[a-z]+\d+)\(")
NOT_A_CLOSURE = "(_np.int64(-1), _np.int64(0))"  # the placeholder of a function type: a tag no candidate has

# Note [Closure tags are not literals]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Numba types ``(0, n)`` as a tuple of a *literal* 0 and an int64, and an
# argument ``100000`` as a literal: a call of ``apply`` with such a value does
# not match the frame of ``apply`` being typed (whose closures come from the
# heap, plain int64 pairs), so the recursion through ``apply`` is compiled
# again for the new types until Numba gives up ("runaway recursion").  Tags,
# slots and the entry's recursion budget are therefore ``_np.int64(...)``.
LOOP_PRIMITIVES = {"build", "sumbuild", "fold", "map", "map2", "rfold", "ts_sumbuild", "ifold"}


def captured(lam: ir.Lam) -> tuple[tuple[str, Type], ...]:
    """The free variables of a lambda with their types, sorted by name (iterative:
    lambdas of 10^4 nested lets)."""
    found: dict[str, Type] = {}
    bound: dict[str, int] = {lam.var: 1}
    stack: list[tuple[str, Any]] = [("visit", lam.body)]
    while stack:
        what, x = stack.pop()
        if what == "enter" or what == "leave":
            for n in x:
                bound[n] = bound.get(n, 0) + (1 if what == "enter" else -1)
            continue
        if isinstance(x, ir.Var) and not bound.get(x.name) and x.name not in found:
            found[x.name] = x.type
        for c, names in reversed(children(x)):
            if names:
                stack += [("leave", names), ("visit", c), ("enter", names)]
            else:
                stack.append(("visit", c))
    return tuple(sorted(found.items()))


def lam_types(t: Type, acc: set[TLam] | None = None) -> set[TLam]:
    """Every function type occurring in t."""
    acc = set() if acc is None else acc
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TLam):
            if x not in acc:
                acc.add(x)
                stack += [x.arg, x.res]
        elif isinstance(x, TTuple):
            stack += list(x.elems)
        elif isinstance(x, TSum):
            stack += [x.left, x.right]
        elif isinstance(x, TTensor):
            stack.append(x.elem)
    return acc


def key_of(node: ir.Lam | ir.FnRef) -> tuple:
    """What identifies a candidate across modules: the lambda (structurally) and the
    types of what it captures, or the function a (fn f) names."""
    if isinstance(node, ir.FnRef):
        return ("fn", node.func)
    return ("lam", node, tuple(t for _, t in captured(node)))


@dataclass
class Candidate:
    tag: int
    ltype: TLam
    node: ir.Lam | ir.FnRef | None  # None: a run-time closure (Note [Run-time closures])
    env: tuple[tuple[str, Type], ...]
    heap: int | None  # which list of the heap holds its environments (None: captures nothing)
    call: Callable[[str, str], str] = field(repr=False, default=None)  # (x, env) -> the lifted call
    applies: bool = False  # a run-time closure whose call applies a function value


class ClosureTable:
    """The candidates of one generated module, per function type (Note [Defunctionalisation])."""

    def __init__(self, mod, emitter: Callable) -> None:
        self.mod, self.emitter = mod, emitter
        self.by_type: dict[TLam, list[Candidate]] = {}
        self.by_key: dict[tuple, Candidate] = {}
        self.heap: list[TTuple] = []  # the environment type of each list of the heap
        self.applies: dict[TLam, str] = {}
        self.callers: dict[TLam, str] = {}  # entries applying a closure from Python
        self.external: set[TLam] = set()
        self.crosses = False  # functions in the entry's parameters or result: the heap comes from Python
        self.new_heap = ""  # the generated function making an empty heap
        self._env_types: set[TLam] = set()  # function types captured by candidates
        self.used = False
        self.records: dict[Type, int] = {}  # a recursive function's BOG records: their list (.numba_bogs)
        self._env_lists: dict[TTuple, int] = {}  # captured values' type -> its list of the heap

    def records_of(self, t: Type) -> int:
        """The heap's list of BOG records of type t (Note [Recursive BOGs] in labrys.ad.bog_types)."""
        self.used = True
        if t not in self.records:
            self.records[t] = len(self.heap)
            self.heap.append(t)
        return self.records[t]

    def env_list(self, t: TTuple) -> int:
        """The heap's list of environments of type t, shared by every candidate whose captured
        values have that type: a slot is unique within its list and the tag says which
        candidate's it is, and the heap's type (which every generated function takes, and
        Numba types again in each) has one list per environment type, not one per lambda."""
        if t not in self._env_lists:
            self._env_lists[t] = len(self.heap)
            self.heap.append(t)
        return self._env_lists[t]

    # --- candidates ---------------------------------------------------------------

    def apply_of(self, t: TLam) -> str:
        self.used = True
        if t not in self.applies:
            self.applies[t] = self.mod.fresh("apply")
            self.by_type.setdefault(t, [])
        return self.applies[t]

    def candidate(self, node: ir.Lam | ir.FnRef) -> Candidate:
        """The candidate of a lambda or (fn f), its lifted function generated on first use."""
        key = key_of(node)
        if key in self.by_key:
            return self.by_key[key]
        self.used = True
        t = node.type
        self.apply_of(t)
        if isinstance(node, ir.FnRef):
            return self._function(key, node, t)
        env = captured(node)
        heap = self.env_list(TTuple(tuple(ty for _, ty in env))) if env else None
        fn = Function(self.mod.fresh("lam"), [])
        scope: dict[str, str] = {}
        fn.params = [self.mod.bind(scope, n) for n, _ in env] + [self.mod.bind(scope, node.var)]
        fn.params += self.mod.hidden("_room")
        cand = Candidate(len(self.by_type[t]), t, node, env, heap)
        k = len(env)
        hidden = ", ".join(self.mod.hidden("_room - 1"))
        cand.call = lambda x, e: f"{fn.name}({''.join(f'{e}[{i}], ' for i in range(k))}{x}, {hidden})"
        self.by_key[key] = cand
        self.by_type[t].append(cand)
        for ty in [ty for _, ty in env]:
            lam_types(ty, self._env_types)
        self.emitter(self.mod, fn, scope).tail(node.body)
        self.mod.functions.append(fn)
        return cand

    def _function(self, key: tuple, node: ir.FnRef, t: TLam) -> Candidate:
        sig = self.mod.hooks.functions.by_name(node.func)
        if not isinstance(sig, Signature):
            raise Unsupported(f"(fn {node.func}) of a primitive", node.span)
        callee, n = self.mod.user_function(sig, node.span)
        cand = Candidate(len(self.by_type[t]), t, node, (), None)
        spread = "" if n == 0 else "_x, " if n == 1 else "".join(f"_x[{i}], " for i in range(n))
        hidden = ", ".join(self.mod.hidden("_room - 1"))
        cand.call = lambda x, e: f"{callee}({spread.replace('_x', x)}{hidden})"
        self.by_key[key] = cand
        self.by_type[t].append(cand)
        return cand

    # --- the closed world -----------------------------------------------------------

    def close(self, entry_types: list[Type]) -> None:
        """Add the program's candidates of every function type that can come from
        Python, then generate the ``apply`` functions (Note [Defunctionalisation])."""
        self._env_types = set()
        todo = set()
        for t in entry_types:
            lam_types(t, todo)
        if todo:
            self.used = self.crosses = True
        program = program_candidates(self.mod.hooks)
        while todo:
            t = todo.pop()
            self.external.add(t)
            self.apply_of(t)
            for node in program.get(t, ()):
                if key_of(node) in self.by_key:
                    continue
                self._try(node)
            for u in lam_types(t):
                if u not in self.external:
                    todo.add(u)
            todo |= {u for u in self._env_types if u not in self.external}
        if self.used:
            for t, name in self.applies.items():
                self._emit_apply(t, name)
            self.mod.cyclic |= self._recursive_applies()
            fn = Function(self.mod.fresh("heap"), [])
            lists = [f"_List.empty_list(_hty{k})" for k in range(len(self.heap))]
            fn.lines = [(f"    return ({''.join(x + ', ' for x in lists)})", None)]
            self.mod.functions.append(fn)
            self.new_heap = fn.name

    def globals(self) -> list[str]:
        """Module-level lines: the Numba types of the heap's lists."""
        if not self.used:
            return []
        lines = ["from numba import types as _nt", "from numba.typed import List as _List"]
        return lines + [f"_hty{k} = {type_source(t)}" for k, t in enumerate(self.heap)]

    def _recursive_applies(self) -> set[str]:
        """The apply functions on a cycle of calls (found in the generated text: a call is
        ``_name(``), which must be compiled without Numba's disk cache (numba#6061)."""
        defined = {fn.name: fn for fn in self.mod.functions}
        calls = {name: {c for line, _ in fn.lines for c in _CALL.findall(line) if c in defined}
                 for name, fn in defined.items()}
        cyclic = set()
        for name in self.applies.values():
            seen, stack = set(), list(calls[name])
            while stack:
                x = stack.pop()
                if x == name:
                    cyclic.add(name)
                    break
                if x not in seen:
                    seen.add(x)
                    stack.extend(calls.get(x, ()))
        return cyclic

    def _try(self, node: ir.Lam | ir.FnRef) -> None:
        """A program candidate, or nothing if its body cannot be compiled."""
        mod = self.mod
        saved = (len(mod.functions), dict(mod.names), dict(mod.generated), set(mod.cyclic),
                 dict(self.by_key), {t: list(c) for t, c in self.by_type.items()}, list(self.heap),
                 dict(self.applies), dict(self.records))
        try:
            self.candidate(node)
        except Exception as why:  # Unsupported (Orchestration: a lambda that prints), or a bug: left out
            logging.getLogger("labrys.backends").debug("closure at %s left out of the module: %s", node.span, why)
            (n, mod.names, mod.generated, mod.cyclic, self.by_key, self.by_type, self.heap, self.applies,
             self.records) = saved
            del mod.functions[n:]

    def _emit_apply(self, t: TLam, name: str) -> None:
        fn = Function(name, ["_f", "_x"] + self.mod.hidden("_room"))
        lines = ["    if _room <= 0:", '        raise ValueError("recursion deeper than the compiled budget")',
                 "    _g = _f[0]"]
        for c in sorted(self.by_type[t], key=_recursion_last):
            lines.append(f"    if _g == {c.tag}:")
            if c.heap is not None:
                lines.append(f"        _e = _heap[{c.heap}][_f[1]]")
            lines.append(f"        return {c.call('_x', '_e')}")
        lines.append('    raise ValueError("a function value this module does not know")')
        fn.lines = [(line, None) for line in lines]
        self.mod.functions.append(fn)
        caller = Function(self.mod.fresh("call"), ["_f", "_x", "_heap"])
        from .numba_source import room
        caller.lines = [(f"    return {name}(_f, _x, _heap, _np.int64({room()}))", None)]  # Note [Closure tags
        # are not literals]
        self.mod.functions.append(caller)
        self.callers[t] = caller.name


def _recursion_last(c: Candidate) -> int:
    """Branches that cannot reach ``apply`` again first: Numba types a recursive
    function from a branch that returns without recursing, and types branches in order."""
    if c.node is None:  # Note [Run-time closures]
        return 2 if c.applies else 0
    if isinstance(c.node, ir.FnRef):
        return 1
    from ..ir.traverse import nodes
    return 2 if any(isinstance(x, (ir.App, ir.Call)) and not (isinstance(x, ir.Call) and x.func in PRIMITIVES)
                    for x in nodes(c.node.body)) else 0


def type_source(t: Type) -> str:
    """Source of the Numba type representing t (as ``numba_type`` in compiled.py), for the
    heap's typed lists."""
    from ..ir.types import BOOL, CONTRIB, DELTA, FLOAT, STRING
    from .numba_types import array_rank, is_soa, soa_rank
    if t in (FLOAT, INTEGER, BOOL, STRING, DELTA, CONTRIB):  # a Delta, a Contrib: tape nodes (numba_tape.py)
        return {FLOAT: "_nt.float64", BOOL: "_nt.boolean", STRING: "_nt.unicode_type"}.get(t, "_nt.int64")
    if isinstance(t, TLam):
        return "_nt.UniTuple(_nt.int64, 2)"
    if isinstance(t, TTuple):
        return f"_nt.Tuple(({''.join(type_source(e) + ', ' for e in t.elems)}))"
    if isinstance(t, TSum):
        return f"_nt.Tuple((_nt.boolean, {type_source(t.left)}, {type_source(t.right)}))"
    if closure_vec(t):
        return "_nt.Array(_nt.int64, 2, 'C')"
    if is_soa(t):
        from .numba_soa import soa_type_source
        return soa_type_source(t)
    if soa_rank(t):  # Note [Nested struct of arrays] in numba_nested.py
        from .numba_nested import nested_type_source
        return nested_type_source(t)
    if isinstance(t, TTensor) and t.elem in (INTEGER, DELTA, CONTRIB):
        return f"_nt.Array(_nt.int64, {t.rank}, 'C')"
    if array_rank(t) is None:  # no machine form: refused here, not by Numba on the first call
        raise Unsupported(f"a captured value of type {t}", None)
    return f"_nt.Array(_nt.float64, {array_rank(t)}, 'C')"


def program_candidates(backend) -> dict[TLam, list[ir.Lam | ir.FnRef]]:
    """Every lambda and (fn f) of the program by type, except loop bodies (which are
    never values), found once per backend."""
    found = getattr(backend, "_closure_candidates", None)
    if found is not None:
        return found
    found = {}
    for d in backend.checked.program.decls:
        if not isinstance(d, ir.Def):
            continue
        stack: list[ir.Expr] = [d.body]
        bodies: set[int] = set()
        while stack:
            e = stack.pop()
            if isinstance(e, ir.Call) and e.func in LOOP_PRIMITIVES:
                bodies |= {id(a) for a in ir.call_args(e) if isinstance(a, ir.Lam)}
            if isinstance(e, (ir.Lam, ir.FnRef)) and isinstance(e.type, TLam) and id(e) not in bodies:
                found.setdefault(e.type, []).append(e)
            stack.extend(c for c, _ in children(e))
    backend._closure_candidates = found
    return found


class ClosureMixin:
    """Methods of the Numba emitter for lambdas, (fn f) and applications."""

    def closure(self, t: str, e: ir.Lam | ir.FnRef) -> None:
        cand = self.mod.closures.candidate(e)
        if cand.heap is None:
            self.emit(f"{t} = (_np.int64({cand.tag}), _np.int64(0))")  # Note [Closure tags are not literals]
            return
        env = [self.atom(ir.Var(n, type=ty)) for n, ty in cand.env]
        self.emit(f"_heap[{cand.heap}].append(({', '.join(env)},))")
        self.emit(f"{t} = (_np.int64({cand.tag}), len(_heap[{cand.heap}]) - 1)")

    def closure_vector(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> bool:
        """``build``, ``index`` and ``size`` of a ``Vec (Lam S T)`` (an (n, 2) int64 array);
        False for a call that involves no such vector."""
        if not any(closure_vec(x.type) for x in (e, *args)):
            return False
        if name == "build" and isinstance(args[1], ir.Lam) and args[0].type == INTEGER:
            n, lam = self.atom(args[0]), args[1]
            i = self.mod.fresh("i")
            self.emit(f"{t} = _np.empty(({n}, 2), _np.int64)")
            self.emit(f"for {i} in range({n}):")
            inner = self.indented()
            inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = {i}")
            x = inner.atom(lam.body)
            inner.emit(f"{t}[{i}, 0] = {x}[0]")
            inner.emit(f"{t}[{i}, 1] = {x}[1]")
            return True
        if name == "index" and args[0].type == INTEGER:
            i, v = self.atom(args[0]), self.atom(args[1])
            row = self.mod.fresh()
            self.emit(f"{row} = {v}[_checkindex({i}, {v}.shape[0])]")
            self.emit(f"{t} = ({row}[0], {row}[1])")
            return True
        if name == "size":
            self.emit(f"{t} = {self.atom(args[0])}.shape[0]")
            return True
        raise Unsupported(f"{name} of a vector of function values", e.span)

    def apply(self, t: str, e: ir.App) -> None:
        if not isinstance(e.func.type, TLam):
            raise Unsupported(f"a call of a value of type {e.func.type}", e.span)
        f, x = self.atom(e.func), self.atom(e.arg)
        hidden = ", ".join(self.mod.hidden("_room - 1"))
        self.emit(f"{t} = {self.mod.closures.apply_of(e.func.type)}({f}, {x}, {hidden})")


__all__ = ["ClosureMixin", "ClosureTable", "NOT_A_CLOSURE", "Orchestration", "captured", "key_of",
           "lam_types"]
