"""The loops of the ``compiled`` backend's generator (:mod:`.numba_source`): ``build``
a preallocated array filled by a loop; ``sumbuild`` and ``sum`` accumulating without
allocating (a Float accumulator is a scalar, a vector one is added into in place);
``fold`` and ``ifold`` loops over an accumulator.  A lambda is the loop's body, inline.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import FLOAT, INTEGER, TTuple, Type
from .numba_tangents import SparseSum
from .numba_types import Unsupported, array_rank, float_tensor, int_array

MAX_LOOPS = 12  # CPython allows 20 statically nested blocks


def _zeros(rank: int) -> str:
    return f"_np.zeros(({'0, ' * rank}))"


class LoopMixin:
    """Methods of the Numba emitter for the loop primitives."""

    def loop(self, t: str, name: str, n: ir.Expr, lam: ir.Lam, e: ir.Call) -> None:
        if self.depth >= MAX_LOOPS * 2:
            raise Unsupported("loops nested too deeply", e.span)
        size = self.atom(n)
        rank = len(n.type.elems) if isinstance(n.type, TTuple) else 1
        body_type = lam.body.type
        nested = float_tensor(body_type)
        if name == "sumbuild" and isinstance(body_type, TTuple) and body_type.elems and rank == 1:
            return self.tuple_sumbuild(t, size, lam, e)
        if not (body_type in (FLOAT, INTEGER) or nested) or (nested and rank != 1):
            raise Unsupported(f"{name} of {body_type}", e.span)
        if name == "build" and nested:
            self.emit(f"{t} = {_zeros(1 + array_rank(body_type))}")
        elif name == "build":
            self.emit(f"{t} = _np.empty({size}{', _np.int64' if body_type == INTEGER else ''})")
        elif body_type == FLOAT:
            self.emit(f"{t} = 0.0")
        elif body_type == INTEGER:
            self.emit(f"{t} = 0")
        else:
            self.emit(f"{t} = {_zeros(array_rank(body_type))}")
        inner, index = self, []
        for k in range(rank):
            i = self.mod.fresh("i")
            inner.emit(f"for {i} in range({size if rank == 1 else f'{size}[{k}]'}):")
            inner, index = inner.indented(), index + [i]
        var = inner.mod.bind(inner.env, lam.var)
        inner.emit(f"{var} = {index[0] if rank == 1 else '(' + ', '.join(index) + ',)'}")
        x = inner.sparse_atom(lam.body) if name == "sumbuild" and nested else inner.atom(lam.body)
        if isinstance(x, SparseSum):
            inner.emit(f"if {index[0]} == 0:")
            inner.indented().emit(f"{t} = _np.zeros({x.shape})")
            inner.accumulate([t], body_type, x)
        elif name == "build" and nested:  # rows of one shape: allocated when the first is known
            inner.emit(f"if {index[0]} == 0:")
            inner.indented().emit(f"{t} = _np.empty(({size},) + {x}.shape)")
            inner.emit(f"{t}[{index[0]}] = _shaped({x}, {t}[{index[0]}])")
        elif name == "build":
            inner.emit(f"{t}[{', '.join(index)}] = {x}")
        elif float_tensor(body_type):  # first term: a copy; then added in place
            first = " and ".join(f"{i} == 0" for i in index)
            inner.emit(f"if {first}:")
            inner.indented().emit(f"{t} = {x}.copy()")
            inner.emit("else:")
            inner.indented().emit(f"{t} += _shaped({x}, {t})")
        else:
            inner.emit(f"{t} += {x}")
        if name == "sumbuild" and float_tensor(body_type):
            self.emit(f"if {size if rank == 1 else ' * '.join(f'{size}[{k}]' for k in range(rank))} == 0:")
            self.indented().emit('raise ValueError("sumbuild of no vectors")')

    def tuple_sumbuild(self, t: str, size: str, lam: ir.Lam, e: ir.Call) -> None:
        """sumbuild of tuples (of Floats, Integers, Float tensors, at any depth): one accumulator per
        leaf, added componentwise as the interpreter adds tuples; a tensor leaf starts as a copy of
        the first term, so a sumbuild of no terms with one raises, as the interpreter does."""
        from .numba_tangents import leaves, rebuild
        parts = leaves(lam.body.type)
        unit = TTuple(())  # an Integer's tangent: nothing to add
        if not all(leaf in (FLOAT, INTEGER, unit) or float_tensor(leaf) for _, leaf in parts):
            raise Unsupported(f"sumbuild of {lam.body.type}", e.span)
        accs = ["()" if leaf == unit else self.mod.fresh("acc") for _, leaf in parts]
        summed = [(acc, p) for acc, p in zip(accs, parts) if p[1] != unit]
        for acc, (_, leaf) in summed:
            self.emit(f"{acc} = {'0.0' if leaf == FLOAT else '0' if leaf == INTEGER else _zeros(array_rank(leaf))}")
        i = self.mod.fresh("i")
        self.emit(f"for {i} in range({size}):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = {i}")
        x = inner.atom(lam.body)
        for acc, (path, leaf) in summed:
            if leaf in (FLOAT, INTEGER):
                inner.emit(f"{acc} += {x}{path}")
                continue
            inner.emit(f"if {i} == 0:")
            inner.indented().emit(f"{acc} = {x}{path}.copy()")
            inner.emit("else:")
            inner.indented().emit(f"{acc} += _shaped({x}{path}, {acc})")
        if any(leaf not in (FLOAT, INTEGER, unit) for _, leaf in parts):
            self.emit(f"if {size} == 0:")
            self.indented().emit('raise ValueError("sumbuild of no vectors")')
        self.emit(f"{t} = {rebuild(lam.body.type, accs)}")

    def sum(self, t: str, v: str, elem: Type) -> None:
        """Sequential, as the interpreter adds; a vector sum is accumulated in place."""
        k = self.mod.fresh("i")
        if elem in (FLOAT, INTEGER):
            self.emit(f"{t} = {'0.0' if elem == FLOAT else '0'}")
            self.emit(f"for {k} in range({v}.shape[0]):")
            self.indented().emit(f"{t} += {v}[{k}]")
            return
        self.emit(f"if {v}.shape[0] == 0:")
        self.indented().emit('raise ValueError("sum of no vectors")')
        self.emit(f"{t} = {v}[0].copy()")
        self.emit(f"for {k} in range(1, {v}.shape[0]):")
        self.indented().emit(f"{t} += {v}[{k}]")

    def fold(self, t: str, lam: ir.Lam, init: ir.Expr, vec: ir.Expr) -> None:
        if not (float_tensor(vec.type) or int_array(vec.type)) or vec.type.rank != 1:
            raise Unsupported(f"fold over {vec.type}", vec.span)
        self.emit(f"{t} = {self.atom(init)}")
        v = self.atom(vec)
        i = self.mod.fresh("i")
        self.emit(f"for {i} in range({v}.shape[0]):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = ({t}, {v}[{i}])")
        inner.emit(f"{t} = {inner.atom(lam.body)}")

    def ifold(self, t: str, n: ir.Expr, lam: ir.Lam, init: ir.Expr) -> None:
        """(ifold n (lam (acc_i : Tuple A Integer) e) acc0): a loop over i = 0 … n-1 (a loop over
        a function value is first given a lambda, numba_eta.eta_loop_arguments)."""
        self.emit(f"{t} = {self.atom(init)}")
        size, i = self.atom(n), self.mod.fresh("i")
        self.emit(f"for {i} in range({size}):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, lam.var)} = ({t}, {i})")
        inner.emit(f"{t} = {inner.atom(lam.body)}")
