"""The run time of Smeding & Vákár's dual-numbers reverse AD (Dual-numbers reverse AD,
efficiently, POPL 2023): the ID monad's state, one :class:`Run` per derivative call,
and the data of the two final versions — ``Contrib`` DAGs resolved through the
staging array (``dualrev``, §9.1–9.2) and the tape written in the forward pass
(``dualrevtape``, §9.3).  The stages D¹–D⁵ are in :mod:`.dualrev_staged`.

The generated code only *calls* these primitives; the wrappers' ``…Inputs`` and
``…Gradient`` primitives walk values by type (as Krawiec et al.'s do, and with
their helpers from :mod:`.dual_io`).  Every loop here is iterative (pitfall P11).

Note [The ID monad in the run time]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
From D³ on, every translated term lives in a state monad over the next free ID
(§6.2, Fig. 9: ``⟦t⟧ i = (value, next free ID)``).  As for Krawiec et al.'s tape
(Note [The monad as the tape] in :mod:`.dual_numbers`), our IR is strict and
evaluates lets, tuples and arguments left to right, so the state can live in the
run of the current derivative call: ``drNewId`` (and each version's literal and op
primitives) read and bump ``Run.next_id``.  The translation is then Fig. 9's with
the counter erased from the code: an op's ID is drawn after its operands were
evaluated (its ``in``, pitfall P1), and no closure can capture the counter (P2),
because there is none in the program to capture; ``D[Lam S T] = D[S] → D[T]``.
The wrapper's ``…Inputs`` pushes a fresh Run on the context's stack of runs
(Note [Run-time context]) and ``…Gradient`` pops it, so every call of the
derivative starts from fresh state (P7) and nested derivative runs keep their own.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np

from ..context import count, current
from ..ir.types import CONTRIB, FLOAT, INTEGER, UNIT, TTuple, Type
from ..types.primitives import primitive
from ..values import PrimError
from .dual_io import _gradient_type, _inputs, cotangent_like, map_reals, output_parts


class Run:
    """The state of one derivative call: the ID counter (Fig. 9's monad), and what
    the tests and ``labrys cost`` look at afterwards (``last_run()``)."""
    __slots__ = ("version", "first", "next_id", "inputs", "tape", "calls", "input_calls", "comparisons",
                 "output")

    def __init__(self, version: str, first: int) -> None:
        self.version = version
        self.first = first           # the first input's ID: 0 for D³/D⁴ (Fig. 9), 1 from D⁵ on (P5)
        self.next_id = first
        self.inputs = 0              # the number of input scalars (they hold IDs first … first+inputs−1)
        self.tape: list[Any] = []    # dualrevtape: the entry of ID i at tape[i] (§9.3)
        self.calls: Counter = Counter()  # reverse pass: backpropagator runs per ID (or D²'s tag)
        self.input_calls = 0         # D¹, D²: runs of the input backpropagators (§5.4's 2ⁿ)
        self.comparisons = 0         # D²–D⁴: key comparisons in the staged map (the log factor, §6.3)
        self.output: Any = None      # the forward pass's dual-number output

    def fresh(self) -> int:
        i = self.next_id
        self.next_id = i + 1
        return i

    def __repr__(self) -> str:
        return f"<{self.version} run: IDs {self.first}..{self.next_id - 1}, {self.inputs} inputs>"


def begin(version: str, first: int) -> Run:
    run = Run(version, first)
    current().tapes.append(run)
    return run


def active(who: str) -> Run:
    """The innermost run in progress; generated code called outside one is a user's mistake."""
    tapes = current().tapes
    if not tapes or not isinstance(tapes[-1], Run):
        raise PrimError(f"{who} outside a run of Smeding & Vákár's reverse AD (call the derivative "
                        "[dualrev f], not its translation, from outside)")
    return tapes[-1]


def finish(run: Run) -> None:
    ctx = current()
    if ctx.tapes and ctx.tapes[-1] is run:
        ctx.tapes.pop()
    ctx.last_tape = run


def last_run() -> Run | None:
    """The run of the most recent derivative call of a dualrev version on this thread."""
    last = current().last_tape
    return last if isinstance(last, Run) else None


def seed_inputs(version: str, first: int, t: Type, leaf: Callable[[Run, float, int], Any]) -> Any:
    """Interleave: a fresh Run; the k-th real r of x (left to right) becomes leaf(run, r, k),
    which takes the ID first + k (P8: Integers, Bools and Strings take none)."""
    def seed(x):
        run = begin(version, first)
        k = [0]

        def one(r: float) -> Any:
            out = leaf(run, r, k[0])
            k[0] += 1
            return out
        out = map_reals(x, t, one)
        run.inputs, run.next_id = k[0], first + k[0]
        count(k[0])
        return out
    return seed


def register_io(inputs: str, gradient: str, image: Type, seed: Callable, grad: Callable, what: str) -> None:
    primitive(inputs, _inputs(image), seed, f"({inputs} x): Interleave of {what}: x's reals as dual numbers "
              "with fresh IDs, in a fresh run (Smeding & Vákár).", impure=True)
    primitive(gradient, _gradient_type(image), grad, f"({gradient} x y dt): Deinterleave and resolve of {what}: "
              "the gradient at x from the dual output y and its cotangent dt (Smeding & Vákár).", impure=True)


def gradient_impl(body: Callable[[Run, Any, Any, Type], np.ndarray]) -> Callable[[Type], Callable]:
    """A …Gradient evaluator: run body on the active run with the output's parts, shape
    the input cotangents (one per input scalar, in Interleave's order) like x."""
    def impl(t: Type) -> Callable:
        s, _, dt_type = t.elems

        def gradient(a):
            x, y, dt = a
            run = active("the gradient")
            run.output = y
            try:
                grad = body(run, y, dt, dt_type)
            finally:
                finish(run)
            return cotangent_like(np.asarray(grad, dtype=float), x, s)
        return gradient
    return impl


# --- dualrev: Contrib data and the staging array (§9.1, §9.2) ------------------------
# Contrib = list of (ID, Contrib, partial) (footnote 30); a Python tuple of triples,
# shared by reference: the Contribs of one run form a DAG (Fig. 14), never copied (P10).

EMPTY: tuple = ()
IMAGE = TTuple((INTEGER, CONTRIB))  # D[Float] = (Float, (Integer, Contrib))


def _alternating(image: Type) -> Callable[[Type], Type | None]:
    """(tuple u1 p1 … un pn) with each u an image and each p a Float partial."""
    def typeof(t: Type) -> Type | None:
        if isinstance(t, TTuple) and t.elems and len(t.elems) % 2 == 0 and all(
                t.elems[k] == image and t.elems[k + 1] == FLOAT for k in range(0, len(t.elems), 2)):
            return image
        return None
    return typeof


def _contrib_op(t: Type) -> Callable:
    def op(a):
        run = active("drcOp")
        cb = tuple((a[k][0], a[k][1], a[k + 1]) for k in range(0, len(a), 2))
        return (run.fresh(), cb)
    return op


def _contrib_resolve(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    """Fig. 13 after §9.1–9.2: the staging array holds (Contrib, accumulated cotangent);
    the outputs are staged at their own IDs (P6); then one loop, IDs descending, down
    to 1 (P5); the inputs' cotangents are their slots' accumulators."""
    n = run.next_id
    cbs: list = [EMPTY] * n
    acc = [0.0] * n
    for (i, cb), z in output_parts(y, dt, dt_type):
        cbs[i] = cb
        acc[i] += z
    visited = 0
    for i in range(n - 1, 0, -1):
        cb, a = cbs[i], acc[i]
        if not cb or a == 0.0:  # an input, a literal, or nothing reached it
            continue
        run.calls[i] += 1
        for j, cbj, p in cb:
            cbs[j] = cbj
            acc[j] += a * p
        visited += len(cb)
    count(n + 2 * visited)
    return np.array(acc[1:1 + run.inputs])


primitive("drcZero", lambda t: IMAGE if t == UNIT else None,
          lambda t: lambda _: (active("drcZero").fresh(), EMPTY),
          "(drcZero): dualrev's dual part of a literal: a fresh ID and the empty Contrib (Smeding & Vákár §9.2).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("drcOp", _alternating(IMAGE), _contrib_op,
          "(drcOp u1 p1 … un pn): dualrev's dual part of a primitive's result: a fresh ID (drawn after the "
          "operands) and the Contrib [(ID, Contrib, ∂) of each operand] (Smeding & Vákár §9.2, Fig. 14).",
          cost=lambda r, a: len(a) // 2, nondiff=True, impure=True)
register_io("drcInputs", "drcGradient", IMAGE,
            lambda t: seed_inputs("dualrev", 1, t, lambda run, r, k: (r, (run.first + k, EMPTY))),
            gradient_impl(_contrib_resolve), "dualrev")


# --- dualrevtape: the Contribs on a tape (§9.3) -----------------------------------------
# D[Float] = (Float, Integer): once slot j of the tape holds j's own entry, the Contrib
# field of a triple is redundant (§9.3–9.4), so an entry is a tuple of (ID, ∂) pairs.
# The adjoints live in an array of the reverse pass, apart from the tape (P7).

def _tape_room(run: Run) -> None:
    while len(run.tape) < run.next_id:  # slot 0, and the inputs' slots when there are no inputs
        run.tape.append(EMPTY)


def _tape_zero(t: Type) -> Callable:
    def zero(_):
        run = active("drtZero")
        _tape_room(run)
        run.tape.append(EMPTY)
        return run.fresh()
    return zero


def _tape_op(t: Type) -> Callable:
    def op(a):
        run = active("drtOp")
        _tape_room(run)
        run.tape.append(tuple((a[k], a[k + 1]) for k in range(0, len(a), 2)))
        return run.fresh()
    return op


def _tape_seed(run: Run, r: float, k: int) -> tuple:
    while len(run.tape) <= run.first + k:  # slot 0 is never used; inputs have empty entries
        run.tape.append(EMPTY)
    return (r, run.first + k)


def _tape_sweep(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    tape = run.tape
    adj = [0.0] * len(tape)
    for i, z in output_parts(y, dt, dt_type):
        adj[i] += z
    visited = 0
    for i in range(len(tape) - 1, 0, -1):
        entry, a = tape[i], adj[i]
        if not entry or a == 0.0:
            continue
        run.calls[i] += 1
        for j, p in entry:
            adj[j] += a * p
        visited += len(entry)
    count(len(tape) + 2 * visited)
    return np.array(adj[1:1 + run.inputs])


primitive("drtZero", lambda t: INTEGER if t == UNIT else None, _tape_zero,
          "(drtZero): dualrevtape's ID of a literal, with an empty tape entry (Smeding & Vákár §9.3).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("drtOp", _alternating(INTEGER), _tape_op,
          "(drtOp j1 p1 … jn pn): append the entry [(j1, p1) … (jn, pn)] to dualrevtape's tape; its "
          "index is the result's ID (Smeding & Vákár §9.3).",
          cost=lambda r, a: len(a) // 2, nondiff=True, impure=True)
register_io("drtInputs", "drtGradient", INTEGER,
            lambda t: seed_inputs("dualrevtape", 1, t, _tape_seed), gradient_impl(_tape_sweep), "dualrevtape")


primitive("drNewId", lambda t: INTEGER if t == UNIT else None, lambda t: lambda _: active("drNewId").fresh(),
          "(drNewId): the next free ID of the current run: the ID monad of Smeding & Vákár §6.2, Fig. 9.",
          cost=lambda r, a: 1, nondiff=True, impure=True)
