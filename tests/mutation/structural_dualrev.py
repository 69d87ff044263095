"""The structural mutants of Smeding & Vákár's seven versions (``dualrev1`` …
``dualrev5``, ``dualrev``, ``dualrevtape``; Dual-numbers reverse AD,
efficiently): the families ``dualrev``, ``dualrev_op`` and ``dualrev_rt`` of
tests/mutation/structural.py, which plants them.

- ``dualrev``    — the translation's cases (let, if, tuple, projection,
  application, case, lambda, call), shared with Krawiec et al.'s
  (:meth:`labrys.ad.dual_numbers.Translation.expr`).  A version's dual part
  of a Float is a backpropagator built in one piece (``BPReals.build``), so
  the fault is written in the version's own terms as a one-operand op:
  ``combine([(−1 or 2, u)])`` — a new ID (or tag) whose backpropagator
  CALLs u's with the scaled cotangent — or the version's ZERO.
- ``dualrev_op`` — the D rule of a primitive's result (Fig. 9's op case,
  ``BPReals.combine``: ``(ID, λz. CALL(u1)(∂1·z) ⊕ … ⊕ CALL(un)(∂n·z))``):
  one partial negated or doubled, one term dropped, every term dropped (the
  op made a literal), or the operands' dual parts swapped.
- ``dualrev_rt`` — the run time (:mod:`labrys.ad.dualrev_runtime`,
  :mod:`labrys.ad.dualrev_staged`): ⊕ (``oplus`` of D¹'s c values,
  ``drPlusS`` of D²–D³) keeping one operand; CALL (``dr2Call`` …
  ``dr5Call``) with its argument negated, doubled or zeroed; the op's record
  (``drcOp``, ``drtOp``) with its first partial negated or doubled; ZERO and
  ``drNewId`` reusing the last ID instead of drawing a fresh one (pitfall P9);
  Interleave giving the first two input reals each other's ID (or
  backpropagator); Deinterleave seeding the outputs with a negated, doubled or
  only the first cotangent.

Each run-time mutant patches every version's primitive of its kind at once;
the runner counts it for each version whose results it changes.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from labrys.ad import dualrev_runtime, dualrev_staged
from labrys.ad.dual_io import count_reals
from labrys.ad.dualrev_common import BPReals
from labrys.ir import nodes as ir
from labrys.ir.build import C
from labrys.ir.nodes import const
from labrys.types.primitives import PRIMITIVES
from mutation.mutants import SCALE

VERSIONS = ("dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5", "dualrev", "dualrevtape")


def dual_part_fault(tr: Any, d: ir.Expr, op: str) -> ir.Expr:
    """The dual part d of a Float, scaled (−1, 2) or dropped, in a version's own terms."""
    if op == "zero":
        return tr.reals.zero
    return tr.reals.combine([(const(SCALE[op]), d)], tr.fresh)


# --- dualrev_op: the op's dual part (BPReals.combine) --------------------------------------------

def _op_terms(terms: list, op: str, site: int) -> list | None:
    """The op's (∂_k, u_k) terms with the fault; None where it has no such site."""
    if op == "zero":
        return []
    if op == "swap":  # the operands' dual parts exchanged, the partials kept
        if site or len(terms) < 2:
            return None
        (d0, u0), (d1, u1) = terms[0], terms[1]
        return [(d0, u1), (d1, u0)] + terms[2:]
    if site >= len(terms):
        return None
    if op == "drop":
        return terms[:site] + terms[site + 1:] if len(terms) > 1 else None
    d, u = terms[site]
    return terms[:site] + [(C("mul", const(SCALE[op]), d), u)] + terms[site + 1:]


def _wrap_op(m: Any, fired: list[int]):
    original = BPReals.combine

    def mutated(self, terms, fresh=None):
        new = _op_terms(list(terms), m.op, m.site) if terms else None
        if new is None:
            return original(self, terms, fresh)
        fired[0] += 1
        return original(self, new, fresh)
    return BPReals, "combine", original, mutated


# --- dualrev_rt: the run time's ⊕, CALL, ZERO, op records, Interleave, Deinterleave ---------------

def _scaled(op: str, x: float) -> float:
    return 0.0 if op == "zero" else SCALE[op] * x


def _call_fault(op: str) -> Callable:
    """CALL's argument (the cotangent x of ``(drNCall u x …)``) changed."""
    def wrap(impl: Callable) -> Callable:
        def fault(a):
            return impl((a[0], _scaled(op, a[1])) + tuple(a[2:]))
        return fault
    return wrap


def _keep(which: int) -> Callable:
    """⊕ that keeps one operand (the other's contributions are lost)."""
    return lambda impl: (lambda a: a[which])


def _record_fault(op: str) -> Callable:
    """An op's record (u1 ∂1 … un ∂n) with its first partial changed."""
    def wrap(impl: Callable) -> Callable:
        return lambda a: impl((a[0], _scaled(op, a[1])) + tuple(a[2:]))
    return wrap


def _reused_id(who: str) -> Callable:
    """The counter is not bumped by the draw: the next ID (or tag) drawn is this one again."""
    def wrap(impl: Callable) -> Callable:
        def fault(a):
            run = dualrev_runtime.active(who)
            out = impl(a)
            run.next_id -= 1
            return out
        return fault
    return wrap


RT_PRIMS = {  # the run-time case -> the primitives of every version that have it
    "oplus": ("oplus", "drPlusS"),
    "call": ("dr2Call", "dr3Call", "dr4Call", "dr5Call"),
    "record": ("drcOp", "drtOp"),
    "zero": ("dr2Zero", "dr3Zero", "dr4Zero", "dr5Zero", "drcZero", "drtZero"),
    "newid": ("drNewId", "dr2Tag"),
}


def _wrap_impls(prims: tuple[str, ...], fault: Callable, fired: list[int]):
    """Patch each primitive's evaluator; (restore) undoes it."""
    saved = {p: PRIMITIVES[p].impl for p in prims}

    def make(p: str):
        impl = saved[p]

        def patched(t):
            inner = fault(impl(t))

            def counted(a):
                fired[0] += 1
                return inner(a)
            return counted
        return patched
    for p in prims:
        PRIMITIVES[p].impl = make(p)

    def restore():
        for p, impl in saved.items():
            PRIMITIVES[p].impl = impl
    return restore


def _wrap_module(name: str, wrap: Callable[[Callable, list[int]], Callable], fired: list[int]):
    """Patch a run-time helper in both modules that call it."""
    saved = [(mod, getattr(mod, name)) for mod in (dualrev_runtime, dualrev_staged) if hasattr(mod, name)]
    for mod, f in saved:
        setattr(mod, name, wrap(f, fired))

    def restore():
        for mod, f in saved:
            setattr(mod, name, f)
    return restore


def _swapped_inputs(seed_inputs: Callable, fired: list[int]) -> Callable:
    """Interleave with the first two reals of x (where x has two) taking each other's ID."""
    def mutated(version, first, t, leaf):
        plain = seed_inputs(version, first, t, leaf)
        swapped = seed_inputs(version, first, t, lambda run, r, k: leaf(run, r, {0: 1, 1: 0}.get(k, k)))

        def seed(x):
            if count_reals(x, t) < 2:
                return plain(x)
            fired[0] += 1
            return swapped(x)
        return seed
    return mutated


def _seeded(op: str) -> Callable:
    def wrap(output_parts: Callable, fired: list[int]) -> Callable:
        def mutated(y, dt, t):
            parts = output_parts(y, dt, t)
            if not parts:
                return parts
            fired[0] += 1
            if op == "first":
                return parts[:1]
            return [(u, _scaled(op, z)) for u, z in parts]
        return mutated
    return wrap


def _wrap_rt(m: Any, fired: list[int]):
    if m.case in RT_PRIMS:
        fault = {"oplus": lambda: _keep(0 if m.op == "drop1" else 1), "call": lambda: _call_fault(m.op),
                 "record": lambda: _record_fault(m.op), "zero": lambda: _reused_id("ZERO"),
                 "newid": lambda: _reused_id("drNewId")}[m.case]()
        return _wrap_impls(RT_PRIMS[m.case], fault, fired)
    if m.case == "inputs":
        return _wrap_module("seed_inputs", _swapped_inputs, fired)
    return _wrap_module("output_parts", _seeded(m.op), fired)


@contextlib.contextmanager
def planted_dualrev(m: Any, fired: list[int]) -> Iterator[None]:
    if m.family == "dualrev_op":
        cls, name, original, mutated = _wrap_op(m, fired)
        setattr(cls, name, mutated)
        restore = lambda: setattr(cls, name, original)
    else:
        restore = _wrap_rt(m, fired)
    try:
        yield
    finally:
        restore()


def dualrev_mutants(families: tuple[str, ...], make: Callable[..., Any], dual_cases: Callable) -> list:
    """Every mutant of the dualrev families; ``make(family, case, op, site)``, and
    ``dual_cases(family)`` the translation's cases (the ``dual`` family's, renamed)."""
    out: list = []
    if "dualrev" in families:
        out += dual_cases("dualrev")
    if "dualrev_op" in families:
        out += [make("dualrev_op", "op", op, s) for op in ("neg", "scale2", "drop") for s in (0, 1)]
        out += [make("dualrev_op", "op", "zero"), make("dualrev_op", "op", "swap")]
    if "dualrev_rt" in families:
        out += [make("dualrev_rt", "oplus", op) for op in ("drop0", "drop1")]
        out += [make("dualrev_rt", case, op) for case in ("call", "record") for op in ("neg", "scale2", "zero")]
        out += [make("dualrev_rt", case, "reuse") for case in ("zero", "newid")]
        out += [make("dualrev_rt", "inputs", "swap")]
        out += [make("dualrev_rt", "seed", op) for op in ("neg", "scale2", "first")]
    return out
