"""Single faults planted in the *structural* cases of the algorithms — the
let/if/tuple/projection/call/loop rules, not the primitives' derivative rules
(those are tests/mutation/mutants.py).

A structural mutant wraps one case of one algorithm's translation (a method
that dispatches on the construct, one case per construct in the paper's
figure order) and changes what that case produces, every time it fires:

- ``neg``:    flip the sign of the derivative it produces;
- ``scale2``: scale it by 2;
- ``zero``:   drop it (a zero derivative, or no contribution at all);
- ``drop0``/``drop1``: drop one of two terms the case adds (``lmAdd``);
- ``swap``:   swap two of its parts (the branches of an ``if``, two
              components of a tuple, the cotangents of a sum's two terms).

Families (which algorithms each one's cases reach):

- ``nabla``     — Knossos ∇ (Ellis et al. Fig. 6, :class:`labrys.ad.jacobian.Nabla`):
  the linear map of each construct; shared by ``fwd``, ``fwdt``, ``rev``.
  A fault composes the map with ``lmScale`` (−1, 2) or replaces it by ``lmZero``.
- ``transpose`` — the transposition of Knossos's linear maps
  (:meth:`labrys.ad.linear.Transposer.reverse`): ``rev`` only.  A fault
  changes the cotangent a case receives (``ts_neg``, ``ts_scale 2``), drops
  the case's contributions, or one term of an ``lmAdd``.
- ``apply``, ``closed`` — applying a closed linear map to a tangent
  (``Transposer.apply_lm``: ``fwd``, ``fwdt``) and transposing one
  (``Transposer.reverse_lm``: ``rev``), one case per linear-map former
  (``lmCompose``, ``lmAdd``, ``lmVCat``, ``lmHCat``, ``lmBuild``, ``lmScale``,
  ``lmOne``): a fault negates, doubles or zeroes what the case returns, or
  keeps one term of an ``lmAdd``.
- ``dual``      — Krawiec et al.'s dual-number translation
  (:meth:`labrys.ad.dual_numbers.Translation.expr`): ``dualfwd``,
  ``deltarev1``, ``deltarev2``, ``deltarev``.  A fault rewrites the
  derivative part of a Float the case produces: ``scale(-1, u)``,
  ``scale(2, u)`` (the algorithm's own ∂·u) or the algorithm's zero.
- ``chadfwd``, ``chadrev`` — CHAD's translations (Vákár & Smeding,
  :class:`labrys.ad.chad_fwd.Fwd`, :class:`labrys.ad.chad_rev.Rev`): a fault
  rewrites the linear map a Float term comes with (scaled by −1 or 2, or
  zero).
- ``split``     — split reverse mode (BOG AD, Ellis et al. §11,
  :meth:`labrys.ad.bog.Split.binding`): a fault rewrites one of the reverse
  bindings (∂a = value) the case of a binding emits: ``ts_neg``,
  ``ts_scale 2`` or ``ts_scale 0`` of the value; ``sufrev``.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from labrys.ad import bog, chad_fwd, chad_rev, jacobian, linear
from labrys.ad.dual_numbers import Translation
from labrys.ad.dualrev_common import BPReals
from labrys.ir import nodes as ir
from labrys.ir.build import C, V, get, let, tup
from labrys.ir.nodes import const
from labrys.ir.types import FLOAT, TLM
from mutation.mutants import SCALE, scaled
from mutation.structural_cases import chad_case, chad_mutate, dual_case, nabla_case, wrap_lm, wrap_split
from mutation.structural_dualrev import dual_part_fault, dualrev_mutants, planted_dualrev


@dataclass(frozen=True)
class StructuralMutant:
    family: str   # nabla, transpose, dual
    case: str     # the construct: let, if, tuple, get, call, build, sumbuild, fold, compose, add, vcat, lam, ...
    op: str       # neg, scale2, zero, drop0, drop1, swap
    site: int = 0  # which part of the case (a branch, a tuple component, a fold's argument)

    def describe(self) -> str:
        part = f" (part {self.site + 1})" if self.site else ""
        what = {"neg": "sign flipped", "scale2": "scaled by 2", "zero": "dropped", "drop0": "first term dropped",
                "drop1": "second term dropped", "swap": "parts swapped", "drop": "term dropped",
                "reuse": "the ID counter not bumped", "first": "only the first output seeded"}[self.op]
        return f"{self.family} {self.case}{part}: {what}"


# --- Knossos ∇: the linear map each construct makes -----------------------------------------

def _lm_fault(nabla: jacobian.Nabla, m: ir.Expr, target: ir.Expr, op: str) -> ir.Expr:
    """The linear map m (into the tangent space of ``target``'s type) with the fault op."""
    if op == "zero":
        return nabla.zero(target)
    return C("lmCompose", C("lmScale", target, const(SCALE[op])), m)


def _nabla_mutate(nabla: jacobian.Nabla, e: ir.Expr, out: ir.Expr, m: StructuralMutant, env: Any) -> ir.Expr | None:
    """out = ∇⟦e⟧ with m planted; None where the case has no such site."""
    op, site = m.op, m.site
    if m.case == "let" and isinstance(out, ir.Let) and isinstance(out.body, ir.Let) and site == 0:
        inner = out.body  # let binder = rhs; let ∂binder = ∇rhs; ...
        return ir.Let(out.binder, out.rhs, ir.Let(inner.binder, _lm_fault(nabla, inner.rhs, e.rhs, op), inner.body))
    if m.case == "if" and isinstance(out, ir.If):
        if op == "swap":
            return ir.If(out.cond, out.orelse, out.then) if site == 0 else None
        if site == 0:
            return ir.If(out.cond, _lm_fault(nabla, out.then, e.then, op), out.orelse)
        if site == 1:
            return ir.If(out.cond, out.then, _lm_fault(nabla, out.orelse, e.orelse, op))
        return None
    if m.case == "tuple" and isinstance(out, ir.Call) and out.func == "lmVCat":
        parts = list(out.arg.elems) if isinstance(out.arg, ir.Tuple) else [out.arg]
        if op == "swap":
            same = [k for k in range(1, len(parts)) if e.elems[k].type == e.elems[0].type]
            if site != 0 or not same:
                return None
            k = same[0]
            parts[0], parts[k] = parts[k], parts[0]
        elif site < len(parts):
            parts[site] = _lm_fault(nabla, parts[site], e.elems[site], op)
        else:
            return None
        return C("lmVCat", *parts)
    if m.case in ("get", "call") and op != "swap" and site == 0:
        return _lm_fault(nabla, out, e, op)
    if m.case in ("build", "sumbuild") and isinstance(out, ir.Call) and op != "swap" and site == 0:
        n, body, w = out.arg.elems
        f = e.arg.elems[1]
        inner = body.body  # let ∂i = 0 in ∇⟦body⟧
        new = ir.Let(inner.binder, inner.rhs, _lm_fault(nabla, inner.body, f.body, op))
        return C(out.func, n, ir.Lam(body.var, body.var_type, new), w)
    if m.case == "fold" and isinstance(out, ir.Call) and op != "swap":
        step, jac, a0, v, m_a0, m_v = out.arg.elems
        if site == 0:  # the step's Jacobian
            inner = jac.body
            new_jac = ir.Lam(jac.var, jac.var_type, ir.Lam(inner.var, inner.var_type,
                                                           _lm_fault(nabla, inner.body, e.arg.elems[0].body, op)))
            return C("lmFold", step, new_jac, a0, v, m_a0, m_v)
        if site == 1:
            return C("lmFold", step, jac, a0, v, _lm_fault(nabla, m_a0, a0, op), m_v)
        if site == 2:
            return C("lmFold", step, jac, a0, v, m_a0, _lm_fault(nabla, m_v, v, op))
    return None


# --- Knossos transposition: the cotangent each linear map's case receives --------------------

def _transpose_case(m: ir.Expr) -> str | None:
    match m:
        case ir.Let(_, rhs, _) if isinstance(rhs.type, TLM):
            return "let"
        case ir.If():
            return "if"
        case ir.Call("lmCompose", _):
            return "compose"
        case ir.Call("lmAdd", _):
            return "add"
        case ir.Call("lmVCat", _):
            return "vcat"
        case ir.Call("lmFold", _):
            return "fold"
        case ir.Call("lmBuild" | "lmSumBuild", _):
            return "build"
    return None


# --- Krawiec et al.: the derivative part of a Float a case produces --------------------------

def _dual_fault(tr: Translation, out: ir.Expr, op: str) -> ir.Expr:
    """A translated Float (a dual pair) with its derivative part changed."""
    p = tr.fresh("mut")
    d = get(2, 2, V(p))
    if isinstance(tr.reals, BPReals):  # Smeding & Vákár: a backpropagator is built in one piece
        new = dual_part_fault(tr, d, op)
    else:
        new = tr.reals.zero if op == "zero" else tr.reals.scale(const(SCALE[op]), d)
    return let(p, out, tup(get(1, 2, V(p)), new))


def _dual_mutate(tr: Translation, e: ir.Expr, out: ir.Expr, m: StructuralMutant) -> ir.Expr | None:
    op, site = m.op, m.site
    if m.case == "let" and isinstance(out, ir.Let) and site == 0 and e.rhs.type == FLOAT and op != "swap":
        return ir.Let(out.binder, _dual_fault(tr, out.rhs, op), out.body, span=out.span)
    if m.case == "if" and isinstance(out, ir.If) and e.type == FLOAT:
        if op == "swap":  # the derivative parts of the two branches exchanged
            if site:
                return None
            a, b = tr.fresh("mt"), tr.fresh("mf")
            return let(a, out.then, let(b, out.orelse, ir.If(out.cond, tup(get(1, 2, V(a)), get(2, 2, V(b))),
                                                            tup(get(1, 2, V(b)), get(2, 2, V(a))))))
        if site == 0:
            return ir.If(out.cond, _dual_fault(tr, out.then, op), out.orelse, span=out.span)
        if site == 1:
            return ir.If(out.cond, out.then, _dual_fault(tr, out.orelse, op), span=out.span)
        return None
    if m.case == "tuple" and isinstance(out, ir.Tuple) and op != "swap":
        floats = [k for k, x in enumerate(e.elems) if x.type == FLOAT]
        if site >= len(floats):
            return None
        elems = list(out.elems)
        elems[floats[site]] = _dual_fault(tr, elems[floats[site]], op)
        return ir.Tuple(tuple(elems), span=out.span)
    if m.case == "case" and isinstance(out, ir.Case) and e.type == FLOAT and op != "swap" and site < 2:
        lb = _dual_fault(tr, out.left_body, op) if site == 0 else out.left_body
        rb = _dual_fault(tr, out.right_body, op) if site == 1 else out.right_body
        return ir.Case(out.scrut, out.left_var, lb, out.right_var, rb, span=out.span)
    if m.case == "lam" and isinstance(out, ir.Lam) and e.body.type == FLOAT and op != "swap" and site == 0:
        return ir.Lam(out.var, out.var_type, _dual_fault(tr, out.body, op), span=out.span)
    if m.case in ("get", "app", "call") and e.type == FLOAT and op != "swap" and site == 0:
        return _dual_fault(tr, out, op)
    return None


# --- planting -----------------------------------------------------------------------------------

def _wrap_expr(cls: type, method: str, classify: Callable[[ir.Expr], str | None],
               mutate: Callable[[Any, ir.Expr, ir.Expr, StructuralMutant], ir.Expr | None],
               m: StructuralMutant, fired: list[int]) -> Callable:
    original = getattr(cls, method)

    def mutated(self, e, *rest):
        out = original(self, e, *rest)
        if classify(e) != m.case:
            return out
        new = mutate(self, e, out, m, *rest)
        if new is None:
            return out
        fired[0] += 1
        return new
    return original, mutated


def _wrap_transpose(m: StructuralMutant, fired: list[int]):
    original = linear.Transposer.reverse

    def mutated(self, lm, r, acc, witness, out):
        if _transpose_case(lm) != m.case:
            return original(self, lm, r, acc, witness, out)
        if m.op == "zero":  # the case contributes nothing
            fired[0] += 1
            return None
        if m.op in ("neg", "scale2"):
            fired[0] += 1
            r = self.bind(scaled(m.op, r), out)
            return original(self, lm, r, acc, witness, out)
        if m.case == "add" and m.op in ("drop0", "drop1"):
            fired[0] += 1
            a, b = lm.arg.elems
            return self.reverse(b if m.op == "drop0" else a, r, acc, witness, out)
        if m.case == "if" and m.op == "swap":
            fired[0] += 1
            return original(self, ir.If(lm.cond, lm.orelse, lm.then), r, acc, witness, out)
        return original(self, lm, r, acc, witness, out)
    return original, mutated


TARGETS = {  # family -> (class, method)
    "nabla": (jacobian.Nabla, "expr"),
    "transpose": (linear.Transposer, "reverse"),
    "dual": (Translation, "expr"),
    "dualrev": (Translation, "expr"),
    "chadfwd": (chad_fwd.Fwd, "term"),
    "chadrev": (chad_rev.Rev, "term"),
    "split": (bog.Split, "binding"),
    "apply": (linear.Transposer, "apply_lm"),
    "closed": (linear.Transposer, "reverse_lm"),
}


@contextlib.contextmanager
def planted(m: StructuralMutant) -> Iterator[list[int]]:
    """Install m for the duration; yields a counter of how often it fired."""
    fired = [0]
    if m.family in ("dualrev_op", "dualrev_rt"):
        with planted_dualrev(m, fired):
            yield fired
        return
    cls, method = TARGETS[m.family]
    if m.family == "nabla":
        original, mutated = _wrap_expr(cls, method, nabla_case, _nabla_mutate, m, fired)
    elif m.family in ("dual", "dualrev"):
        original, mutated = _wrap_expr(cls, method, dual_case, _dual_mutate, m, fired)
    elif m.family in ("chadfwd", "chadrev"):
        original, mutated = _wrap_expr(cls, method, chad_case, chad_mutate, m, fired)
    elif m.family == "split":
        original, mutated = wrap_split(m, fired)
    elif m.family in ("apply", "closed"):
        original, mutated = wrap_lm(m, fired, cls, method)
    else:
        original, mutated = _wrap_transpose(m, fired)
    setattr(cls, method, mutated)
    try:
        yield fired
    finally:
        setattr(cls, method, original)


def structural_mutants(families: tuple[str, ...] = ("nabla", "transpose", "apply", "closed", "dual", "chadfwd",
                                                    "chadrev", "split", "dualrev", "dualrev_op", "dualrev_rt")
                       ) -> list[StructuralMutant]:
    """Every structural mutant of the families."""
    out: list[StructuralMutant] = []
    ops = ("neg", "scale2", "zero")
    if "nabla" in families:
        out += [StructuralMutant("nabla", "let", op) for op in ops]
        out += [StructuralMutant("nabla", "if", op, s) for op in ops for s in (0, 1)]
        out += [StructuralMutant("nabla", "if", "swap")]
        out += [StructuralMutant("nabla", "tuple", op, s) for op in ops for s in (0, 1)]
        out += [StructuralMutant("nabla", "tuple", "swap")]
        out += [StructuralMutant("nabla", case, op) for case in ("get", "call", "build", "sumbuild") for op in ops]
        out += [StructuralMutant("nabla", "fold", op, s) for op in ops for s in (0, 1, 2)]
    if "transpose" in families:
        out += [StructuralMutant("transpose", case, op)
                for case in ("let", "if", "compose", "add", "vcat", "fold", "build") for op in ops]
        out += [StructuralMutant("transpose", "add", op) for op in ("drop0", "drop1")]
        out += [StructuralMutant("transpose", "if", "swap")]
    for family in ("apply", "closed"):
        if family in families:
            out += [StructuralMutant(family, case, op) for case in ("compose", "add", "vcat", "hcat", "build", "scale",
                                                                    "one") for op in ops]
            out += [StructuralMutant(family, "add", op) for op in ("drop0", "drop1")]
    if "dual" in families:
        out += _dual_cases("dual")
    for family in ("chadfwd", "chadrev"):
        if family in families:
            out += [StructuralMutant(family, "let", op) for op in ops]
            out += [StructuralMutant(family, case, op, s) for case in ("if", "tuple") for op in ops for s in (0, 1)]
            out += [StructuralMutant(family, case, op) for case in ("get", "app", "call", "case") for op in ops]
    if "split" in families:
        out += [StructuralMutant("split", case, op) for case in ("var", "dup", "get", "if") for op in ops]
        out += [StructuralMutant("split", case, op, s)
                for case in ("tuple", "loop", "call") for op in ops for s in (0, 1)]
    return out + dualrev_mutants(families, StructuralMutant, _dual_cases)


def _dual_cases(family: str) -> list[StructuralMutant]:
    """The dual-number translation's mutants (Krawiec et al.'s, and Smeding & Vákár's)."""
    ops = ("neg", "scale2", "zero")
    return ([StructuralMutant(family, "let", op) for op in ops]
            + [StructuralMutant(family, "if", op, s) for op in ops for s in (0, 1)]
            + [StructuralMutant(family, "if", "swap")]
            + [StructuralMutant(family, "tuple", op, s) for op in ops for s in (0, 1)]
            + [StructuralMutant(family, "case", op, s) for op in ops for s in (0, 1)]
            + [StructuralMutant(family, case, op) for case in ("get", "app", "call", "lam") for op in ops])
