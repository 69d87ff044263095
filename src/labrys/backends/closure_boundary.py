"""Function values crossing the boundary of the ``compiled`` backend (Note
[Defunctionalisation] in :mod:`labrys.backends.numba_closures`).

    Python → compiled:  a closure the python backend made (marked ``_ks``: its lambda
                        and captured values), a ``(fn f)`` value, or a closure an
                        earlier compiled call returned  ↦  (tag, slot) in this call's heap
    compiled → Python:  (tag, slot)  ↦  :class:`CompiledClosure`, a Python callable
                        running the module's compiled ``apply`` on the heap it came with

Each call from Python gets a fresh heap (one Numba typed list per lambda that
captures something).  A function value the module has no candidate for (a
lambda whose body could not be compiled, or one of another program) makes
that call run on ``python``, silently, as a ragged vector does.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import Limits
from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.types import TLam, TSum, TTuple, Type
from ..memory import address_space_window
from ..values import Inj, dense, make_vec
from .cache import compiled_function
from .numba_closures import ClosureTable, key_of, lam_types
from .numba_sums import machine_placeholder
from .numba_types import array_rank, closure_vec, refusal
from .python import note

FAILURES = (ArithmeticError, LookupError, AssertionError, ValueError, TypeError, MemoryError)


class Unknown(Exception):
    """A function value the module cannot represent: the call runs on python."""


class CompiledClosure:
    """A closure made by compiled code, handed to Python: call it like a function.
    ``_ks`` describes it (lambda and captured values) as the python backend's
    closures are described, so it can be passed to any compiled function again."""

    __slots__ = ("boundary", "heap", "ltype", "value")

    def __init__(self, boundary: "Boundary", heap: tuple, ltype: TLam, value: tuple) -> None:
        self.boundary, self.heap, self.ltype, self.value = boundary, heap, ltype, value

    def __call__(self, x: Any) -> Any:
        return self.boundary.call(self, x)

    @property
    def _ks(self) -> tuple[ir.Lam | ir.FnRef, tuple]:
        cand = self.boundary.table.by_type[self.ltype][self.value[0]]
        if cand.heap is None:
            return cand.node, ()
        env = self.heap[cand.heap][self.value[1]]
        out = self.boundary.outward
        return cand.node, tuple(out(ty)(v, self.heap) for (_, ty), v in zip(cand.env, env))

    def __repr__(self) -> str:
        return f"<compiled closure of type {self.ltype}>"


class Boundary:
    """Converters between run-time values and the machine values of one module
    whose types involve functions; made once per compiled def."""

    def __init__(self, backend, table: ClosureTable, text: str, to_machine: Callable, from_machine: Callable,
                 numba_type: Callable, span=None) -> None:
        self.backend, self.table, self.text = backend, table, text
        self.span = span  # the def's: where a closure made by generated code (a derivative's) reports errors
        self.to_machine, self.from_machine, self.numba_type = to_machine, from_machine, numba_type
        self._in: dict[Type, Callable] = {}
        self._out: dict[Type, Callable] = {}
        self._callers: dict[TLam, Callable] = {}
        self.list_types = [numba_type(t) for t in table.heap]
        self._new_heap: Callable | None = None

    def heap_type(self):
        from numba import types

        return types.Tuple(tuple(types.ListType(t) for t in self.list_types))

    def new_heap(self) -> tuple:
        """An empty heap, made by compiled code (typed lists made from Python cost ~0.1 ms each)."""
        if self._new_heap is None:
            self._new_heap = direct(compiled_function(self.text, self.table.new_heap, ()))
        return self._new_heap()

    # --- Python → compiled --------------------------------------------------------

    def inward(self, t: Type) -> Callable[[Any, tuple], Any]:
        if t not in self._in:
            self._in[t] = self._make_in(t)
        return self._in[t]

    def _make_in(self, t: Type) -> Callable[[Any, tuple], Any]:
        if not lam_types(t):
            plain = self.to_machine(t)
            return lambda v, heap: plain(v)
        if isinstance(t, TLam):
            return lambda v, heap: self.encode(t, v, heap)
        if isinstance(t, TTuple):
            parts = [self.inward(e) for e in t.elems]
            return lambda v, heap: tuple(p(x, heap) for p, x in zip(parts, v))
        if isinstance(t, TSum):
            left, right = self.inward(t.left), self.inward(t.right)
            pl, pr = machine_placeholder(t.left, array_rank), machine_placeholder(t.right, array_rank)
            return lambda v, heap: (True, left(v.value, heap), pr) if v.left else (False, pl, right(v.value, heap))
        if closure_vec(t):
            return lambda v, heap: np.array([self.encode(t.elem, x, heap) for x in dense(v)],
                                            dtype=np.int64).reshape(-1, 2)
        raise Unknown(f"a value of type {t}")

    def encode(self, t: TLam, v: Any, heap: tuple) -> tuple[int, int]:
        described = getattr(v, "_ks", None)
        if described is None:
            raise Unknown("a function value that labrys did not make")
        node, env = described
        cand = self.table.by_key.get(key_of(node))
        if cand is None or cand.ltype != t:
            raise Unknown("a function value this module has no code for")
        if cand.heap is None:
            return (cand.tag, 0)
        values = tuple(self.inward(ty)(x, heap) for (_, ty), x in zip(cand.env, env))
        heap[cand.heap].append(values)
        return (cand.tag, len(heap[cand.heap]) - 1)

    # --- compiled → Python --------------------------------------------------------

    def outward(self, t: Type) -> Callable[[Any, tuple], Any]:
        if t not in self._out:
            self._out[t] = self._make_out(t)
        return self._out[t]

    def _make_out(self, t: Type) -> Callable[[Any, tuple], Any]:
        if not lam_types(t):
            plain = self.from_machine(t)
            return (lambda v, heap: v) if plain is None else (lambda v, heap: plain(v))
        if isinstance(t, TLam):
            return lambda v, heap: CompiledClosure(self, heap, t, (int(v[0]), int(v[1])))
        if isinstance(t, TTuple):
            parts = [self.outward(e) for e in t.elems]
            return lambda v, heap: tuple(p(x, heap) for p, x in zip(parts, v))
        if isinstance(t, TSum):
            left, right = self.outward(t.left), self.outward(t.right)
            return lambda v, heap: Inj(True, left(v[1], heap)) if v[0] else Inj(False, right(v[2], heap))
        if closure_vec(t):
            return lambda v, heap: make_vec(t.elem, [CompiledClosure(self, heap, t.elem, (int(r[0]), int(r[1])))
                                                     for r in v])
        raise LabrysError(f"a compiled result of type {t} cannot be returned to Python", None)

    def call(self, f: CompiledClosure, x: Any) -> Any:
        """Apply a closure from compiled code to a Python value, in compiled code; on a
        run-time error, the same application on the python backend (its positioned error)."""
        t = f.ltype
        if t not in self._callers:
            self._callers[t] = self._caller(t)
        if self._callers[t] is None:
            return self.on_python(f, x)
        try:
            arg = self.inward(t.arg)(x, f.heap)
            result = self._callers[t](f.value, arg, f.heap)
        except Unknown:
            return self.on_python(f, x)
        except FAILURES:
            return self.on_python(f, x)
        return self.outward(t.res)(result, f.heap)

    def _caller(self, t: TLam) -> Callable | None:
        """The compiled entry that applies a closure of type t; None when Numba refuses it
        (e.g. a closure whose apply recurses through another type's: runaway recursion in
        its type inference), and then every such call runs on python (Note [Compiled fallback])."""
        argtypes = (self.numba_type(t), self.numba_type(t.arg), self.heap_type())
        try:
            return direct(compiled_function(self.text, self.table.callers[t], argtypes))
        except LabrysError:
            raise
        except Exception as exc:  # noqa: BLE001 - Numba's refusals have no common base we may rely on
            note(f"closures of type {t} called from Python run on the python backend: "
                 f"Numba could not compile their apply ({refusal(exc)})")
            return None

    def on_python(self, f: CompiledClosure, x: Any) -> Any:
        node, env = f._ks
        if isinstance(node, ir.FnRef):
            return self.backend.cell(self.backend.functions.by_name(node.func))[0](x)
        cand = self.table.by_key[key_of(node)]
        params = tuple(ir.Param(n, ty) for n, ty in cand.env) + (ir.Param(node.var, node.var_type),)
        d = ir.Def("closure", f.ltype.res, params, node.body, span=node.span or self.span)
        from .python import PythonBackend
        return PythonBackend.generate(self.backend, d)((*env, x))


def direct(dispatcher: Any) -> Callable:
    """The machine code of a dispatcher compiled for one signature, called without Numba's
    dispatch (typing a tuple of typed lists on every call costs ~0.3 ms)."""
    signatures = dispatcher.signatures
    if len(signatures) != 1:  # the same text compiled for other argument types too: dispatch
        return dispatcher
    return dispatcher.overloads[signatures[0]].entry_point


def closure_entry(backend, d: ir.Def, compiled: Any, boundary: Boundary) -> Callable[[Any], Any]:
    """The Python callable of a compiled def whose parameters or result involve functions."""
    compiled = direct(compiled)
    convert = [boundary.inward(p.type) for p in d.params]
    back = boundary.outward(d.ret)
    slow: list[Callable] = []

    def on_python(arg: Any) -> Any:  # Note [Compiled fallback]
        if not slow:
            from .python import PythonBackend
            slow.append(PythonBackend.generate(backend, d))
        return slow[0](arg)

    def run(arg: Any) -> Any:
        args = (arg,) if len(convert) == 1 else arg
        heap = boundary.new_heap()
        try:
            machine = [c(x, heap) for c, x in zip(convert, args)]
            if Limits.max_memory is None:
                result = compiled(*machine, heap)
            else:
                with address_space_window():
                    result = compiled(*machine, heap)
        except (Unknown, *FAILURES):
            return on_python(arg)
        return back(result, heap)

    run.fast = None
    run.__name__ = f"compiled {show_name(d.name)}"
    return run
