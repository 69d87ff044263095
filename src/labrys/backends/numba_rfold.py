"""``rfold``, the reverse sweep of ``fold`` (Ellis et al.'s RFold, Fig. 15), as
two loops of compiled code.

    Γ ⊢ (rfold step step_rev acc0 v dacc czero) : (Tuple dA (Vec dB) C)
      ↦  states[0] = acc0; states[i+1] = step(states[i], v[i])        forward loop
         for i = n-1 … 0: (dacc, dv[i], dc) = step_rev((states[i], v[i]), dacc); c += dc

Note [Compiled rfold]
~~~~~~~~~~~~~~~~~~~~~
The forward loop keeps every accumulator in a Numba list (the interpreter
keeps them in a Python list: Fig. 15's acc_i); the backward loop runs the
body of ``step_rev`` in place, writes each element's cotangent into a
preallocated vector (an array, a struct of arrays for tuples — Note [Struct
of arrays] — or rows allocated when the last element's cotangent gives their
shape), and adds the captured variables' contributions into one accumulator
per leaf of ``C``, in place, one-hots as single writes (Note [Sparse
cotangents, compiled]).  Both lambdas must be literal (they are in derived
code); anything else is :class:`Unsupported`.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import FLOAT, INTEGER, TTensor
from .numba_soa import element
from .numba_tangents import SparseSum, leaves, rebuild
from .numba_types import Unsupported, array_rank, is_soa


class RFoldMixin:
    """The ``rfold`` rule of the Numba emitter (Note [Compiled rfold])."""

    def rfold(self, t: str, args: tuple[ir.Expr, ...], e: ir.Call) -> None:
        step, step_rev, acc0, vec, dacc0, czero = args
        vt, dx_t = vec.type, step_rev.body.type.elems[1]
        soa_in, soa_out = is_soa(vt), is_soa(TTensor(1, dx_t))
        rows = array_rank(dx_t)  # a row's rank when the elements' cotangents are Float tensors
        if not (soa_in or array_rank(vt) is not None or vt == TTensor(1, INTEGER)) or \
                not (soa_out or dx_t in (FLOAT, INTEGER) or rows is not None):
            raise Unsupported(f"rfold over {vt} with element cotangents of type {dx_t}", e.span)
        if soa_out and any(x not in (FLOAT, INTEGER) for x in dx_t.elems):
            raise Unsupported(f"rfold with element cotangents of type {dx_t}", e.span)
        v, acc = self.atom(vec), self.mod.fresh("acc")
        n = self.named(f"{v}[0]" if soa_in else f"{v}.shape[0]")

        def elem(i: str) -> str:
            return element(vt, v, i) if soa_in else f"{v}[{i}]"

        self.emit(f"{acc} = {self.atom(acc0)}")
        states, i = self.mod.fresh("st"), self.mod.fresh("i")
        self.emit(f"{states} = [{acc}]")
        self.emit(f"for {i} in range({n}):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, step.var)} = ({acc}, {elem(i)})")
        inner.emit(f"{acc} = {inner.atom(step.body)}")
        inner.emit(f"{states}.append({acc})")

        c_type = step_rev.body.type.elems[2]
        cz = self.atom(czero)
        accs = []
        for path, leaf in leaves(c_type):
            a = self.mod.fresh("acc")
            self.emit(f"{a} = {cz}{path}" + (".copy()" if isinstance(leaf, TTensor) else ""))
            accs.append(a)
        dacc, dx = self.mod.fresh("d"), self.mod.fresh("dv")
        self.emit(f"{dacc} = {self.atom(dacc0)}")
        columns = []
        if soa_out:
            columns = [self.mod.fresh("col") for _ in dx_t.elems]
            for col, x in zip(columns, dx_t.elems):
                self.emit(f"{col} = _np.empty({n}{', _np.int64' if x == INTEGER else ''})")
        elif rows is None:
            self.emit(f"{dx} = _np.empty({n}{', _np.int64' if dx_t == INTEGER else ''})")
        else:
            self.emit(f"{dx} = {'_np.zeros((0, ' + '0, ' * rows + '))'}")
        self.emit(f"for {i} in range({n} - 1, -1, -1):")
        inner = self.indented()
        inner.emit(f"{inner.mod.bind(inner.env, step_rev.var)} = (({states}[{i}], {elem(i)}), {dacc})")
        value = inner.sparse_atom(step_rev.body)
        parts = value if isinstance(value, list) else [f"{value}[{k}]" for k in range(3)]
        inner.emit(f"{dacc} = {inner.materialise(parts[0])}")
        d = inner.materialise(parts[1])
        if soa_out:
            for k, col in enumerate(columns):
                inner.emit(f"{col}[{i}] = {d}[{k}]")
        elif rows is None:
            inner.emit(f"{dx}[{i}] = {d}")
        else:
            inner.emit(f"if {i} == {n} - 1:")
            inner.indented().emit(f"{dx} = _np.empty(({n},) + {d}.shape)")
            inner.emit(f"{dx}[{i}] = _shaped({d}, {dx}[{i}])")
        contribution = parts[2]
        if isinstance(contribution, (str, SparseSum, list)):
            inner.accumulate(accs, c_type, contribution)
        result = "(" + ", ".join([n, *columns]) + ("," if not columns else "") + ")" if soa_out else dx
        self.emit(f"{t} = ({dacc}, {result}, {rebuild(c_type, accs) if accs else '()'})")
