"""The dual-number translation shared by dualfwd, deltarev1, deltarev2 and
deltarev (Krawiec et al., Provably correct, asymptotically efficient, higher-order
reverse-mode AD, POPL 2022):

    Γ ⊢ e : A   ↦   D[Γ] ⊢ D[e] : D[A]        D[Float] = (Tuple Float image)

and D maps Integer/Bool/String to themselves, and ×, +, →, Vec homomorphically
(:func:`.dual_types.dual_type`).  Fig. 3 (forward), Fig. 5 (D1), Fig. 7 (D2) and
Fig. 9 (D) are one translation that differs only at the reals — a literal and
a primitive — which :class:`Reals` describes.  Every other construct maps to
itself with its parts translated; the cases below are in Fig. 3's order.

Note [The monad as the tape]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Fig. 9 translates into a state monad ``M A = State → (A, State)`` whose state
is the list of Delta bindings.  Our IR is strict and evaluates lets, tuples and
arguments left to right, so ``x ← m; k`` is ``let x = m in k`` and the state
can live in the run time: ``deltaLet`` appends to the tape of the current run
(as §7.3 realises the state: a mutable tape per run).  D[e] is then the same program as Fig. 9's
with ``ret`` and ``>>=`` erased, and D[A → B] = D[A] → D[B].  ``deltaLet`` is
marked impure so the optimiser never moves, drops or merges it.

Calls of user functions go to their translation ``[image f]`` (``[dual f]``,
``[delta f]`` …), made once per function (§7.5, separate compilation);
recursion needs nothing special (§10.3).  Vector arithmetic reaches this pass
already reduced to build/index and scalar primitives (:mod:`.scalarise`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, get, let, tup
from ..ir.names import DerivedName, erase_types
from ..ir.traverse import FreshNames, substitute
from ..ir.types import FLOAT, INTEGER, TLam, TSum, TTensor, TTuple, Type
from ..opt.anf import desugar_for_ad, rename_apart, spread_arguments
from ..opt.simplify import is_zero, simplify
from ..types.checker import Functions, check_def, check_expr
from ..types.primitives import Primitive, args_of, lookup
from ..types.tangent import is_constant_tangent, tangent_type
from ..util.deep import deep
from .dual_types import constant, dual_type, primal
from .pipeline import ORIGINAL, Pass, Work
from .scalarise import REDUCTIONS, scalarise


@dataclass(frozen=True)
class Reals:
    """What one algorithm does at the reals."""
    algorithm: str                               # the user-facing name, for messages
    derivation: str                              # the translation's name: [derivation f]
    image: Type                                  # the type of a real's derivative part
    zero: ir.Expr                                # a literal's derivative part
    scale: Callable[[ir.Expr, ir.Expr], ir.Expr]  # ∂ · u
    add: Callable[[ir.Expr, ir.Expr], ir.Expr]    # u1 + u2
    share: Callable[[ir.Expr], ir.Expr] = lambda d: d  # deltaLet, for deltarev

    def combine(self, terms: list[tuple[ir.Expr, ir.Expr]], fresh: FreshNames | None = None) -> ir.Expr:
        """Σ ∂_i · u_i (Fig. 14, one output), shared when compound; ``fresh`` names
        binders a subclass may make (Smeding & Vákár's backpropagators)."""
        if not terms:
            return self.zero
        parts = [u if _is_one(d) else self.scale(d, u) for d, u in terms]
        total = parts[0]
        for p in parts[1:]:
            total = self.add(total, p)
        return total if len(parts) == 1 and _is_one(terms[0][0]) else self.share(total)


def _is_one(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.value == 1.0 and e.ctype == FLOAT


def unsupported(reals: Reals, what: str, e: ir.Expr) -> LabrysError:
    return LabrysError(f"{reals.algorithm} does not support {what}", e.span)


class Translation:
    def __init__(self, reals: Reals, functions: Functions, fresh: FreshNames, partials: dict) -> None:
        self.reals, self.functions, self.fresh = reals, functions, fresh
        self.partials_made = partials  # (primitive, argument types, outputs) -> ∂_i f_j, per program

    def type(self, t: Type) -> Type:
        return dual_type(t, self.reals.image)

    def expr(self, e: ir.Expr) -> ir.Expr:
        go = self.expr
        match e:
            case ir.Var(name):
                return ir.Var(name, span=e.span)
            case ir.Lam(v, t, body):
                return ir.Lam(v, self.type(t), go(body), span=e.span)
            case ir.App(f, a):
                return ir.App(go(f), go(a), span=e.span)
            case ir.Let(binder, rhs, body):
                return ir.Let(binder, go(rhs), go(body), span=e.span)
            case ir.Tuple(elems):
                return ir.Tuple(tuple(go(x) for x in elems), span=e.span)
            case ir.Get(i, n, a):
                return ir.Get(i, n, go(a), span=e.span)
            case ir.Inj(left, t, a):
                return ir.Inj(left, self.type(t), go(a), span=e.span)
            case ir.Case(s, lv, lb, rv, rb):
                return ir.Case(go(s), lv, go(lb), rv, go(rb), span=e.span)
            case ir.Const(_, ctype):
                return tup(e, self.reals.zero) if ctype == FLOAT else e
            case ir.If(c, t, f):
                return ir.If(go(c), go(t), go(f), span=e.span)
            case ir.Assert(c, body):
                return ir.Assert(go(c), go(body), span=e.span)
            case ir.FnRef(f):
                if lookup(f) is not None or isinstance(f, DerivedName):
                    raise unsupported(self.reals, f"(fn {f}) of a primitive or derived function", e)
                return ir.FnRef(DerivedName(self.reals.derivation, erase_types(f)), span=e.span)
            case ir.Call(f, a):
                prim = lookup(f)
                if prim is not None:
                    return self.primitive(prim, e)
                if isinstance(f, DerivedName):
                    raise unsupported(self.reals, f"a call of the derived function [{f.derivation} ...]", e)
                written = self.hand_written(e)
                if written is not None:
                    return self.custom(e, written)
                return ir.Call(DerivedName(self.reals.derivation, erase_types(f)), go(a), span=e.span)
        raise TypeError(f"not an expression: {e!r}")

    # --- primitives: Fig. 3's +_R and ×_R, generalised by Fig. 14 ---------------

    def primitive(self, prim: Primitive, e: ir.Call) -> ir.Expr:
        s, t = e.arg.type, e.type
        if prim.name == "Vec_init" and not isinstance(s, TTuple):  # one element: (Vec_init x) of a
            return C("constVec", ir.Const(1, INTEGER), self.expr(e.arg))  # dual pair would read as two
        if prim.structural:
            return ir.Call(e.func, self.expr(e.arg), span=e.span)
        if prim.nondiff or is_constant_tangent(t):
            v = self.fresh("v")
            image, zero = self.reals.image, self.reals.zero
            inner = ir.Call(e.func, primal(V(v), s, image, self.fresh, e.span), span=e.span)
            return let(v, self.expr(e.arg), constant(inner, t, zero, image, self.fresh, e.span))
        arg_types = args_of(s, len(s.elems)) if isinstance(s, TTuple) else (s,)
        outs = t.elems if isinstance(t, TTuple) else (t,)
        if "fwd" not in prim.rules or not all(a == FLOAT or is_constant_tangent(a) for a in arg_types) \
                or not all(o == FLOAT for o in outs):
            raise unsupported(self.reals, f"'{prim.name}' on {s} (only scalar primitives, build, index "
                              "and fold reach the dual-number translation)", e)
        return self.scalar(prim, e, arg_types, outs)

    def scalar(self, prim: Primitive, e: ir.Call, arg_types: tuple[Type, ...], outs: tuple[Type, ...]):
        """Fig. 14: y = f x; each output j is (y_j, Σ_i ∂_i f_j(x) · u_i).  A literal's
        derivative part is known to be zero, so its term is left out."""
        several = isinstance(e.arg.type, TTuple)
        parts = e.arg.elems if several and isinstance(e.arg, ir.Tuple) else None
        binds: list[tuple] = []
        if parts is None:  # one argument, or a tuple-valued expression: take it apart
            whole = self.fresh("v")
            binds.append((whole, self.expr(e.arg)))
            parts = [get(k + 1, len(arg_types), V(whole)) for k in range(len(arg_types))] if several \
                else [V(whole)]
        else:
            parts = [self.expr(p) for p in parts]
        xs: list[ir.Expr] = []
        us: list[ir.Expr | None] = []
        for part, a in zip(parts, arg_types):
            if a == FLOAT and isinstance(part, ir.Tuple) and isinstance(part.elems[0], ir.Const):
                xs.append(part.elems[0])  # a literal (r, zero)
                us.append(None)
            elif a == FLOAT:
                x, u = self.fresh("x"), self.fresh("u")
                binds.append(((x, u), part))
                xs.append(V(x))
                us.append(V(u))
            else:
                xs.append(part if isinstance(part, (ir.Var, ir.Const)) else V(self.fresh("k")))
                if xs[-1] is not part:
                    binds.append((xs[-1].name, part))
                us.append(None)
        y = self.fresh("y")
        partials = self.partials(prim, arg_types, len(outs), xs, V(y))
        duals = []
        for j, out in enumerate(partials):
            yj = get(j + 1, len(outs), V(y)) if len(outs) > 1 else V(y)
            terms = [(d, u) for d, u in zip(out, us) if d is not None and u is not None]
            duals.append(tup(yj, self.reals.combine(terms, self.fresh)))
        body = let(y, ir.Call(e.func, tup(*xs) if several else xs[0], span=e.span),
                   tup(*duals) if len(outs) > 1 else duals[0])
        for binder, rhs in reversed(binds):
            body = let(binder, rhs, body)
        return body

    def partials(self, prim: Primitive, arg_types: tuple[Type, ...], n_out: int, xs: list[ir.Expr],
                 y: ir.Expr):
        """∂_i f_j(x) at the arguments xs and result y (None where structurally zero: no Scale 0)."""
        key = (prim.name, arg_types, n_out)
        if key not in self.partials_made:
            self.partials_made[key] = _partials(prim, arg_types, n_out, self.functions)
        table = self.partials_made[key]
        sub = {f"x{k}": x for k, x in enumerate(xs)} | {"y": y}
        return [[None if d is None else substitute(d, sub) for d in row] for row in table]

    # --- Note [Hand-written derivatives] --------------------------------------------
    # AD-MAP asks every algorithm to use a derivative the user wrote, (def [fwd g] ..)
    # or (def [rev g] ..), instead of differentiating g.  For g between tuples of
    # Floats (and leaves), the call becomes Fig. 14's rule with g's partials taken
    # from the user's derivative: dualfwd calls [dualfwd g] / [fwd g] once with the
    # tangents; the reverse versions call [<alg> g] / [rev g] once per real of g's
    # result (a row of the Jacobian each) and build the Delta from the rows.  Over
    # vectors the number of reals is not static, and g's body is differentiated.

    def hand_written(self, e: ir.Call) -> DerivedName | None:
        s, t = e.arg.type, e.type
        if not (_flat(s) and _flat(t)) or not _real_paths(s):
            return None
        forward = self.reals.derivation == "dual"
        names = (self.reals.algorithm, "fwd") if forward else (self.reals.algorithm, "rev")
        for name in names:
            derived = DerivedName(name, erase_types(e.func))
            sig = self.functions.resolve(derived, TTuple((s, tangent_type(s if forward else t))))
            if sig is not None and isinstance(getattr(sig, "decl", None), ir.Def):
                return derived
        return None

    def custom(self, e: ir.Call, derived: DerivedName) -> ir.Expr:
        s, t, fresh = e.arg.type, e.type, self.fresh
        v, x, y = fresh("v"), fresh("x"), fresh("y")
        ins, outs = _real_paths(s), _real_paths(t)
        us = [get(2, 2, _at(V(v), p)) for p in ins]
        if self.reals.derivation == "dual":
            dy = fresh("dy")
            tangent = _fill(tangent_type(s), {p: u for p, u in zip(ins, us)}, lambda: ir.Tuple(()))
            parts = {p: tup(_at(V(y), p), _at(V(dy), p)) for p in outs}
            body = let(dy, ir.Call(derived, tup(V(x), tangent)), _fill(t, parts, None, V(y)))
        else:
            rows = [fresh("row") for _ in outs]
            parts = {p: tup(_at(V(y), p), self.reals.combine([(_at(V(r), q), u) for q, u in zip(ins, us)], fresh))
                     for p, r in zip(outs, rows)}
            body = _fill(t, parts, None, V(y))
            for j, r in reversed(list(enumerate(rows))):
                onehot = _fill(tangent_type(t), {p: ir.Const(1.0 if k == j else 0.0, FLOAT)
                                                 for k, p in enumerate(outs)}, lambda: ir.Tuple(()))
                body = let(r, ir.Call(derived, tup(V(x), onehot)), body)
        image, span = self.reals.image, e.span
        return let(v, self.expr(e.arg), let(x, primal(V(v), s, image, fresh, span),
                                            let(y, ir.Call(e.func, V(x), span=span), body)))


def _flat(t: Type) -> bool:
    """Floats, leaves and tuples of them: types whose reals sit at static positions."""
    return isinstance(t, TTuple) and all(map(_flat, t.elems)) or t == FLOAT or is_constant_tangent(t) \
        and not isinstance(t, (TLam, TTensor, TSum))


def _real_paths(t: Type, here: tuple = ()) -> list[tuple]:
    if t == FLOAT:
        return [here]
    if isinstance(t, TTuple):
        return [p for k, e in enumerate(t.elems) for p in _real_paths(e, here + ((k, len(t.elems)),))]
    return []


def _at(e: ir.Expr, path: tuple) -> ir.Expr:
    for k, n in path:
        e = get(k + 1, n, e)
    return e


def _fill(t: Type, parts: dict, leaf, source: ir.Expr | None = None, here: tuple = ()) -> ir.Expr:
    """A value of shape t with parts[path] at each real; leaves from leaf() or source."""
    if here in parts:
        return parts[here]
    if isinstance(t, TTuple) and t.elems and not is_constant_tangent(t):
        return tup(*(_fill(e, parts, leaf, source, here + ((k, len(t.elems)),)) for k, e in enumerate(t.elems)))
    return leaf() if leaf is not None else _at(source, here)


def _partials(prim: Primitive, arg_types: tuple[Type, ...], n_out: int, functions: Functions) -> list[list]:
    """∂_i f_j in the variables x0, x1, … and the result y: the fwd rule at one-hot
    tangents, simplified."""
    xs = tuple(ir.Var(f"x{k}", type=t) for k, t in enumerate(arg_types))
    result_type = prim.typeof(TTuple(arg_types) if len(arg_types) > 1 else arg_types[0])
    env = {**{x.name: t for x, t in zip(xs, arg_types)}, "y": result_type}
    out: list[list] = [[None] * len(xs) for _ in range(n_out)]
    for i, a in enumerate(arg_types):
        if a != FLOAT:
            continue
        dargs = tuple(ir.Const(1.0 if k == i else 0.0, FLOAT) if t == FLOAT else ir.Tuple(())
                      for k, t in enumerate(arg_types))
        column = simplify(check_expr(prim.rules["fwd"](xs, dargs, arg_types, V("y")), functions, env))
        for j in range(n_out):
            d = simplify(check_expr(get(j + 1, n_out, column), functions, env)) if n_out > 1 else column
            out[j][i] = None if is_zero(d) else d
    return out


@deep
def translate_def(d: ir.Def, reals: Reals, functions: Functions, fresh: FreshNames, partials: dict) -> ir.Def:
    """``[derivation f] = D[body of f]``, untyped (the caller type-checks it)."""
    tr = Translation(reals, functions, fresh, partials)
    params = tuple(ir.Param(p.name, tr.type(p.type), span=p.span) for p in d.params)
    name = DerivedName(reals.derivation, erase_types(d.name))
    return ir.Def(name, tr.type(d.ret), params, tr.expr(d.body), span=d.span)


# --- the pipelines: the translation [image f], and an algorithm's wrapper ------------


def translation_pipeline(reals: Reals) -> tuple[Pass, ...]:
    def apart(d: ir.Def, work: Work) -> ir.Def:  # the final simplify floats lets: no binder may shadow another
        d = check_def(d.with_body(desugar_for_ad(d.body, work.fresh)), work.functions)
        return d.with_body(rename_apart(spread_arguments(d.body, work.fresh), work.fresh))

    def translate(d: ir.Def, work: Work) -> ir.Def:
        return translate_def(d, reals, work.functions, work.fresh, work.generator.memo.setdefault("partials", {}))

    def optimise(d: ir.Def, work: Work) -> ir.Def:
        return d.with_body(simplify(d.body))

    name = f"[{reals.derivation} f]"
    return (Pass("apart", "Binders renamed apart", apart),
            Pass("scalarise", "Vector arithmetic as build, index and ifold (§10.2)",
                 lambda d, work: scalarise(d, work.fresh, work.functions)),
            Pass("translate", f"Translated: {name}", translate),
            Pass("optimise", f"Optimised: {name}", optimise))


def wrapper_pipeline(reals: Reals, wrapper: Callable[[ir.Def], ir.Def], figure: str) -> tuple[Pass, ...]:
    """The wrapper [algorithm f] calls [image f]; the translation's stages are shown before it."""
    views = tuple(replace(p, view=True) for p in translation_pipeline(reals))
    return (*views, Pass("wrapper", f"The wrapper [{reals.algorithm} f] ({figure})",
                         lambda d, work: wrapper(d), source=ORIGINAL))



def translation_signature(reals: Reals):
    """[image f] : D[S] → D[T]."""
    return lambda s, t: (dual_type(s, reals.image), dual_type(t, reals.image))


def treats(prim: Primitive) -> str:
    """How the dual-number translations treat a call of ``prim`` (registry.coverage)."""
    if prim.structural:
        return "structural"
    if prim.nondiff:
        return "zero"
    if prim.name in REDUCTIONS or prim.name == "ts_sumbuild":  # desugared first: opt.anf.desugar_for_ad
        return "own rule"
    return "rule" if "fwd" in prim.rules else "no rule"
