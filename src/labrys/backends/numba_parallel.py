"""Parallel reverse sums for the ``compiled`` backend's generator (:mod:`.numba_source`):
a ``ts_sumbuild`` at the top of a generated function, whose body has a nest
of two loops of its own, runs its iterations in one chunk per thread, each chunk summing into
accumulators of its own, added in chunk order at the end.

    Γ ⊢ (ts_sumbuild n (lam (i : Integer) e) like) : dT    (top level, e has a loop nest, T > 1)
      ↦  chunk(lo, hi, acc…, free(e)…) = Σ_{lo ≤ i < hi} e          (serial, its own function)
         nt = min(T, n)
         par: for c in prange(nt): P[c] = chunk(n·c/nt, n·(c+1)/nt)   (guarded, below)
         acc = 0 + P[0] + … + P[nt-1]        (or, if nt ≤ 1 or a chunk failed: acc = chunk(0, n))

Note [Parallel reverse sums]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The gradient of ADBench's GMM is one reverse sum over the data points
(``ts_sumbuild`` of each point's cotangent of alphas, means and Q); the
points are independent, so the sum splits into contiguous chunks summed on
separate threads and then added.  The result equals the serial one up to the
reassociation of that one sum, and is deterministic for a given thread
count: the chunks are fixed by n and T, and their sums are added in chunk
order, never in the order threads finish.  A user who allows threads
allows reassociation, so the chunk function is also compiled with LLVM's
``reassoc``, ``nsz`` and ``contract`` flags (never ``nnan``/``ninf``: NaN
and infinities keep their IEEE meaning): its dot products become vector
reductions and its multiply-adds fused ones, 19% less CPU time on GMM d10
K25 (3.85 → 3.11 ms on 2 threads).  So the threaded gradient equals the
serial one up to reassociation and fused multiply-adds (1e-12 relative on
GMM d10 K25); with one thread none of this is generated.

Numba's parallel pass refuses a ``prange`` loop whose body may ``raise``
(the generated bounds checks and asserts), and compiling the whole function
with ``parallel=True`` is slow; so the loop's body is outlined into a
serial function (``_chunkN``) of its free variables and its accumulators,
and only a three-line function (``_parN``) is compiled with
``parallel=True``.  An exception raised in a parallel region is dropped by
Numba (the chunk's sum is then silently partial, measured with Numba 0.68),
so each chunk runs under a ``try`` (``_guardN``) that records whether it
finished; if any did not, the whole sum is run again serially into the
still-zero accumulators, which raises the serial code's error (or, if it
does not raise, gives the result of one chunk).  That path (also taken
for fewer than two iterations) calls the same chunk function on the whole
range into the real accumulators.  If a callee generated for the chunk
turns out to use the closure heap (Note [Defunctionalisation]), the sum
is that one serial call, and the chunk is compiled without the flags.

Only a sum with fresh accumulators (not one added into an enclosing loop's,
Note [Nested accumulation]) at a function's top level (not inside another
loop: prange does not nest) is split, and only when its body has a nest of
two loops (a cheaper body is not worth a thread, nor the compile time), in
a module without a tape or a closure heap (run-time state that chunks would
share).  The thread count T
is fixed when the code is generated (:func:`labrys.context.threads`); with
one thread nothing here is generated, so ``LABRYS_THREADS=1`` gives exactly
the serial module (and its compile time: a ``parallel=True`` function costs
seconds to compile).

Note [Idle threads]
~~~~~~~~~~~~~~~~~~~
Numba's threading layer is the first of TBB, GNU OpenMP and its own
workqueue that loads.  GNU OpenMP's idle threads spin after each parallel
region; on a machine shared with other jobs the spinning counts as the
process's CPU time and takes the cores the other threads wait for: GMM
d10 K25's gradient on 2 threads took twice the serial CPU time and twice
its wall time under a load of 10 on 2 cores, and the same as serial with
``OMP_WAIT_POLICY=passive``.  A gradient is milliseconds, so waking a
sleeping thread (microseconds) costs nothing measurable; when labrys first
generates a parallel function it sets ``OMP_WAIT_POLICY=passive`` unless
the environment already says otherwise (GNU OpenMP reads it when Numba
loads it, at the first parallel call).  It does not choose the layer
(``NUMBA_THREADING_LAYER`` is the user's).
"""
from __future__ import annotations

import logging
import os

from ..context import threads
from ..ir import nodes as ir
from ..ir.traverse import nodes
from ..ir.types import FLOAT, TTensor, TTuple, Type
from .numba_scratch import _parents
from .numba_tangents import leaves
from .pysource import Function

LOOPING = ("build", "sumbuild", "ts_sumbuild", "fold", "ifold", "rfold", "sum")


def worth_threads(body: ir.Expr) -> bool:
    """Whether a loop body has a nest of two loops of its own (a cheaper body is not worth a
    thread, nor a parallel function's seconds of compile time)."""
    return any(isinstance(x, ir.Call) and x.func in LOOPING
               and any(isinstance(y, ir.Call) and y.func in LOOPING for y in nodes(x.arg))
               for x in nodes(body))


def passive_threads() -> None:
    """Note [Idle threads]."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "passive"
        logging.getLogger("labrys.backends").debug("OMP_WAIT_POLICY=passive for parallel loops")


class ParallelMixin:
    """The Numba emitter's rule for parallel top-level reverse sums (Note [Parallel reverse sums])."""

    def parallel_sum(self, size: str, lam: ir.Lam, accs: list[str], result: Type) -> bool:
        """Emit the sum of ``lam`` over ``size`` into ``accs`` as chunks on threads; False
        (nothing emitted) where Note [Parallel reverse sums] does not apply."""
        count = threads()
        kinds = [leaf for _, leaf in leaves(result)]
        if count <= 1 or self.depth != 1 or self.mod.tape or self.mod.closures.used \
                or not all(k == FLOAT or k == TTuple(()) or isinstance(k, TTensor) for k in kinds) \
                or not worth_threads(lam.body) or _parents(lam.body) is None:
            return False
        free = sorted(self.mod.free_vars(lam))
        arrays = [k for k, leaf in enumerate(kinds) if isinstance(leaf, TTensor)]
        floats = [k for k, leaf in enumerate(kinds) if leaf == FLOAT]
        chunk = self._chunk_function(lam, kinds, free, result)
        hidden = self.mod.hidden("_room")
        args = [self.atom(ir.Var(n)) for n in free] + hidden
        n = self.mod.fresh("n")
        if self.mod.closures.used:  # a callee the chunk made uses the closure heap: serial after all
            self.mod.reassociated.discard(chunk)
            self._serial_call(chunk, n, size, accs, arrays, floats, args)
            return True
        nt, ok, par, guard = self.mod.fresh("nt"), self.mod.fresh("ok"), self.mod.fresh("par"), self.mod.fresh("guard")
        parts = {k: self.mod.fresh("P") for k in arrays}
        sums, done = self.mod.fresh("F"), self.mod.fresh("S")
        self.emit(f"{n} = {size}")
        self.emit(f"{nt} = min({count}, {n})")
        self.emit(f"{ok} = False")
        self.emit(f"if {nt} > 1:")
        em = self.indented()
        for k in arrays:
            em.emit(f"{parts[k]} = _np.zeros(({nt},) + {accs[k]}.shape)")
        em.emit(f"{sums} = _np.zeros(({nt}, {max(len(floats), 1)}))")
        em.emit(f"{done} = _np.zeros({nt}, dtype=_np.bool_)")
        em.emit(f"{par}({', '.join([n, nt] + [parts[k] for k in arrays] + [sums, done] + args)})")
        em.emit(f"{ok} = True")
        c = self.mod.fresh("c")
        em.emit(f"for {c} in range({nt}):")
        em.indented().emit(f"{ok} = {ok} and {done}[{c}]")
        em.emit(f"if {ok}:")
        add = em.indented()
        add.emit(f"for {c} in range({nt}):")
        for k in arrays:
            add.indented().emit(f"{accs[k]} += {parts[k]}[{c}]")
        for j, k in enumerate(floats):
            add.indented().emit(f"{accs[k]} += {sums}[{c}, {j}]")
        if not arrays and not floats:
            add.indented().emit("pass")
        self.emit(f"if not {ok}:")
        self.indented()._serial_call(chunk, n, None, accs, arrays, floats, args)
        self._par_functions(chunk, guard, par, [f"_P{k}" for k in arrays], len(floats), len(free))
        return True

    def _serial_call(self, chunk: str, n: str, size: str | None, accs: list[str], arrays: list[int],
                     floats: list[int], args: list[str]) -> None:
        """The whole sum by one call of the chunk function, into the accumulators."""
        if size is not None:
            self.emit(f"{n} = {size}")
        r = self.mod.fresh("r")
        self.emit(f"{r} = {chunk}({', '.join(['0', n] + [accs[k] for k in arrays] + args)})")
        for j, k in enumerate(floats):
            self.emit(f"{accs[k]} = {r}[{j}]")

    def _chunk_function(self, lam: ir.Lam, kinds: list[Type], free: list[str], result: Type) -> str:
        """``_chunkN(lo, hi, array accumulators…, free variables…, hidden…)``: the serial sum of
        lam's body over lo ≤ i < hi, added into the array accumulators; returns the Float ones."""
        fn = Function(self.mod.fresh("chunk"), [])
        env: dict[str, str] = {}
        own = [self.mod.fresh("acc") for _ in kinds]
        fn.params = ["_lo", "_hi"] + [own[k] for k, leaf in enumerate(kinds) if isinstance(leaf, TTensor)] \
            + [self.mod.bind(env, x) for x in free] + self.mod.hidden("_room")
        self.mod.functions.append(fn)
        self.mod.reassociated.add(fn.name)
        em = type(self)(self.mod, fn, env)
        for k, leaf in enumerate(kinds):
            if not isinstance(leaf, TTensor):
                em.emit(f"{own[k]} = {'0.0' if leaf == FLOAT else '()'}")
        em.sum_loop("_lo, _hi", lam, own, result)
        floats = [own[k] for k, leaf in enumerate(kinds) if leaf == FLOAT]
        em.emit(f"return ({''.join(f + ', ' for f in floats)})")
        return fn.name

    def _par_functions(self, chunk: str, guard: str, par: str, parts: list[str], floats: int, free: int) -> None:
        """``_guardN`` (a chunk under ``try``: whether it finished) and ``_parN`` (the prange loop)."""
        xs = [f"_x{k}" for k in range(free)] + self.mod.hidden("_room")
        g = Function(guard, ["_lo", "_hi"] + parts + ["_f"] + xs)
        g.lines = [(line, None) for line in (
            "    try:",
            f"        _r = {chunk}({', '.join(['_lo', '_hi'] + parts + xs)})",
            "    except Exception:",
            "        return False",
            *[f"    _f[{j}] = _r[{j}]" for j in range(floats)],
            "    return True")]
        p = Function(par, ["_n", "_nt"] + parts + ["_F", "_S"] + xs)
        bounds = "_n * _c // _nt, _n * (_c + 1) // _nt"
        p.lines = [(line, None) for line in (
            "    for _c in _prange(_nt):",
            f"        _S[_c] = {guard}({', '.join([bounds] + [f'{q}[_c]' for q in parts] + ['_F[_c]'] + xs)})")]
        self.mod.functions += [g, p]
        self.mod.parallel.add(par)
        passive_threads()
