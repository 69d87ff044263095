"""The ``compiled`` backend: defs that :mod:`labrys.backends.numba_source`
accepts are compiled with ``numba.njit``; the others run on the ``python``
backend, with a note saying which function and why (logged; shown by ``labrys --verbose``).

Note [Compiled fallback]
~~~~~~~~~~~~~~~~~~~~~~~~
Never wrong, never silently slow: a def is compiled only when every node of
it (and of every function it calls) has a machine representation; otherwise
the generator's reason is printed and the def runs on ``python``.  Numba
could still refuse generated code (a type it cannot unify): that is a note
and a fallback too.  At run time, compiled code raises a plain exception
where the interpreter reports a positioned error (an index out of range, a
failed assert, Integer division by zero, a size too large to allocate); the call is then re-run on
``python`` (compiled defs are pure), which reports the error exactly as the
interpreter does.

Note [Orchestration]
~~~~~~~~~~~~~~~~~~~~
``print`` writes through Python's ``sys.stdout`` (so output interleaves and
is captured like any other), so a def that prints, or calls a function that
does, runs its own body on ``python`` without a note: it orchestrates.  The
user functions it calls are compiled, each through its own cell (the
python backend reaches callees through the shared function table), so only
the printing def's own statements run in Python; keep heavy loops in
functions it calls.  This is not a fallback: nothing is noted.

The disk cache of compiled modules is :mod:`labrys.backends.cache`
(Note [Compile cache]); it never sends a def to ``python``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from ..context import Limits
from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import nodes
from ..ir.types import BOOL, CONTRIB, DELTA, FLOAT, INTEGER, STRING, TLam, TSum, TTensor, TTuple, Type
from ..memory import address_space_window
from ..values import dense, make_vec
from .bog_entry import bog_entry, machine_converters, outside_bogs
from .boundary import fast_entry
from .cache import compiled_function
from .closure_boundary import Boundary, closure_entry
from .numba_closures import lam_types
from .numba_nested import nested_from_machine, nested_numba_type, nested_to_machine
from .numba_soa import nested, soa_from_machine, soa_numba_type, soa_to_machine
from .numba_source import NumbaModuleSource
from .numba_sums import sum_from_machine, sum_to_machine
from .numba_tape import NeedsTape
from .numba_types import (
    Orchestration,
    Unsupported,
    array_rank,
    in_ragged_variant,
    is_soa,
    mentions_nest,
    oversized,
    ragged_variant,
    refusal,
    soa_rank,
)
from .python import PythonBackend, note


def numba_type(t: Type):
    from numba import types

    if t == FLOAT:
        return types.float64
    if t in (INTEGER, DELTA, CONTRIB):
        return types.int64
    if t == BOOL:
        return types.boolean
    if t == STRING:
        return types.unicode_type
    if isinstance(t, TTuple):
        return types.Tuple(tuple(numba_type(e) for e in t.elems))
    if isinstance(t, TLam):  # (tag, slot): Note [Defunctionalisation] in numba_closures.py
        return types.UniTuple(types.int64, 2)
    if isinstance(t, TTensor) and isinstance(t.elem, TLam):  # rows of (tag, slot)
        return types.Array(types.int64, 2, "C")
    if isinstance(t, TSum):  # Note [Compiled sums]
        return types.Tuple((types.boolean, numba_type(t.left), numba_type(t.right)))
    if is_soa(t):  # Note [Struct of arrays]
        return soa_numba_type(t, numba_type)
    if soa_rank(t):  # Note [Nested struct of arrays]
        return nested_numba_type(t)
    if t.elem in (INTEGER, DELTA, CONTRIB):
        return types.Array(types.int64, t.rank, "C")
    return types.Array(types.float64, array_rank(t), "C")


class Ragged(ValueError):
    """A nested vector whose rows differ in shape: no array represents it."""


def to_machine(t: Type) -> Callable[[Any], Any]:
    """Run-time value → the compiled representation (contiguous float64 arrays)."""
    if is_soa(t):
        return soa_to_machine(t, to_machine)
    if soa_rank(t):  # Note [Nested struct of arrays]
        return nested_to_machine(t)
    if isinstance(t, TTensor) and t.elem == FLOAT:
        return lambda v: np.ascontiguousarray(dense(v), dtype=np.float64)
    if isinstance(t, TTensor) and t.elem == INTEGER:  # an object array of ints
        return lambda v: np.asarray(v, dtype=object).astype(np.int64)
    if isinstance(t, TTensor):
        row, rank = to_machine(t.elem), array_rank(t)

        def stack(v: Any) -> np.ndarray:
            rows = [row(x) for x in dense(v)]
            if not rows:
                return np.zeros((0,) * rank)
            if any(r.shape != rows[0].shape for r in rows):  # the def's ragged variant takes it
                raise Ragged(f"a ragged {t} (rows of shapes {sorted({r.shape for r in rows})[:3]}…)")
            return np.stack(rows)
        return stack
    if isinstance(t, TSum):
        return sum_to_machine(t, to_machine(t.left), to_machine(t.right), array_rank)
    if isinstance(t, TTuple) and any(isinstance(e, (TTensor, TTuple, TSum)) for e in t.elems):
        parts = [to_machine(e) for e in t.elems]
        return lambda v: tuple(f(x) for f, x in zip(parts, v))
    return lambda v: v


def from_machine(t: Type) -> Callable[[Any], Any] | None:
    """The compiled representation → the run-time value (None: the same)."""
    if is_soa(t):
        return soa_from_machine(t, from_machine)
    if soa_rank(t):
        return nested_from_machine(t)
    if isinstance(t, TSum):
        return sum_from_machine(from_machine(t.left) or (lambda x: x), from_machine(t.right) or (lambda x: x))
    if isinstance(t, TTensor) and t.elem == INTEGER:
        return lambda a: make_vec(INTEGER, [int(x) for x in a.flat], a.shape)
    if isinstance(t, TTensor) and t.elem != FLOAT:
        row = from_machine(t.elem) or (lambda x: x)
        return lambda a: make_vec(t.elem, [row(x) for x in a])
    if isinstance(t, TTuple) and any(from_machine(e) for e in t.elems):
        parts = [from_machine(e) or (lambda x: x) for e in t.elems]
        return lambda v: tuple(f(x) for f, x in zip(parts, v))
    return None


class CompiledBackend(PythonBackend):
    name = "compiled"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fallbacks: dict[str, str] = {}  # function -> why it runs on python

    def generate(self, d: ir.Def) -> Callable[[Any], Any]:
        """d compiled by Numba, or on the python backend with a note saying why."""
        too_big = oversized(d)  # Note [Oversized defs go to python first] in .numba_types
        if too_big is not None:
            return self.fall_back(d, f"{too_big} is not supported by the compiled backend")
        original, concrete, refused = d, self.concrete(d), None
        if isinstance(concrete, str):  # generated anyway: a def that prints still orchestrates
            concrete, refused = None, concrete
        taped = concrete is not None and concrete.taped  # Note [BOGs across the boundary] in labrys.ad.bog_boundary
        if concrete is not None:  # Note [Concrete BOGs] in labrys.ad.bog_types
            d = concrete.d
        crossing = [p.type for p in d.params] + [d.ret] if concrete is None or taped else \
            [x for o, c in zip(original.params + (ir.Param("", original.ret),), d.params + (ir.Param("", d.ret),))
             for x in outside_bogs(o.type, c.type)]  # a BOG crosses unconverted (.bog_entry)
        if any(nested(t) for t in crossing):  # Note [Rows of structs of arrays]
            return self.fall_back(original, "a vector of tuples holding vectors of tuples in its parameters or "
                                            "result is not supported by the compiled backend at its boundary")
        try:
            try:
                mod = NumbaModuleSource(self, bogs=taped)
                entry = mod.add_def(d)
            except NeedsTape:  # Note [The tape in generated code]
                mod = NumbaModuleSource(self, tape=True, bogs=taped)
                entry = mod.add_def(d)
            text = mod.text()
        except Orchestration:  # Note [Orchestration]
            logging.getLogger("labrys.backends").debug("%s prints: runs on python, its callees compiled",
                                                       show_name(d.name))
            return PythonBackend.generate(self, original)
        except Unsupported as why:
            if not in_ragged_variant() and mentions_nest(original, INTEGER):  # Note [Ragged vectors of numbers]
                with ragged_variant():
                    return self.generate(original)
            return self.fall_back(original, f"{refused or why} is not supported by the compiled backend")
        boundary = None
        if mod.closures.crosses:  # Note [Defunctionalisation]: the entry takes this call's heap
            boundary = Boundary(self, mod.closures, text, to_machine, from_machine, numba_type, original.span)
        try:
            heap = (boundary.heap_type(),) if boundary else ()
            fn = compiled_function(text, entry, tuple(numba_type(p.type) for p in d.params) + heap)
            if boundary:  # compiled now, so that a refusal is a fallback here, not an error on the first call
                boundary.new_heap()
        except LabrysError:
            raise
        except Exception as exc:  # Numba refused the generated code (Note [Compiled fallback])
            return self.fall_back(original, f"Numba could not compile it ({refusal(exc)})")
        self.sources[show_name(d.name) + (" (ragged)" if in_ragged_variant() else "")] = text
        if boundary and taped:
            if any(lam_types(p.type) for p in d.params) or lam_types(d.ret):
                return self.fall_back(original, "function values and the BOG of a recursive function in its "
                                                "parameters or result are not supported together by the "
                                                "compiled backend at its boundary")
            return bog_entry(self, d, fn, boundary, concrete, to_machine, from_machine, original)
        if boundary:
            return closure_entry(self, d, fn, boundary)
        return self._entry(d, fn, original, concrete)

    # --- split reverse mode's BOGs (Note [Concrete BOGs] in labrys.ad.bog_types) ----------
    def concrete(self, d: ir.Def):
        """d with its BOGs given their structure types (a ConcreteDef), None if d has
        none, or why it cannot be (a BOG of a recursive function)."""
        hook = getattr(self.definitions, "concrete", None)
        return None if hook is None else hook(d)

    def without_bogs(self, d: ir.Def, span) -> ir.Def:
        concrete = self.concrete(d)
        if isinstance(concrete, str):
            if any(isinstance(x, ir.Call) and x.func == "print" for x in nodes(d.body)):
                return d  # it orchestrates (Note [Orchestration]): its callees are refused one by one
            raise Unsupported(concrete, span)
        return d if concrete is None else concrete.d

    def original_argument(self, func, arg: Type) -> Type | None:
        hook = getattr(self.definitions, "original_argument", None)
        return None if hook is None else hook(func, arg)

    def fall_back(self, d: ir.Def, why: str) -> Callable[[Any], Any]:
        name = show_name(d.name)
        if name not in self.fallbacks:
            note(f"{name} runs on the python backend: {why}")
        self.fallbacks[name] = why
        return PythonBackend.generate(self, d)

    def ragged_variant(self, d: ir.Def, exc: Exception) -> Callable[[Any], Any]:
        """d generated with its vectors of vectors of numbers as nested structs of arrays (Note
        [Ragged vectors of numbers]), or on python, with a note, if that variant does not compile."""
        name = show_name(d.name)
        before = self.fallbacks.pop(name, None)
        with ragged_variant():
            variant = self.generate(d)
        if name in self.fallbacks:
            if isinstance(exc, Ragged):
                note(f"{exc} has no array form and {name} does not compile with it as flat columns and "
                     "offsets: the python backend takes this call")
        elif before is not None:
            self.fallbacks[name] = before
        return variant

    def _entry(self, d: ir.Def, compiled: Any, original: ir.Def | None = None, boxes=None) -> Callable[[Any], Any]:
        convert = [to_machine(p.type) for p in d.params]
        slow: list[Callable] = []
        back = from_machine(d.ret)
        if boxes is not None:  # a BOG crosses unconverted, in a MachineBog (Note [BOGs across the boundary])
            convert = [machine_converters(o.type, p.type, to_machine, from_machine, boxes)[0]
                       for o, p in zip(original.params, d.params)]
            back = machine_converters(original.ret, d.ret, to_machine, from_machine, boxes)[1]
        fn = compiled if back is None else (lambda *args: back(compiled(*args)))
        source = original or d

        ragged: list[Callable] = []
        rectangular = not in_ragged_variant()

        def on_python(arg: Any, exc: Exception | None = None) -> Any:  # Note [Compiled fallback]
            if rectangular and (isinstance(exc, Ragged) or str(exc) == "tensor sizes differ" and
                                isinstance(exc, ValueError) and mentions_nest(source, FLOAT)):
                if not ragged:  # Note [Ragged vectors of numbers]
                    ragged.append(self.ragged_variant(source, exc))
                return ragged[0](arg)
            if not slow:
                slow.append(PythonBackend.generate(self, source))
            return slow[0](arg)

        fast = None if boxes is not None else \
            fast_entry(tuple(p.type for p in d.params), d.ret, compiled, self.name)  # Note [Cheap boundaries]
        if len(convert) == 1:
            (c,) = convert

            def run1(arg: Any) -> Any:
                try:
                    if Limits.max_memory is None:
                        return fn(c(arg))
                    with address_space_window():  # Note [Memory limit], guard 3
                        return fn(c(arg))
                except (ArithmeticError, LookupError, AssertionError, ValueError, TypeError, MemoryError) as exc:
                    return on_python(arg, exc)
            run1.fast = fast
            return run1

        def run(arg: Any) -> Any:
            try:
                if Limits.max_memory is None:
                    return fn(*[c(x) for c, x in zip(convert, arg)])
                with address_space_window():
                    return fn(*[c(x) for c, x in zip(convert, arg)])
            except (ArithmeticError, LookupError, AssertionError, ValueError, TypeError, MemoryError) as exc:
                return on_python(arg, exc)
        run.fast = fast
        return run
