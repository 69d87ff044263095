"""K1, the full Jacobian: ∇ of Ellis, Peyton Jones & Fitzgibbon's working notes on automatic
differentiation (2020), Fig. 6.

    Γ ⊢ e : T   ↦   Γ, ∂Γ ⊢ ∇⟦e⟧ : LM dS dT

where S is the function's argument type and ∂Γ binds, for every variable x
of Γ, the linear map ``∂x : LM dS dX``.  The input is typed, renamed apart
and in A-normal form; the output is an IR expression over the linear-map
vocabulary of :mod:`labrys.prelude.linear_maps`, so ``[D f]`` prints,
type-checks and runs.  Cases follow Fig. 6, plus the rules the figure
misses (``if``, tuple-pattern ``let``, ``∂i = 0`` under ``build``,
``sumbuild``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, get, lam, let
from ..ir.names import DerivedName, Name, erase_types
from ..ir.traverse import FreshNames
from ..ir.types import TLM, Type
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent, tangent_type
from .activity import is_inactive

LOOPS = {"build", "sumbuild", "fold", "map", "map2", "ifold"}  # Knossos's own rules for loops: :meth:`Nabla.loop`


def unsupported(what: str, e: ir.Expr, algorithm: str = "Knossos AD") -> LabrysError:
    return LabrysError(f"{algorithm} does not support {what}", e.span)


@dataclass
class Nabla:
    """∇ for one function: ``witness`` is an expression of its argument type S;
    ``primal`` records, for each ∂-variable made, a typed variable of its primal."""

    witness: ir.Expr
    fresh: FreshNames
    primal: dict[str, ir.Expr] = field(default_factory=dict)
    inactive: set[str] = field(default_factory=set)  # not varied: no ∂-variable (labrys.ad.activity)

    def zero(self, target: ir.Expr) -> ir.Expr:
        return C("lmZero", self.witness, target)

    def var(self, x: ir.Expr, env: dict[str, str]) -> ir.Expr:
        if isinstance(x, ir.Var):
            return self.zero(x) if x.name in self.inactive else V(env[x.name])
        if isinstance(x, (ir.Lam, ir.FnRef)):
            raise unsupported("a function passed as a value (Ellis et al. Fig. 6 has first-order calls only)", x)
        return self.zero(x)  # a constant

    def atoms(self, arg: ir.Expr, env: dict[str, str]) -> ir.Expr:
        """∇ of a call's argument: an atom, or a tuple of atoms (×, n-ary)."""
        if isinstance(arg, ir.Tuple):
            return self.tuple_(arg.elems, env) if arg.elems else self.zero(arg)
        return self.var(arg, env)

    def tuple_(self, elems: tuple[ir.Expr, ...], env: dict[str, str]) -> ir.Expr:
        return C("lmVCat", *(self.var(x, env) for x in elems)) if len(elems) != 1 else \
            C("lmVCat", self.var(elems[0], env))

    def projection(self, i: int, n: int, whole: ir.Expr) -> ir.Expr:
        """π_i : (t1..tn) ⊸ ti as 0 ⋈ .. ⋈ 1 ⋈ .. ⋈ 0, with witnesses projected from ``whole``."""
        parts = [C("lmOne", get(k, n, whole)) if k == i else C("lmZero", get(k, n, whole), get(i, n, whole))
                 for k in range(1, n + 1)]
        return C("lmHCat", *parts)

    def bind(self, x: str, env: dict[str, str], t: Type) -> str:
        env[x] = dx = self.fresh("∂" + x)
        self.primal[dx] = V(x, t)
        return dx

    # --- ∇⟦e⟧, one case per construct of Fig. 6 -----------------------------
    def expr(self, e: ir.Expr, env: dict[str, str]) -> ir.Expr:
        if not isinstance(e, (ir.Let, ir.If, ir.Assert)) and is_constant_tangent(e.type):
            return self.zero(e)
        if self.inactive and not isinstance(e, ir.Let) and is_inactive(e, self.inactive):
            return self.zero(e)
        match e:
            case ir.Const():
                return self.zero(e)
            case ir.Var():
                return self.var(e, env)
            case ir.Call(f, arg):
                return self.call(e, f, arg, env)
            case ir.Tuple(elems):
                return self.tuple_(elems, env) if elems else self.zero(e)
            case ir.Get(i, n, x):
                return C("lmCompose", self.projection(i, n, x), self.var(x, env))
            case ir.Let(binder, rhs, body):
                return self.let(e, binder, rhs, body, env)
            case ir.If(c, t, f):
                return ir.If(c, self.expr(t, env), self.expr(f, env))
            case ir.Assert(c, body):
                return ir.Assert(c, self.expr(body, env))
            case ir.Lam():
                raise unsupported("a lambda outside build, sumbuild or fold (Ellis et al. Fig. 6)", e)
            case ir.App():
                raise unsupported("calling a function value (Ellis et al. Fig. 6)", e)
            case ir.Inj() | ir.Case():
                raise unsupported("sum types", e)
            case ir.FnRef():
                raise unsupported("functions as values", e)
        raise TypeError(f"not an expression: {e!r}")

    def let(self, e: ir.Let, binder, rhs: ir.Expr, body: ir.Expr, env: dict[str, str]) -> ir.Expr:
        if self.inactive and (is_inactive(rhs, self.inactive) or is_constant_tangent(rhs.type)):
            # not varied (or an Integer, Bool, …): a constant, no ∂-variable
            self.inactive.update([binder] if isinstance(binder, str) else binder)
            return let(binder, rhs, self.expr(body, env))
        d_rhs = self.expr(rhs, env)
        if isinstance(binder, str):
            dx = self.bind(binder, env, rhs.type)
            return let(binder, rhs, let(dx, d_rhs, self.expr(body, env)))
        # let (a, b) = rhs:  ∂p = ∇rhs; ∂a = π1 ∘ ∂p; ∂b = π2 ∘ ∂p
        dp, n = self.fresh("∂p"), len(binder)
        whole = ir.Tuple(tuple(V(b, t) for b, t in zip(binder, rhs.type.elems)), type=rhs.type)
        self.primal[dp] = whole
        lms = [(self.bind(b, env, t), C("lmCompose", self.projection(k + 1, n, whole), V(dp)))
               for k, (b, t) in enumerate(zip(binder, rhs.type.elems))]
        out = self.expr(body, env)
        for dx, m in reversed(lms):
            out = let(dx, m, out)
        return let(binder, rhs, let(dp, d_rhs, out))

    def call(self, e: ir.Call, f: Name, arg: ir.Expr, env: dict[str, str]) -> ir.Expr:
        prim = lookup(f)
        if prim is not None and prim.name in LOOPS:
            return self.loop(e, prim.name, arg, env)
        if prim is not None and prim.nondiff:
            return self.zero(e)
        if prim is not None and "fwd" not in prim.rules:
            raise unsupported(f"the primitive '{prim.name}' (it has no derivative rule)", e)
        jac = ir.Call(DerivedName("D", erase_types(f) if prim is None else prim.name), arg)
        return C("lmCompose", jac, self.atoms(arg, env))

    def loop(self, e: ir.Call, name: str, arg: ir.Expr, env: dict[str, str]) -> ir.Expr:
        if name == "fold":
            return self.fold(e, arg, env)
        if name not in ("build", "sumbuild"):
            raise unsupported(f"'{name}' (rewrite it with build or fold)", e)
        n, f = arg.elems
        if not isinstance(f, ir.Lam):
            raise unsupported(f"'{name}' without a literal lambda", e)
        index = n.type   # Integer, or an N-tuple for a Tensor N (Note [Loop linear maps over tensors])
        inner = dict(env)
        if self.inactive:
            self.inactive.add(f.var)
        di = self.bind(f.var, inner, index)
        body = let(di, self.zero(V(f.var, index)), self.expr(f.body, inner))
        return C("lmBuild" if name == "build" else "lmSumBuild", n, lam(f.var, index, body), self.witness)


    def fold(self, e: ir.Call, arg: ir.Tuple, env: dict[str, str]) -> ir.Expr:
        """∇⟦fold(λt.e, a, v)⟧ = lmFold(λt.e, λt.λ∂t.∇⟦e⟧, a, v, ∇a, ∇v)  (Figs. 12-13):
        the step's Jacobian takes ∂t, the linear map of the step's argument."""
        step, a0, v = arg.elems
        if not isinstance(step, ir.Lam):
            raise unsupported("'fold' without a literal lambda", e)
        t, t_type = step.var, step.var_type
        inner = dict(env)
        dt = self.bind(t, inner, t_type)
        jac = lam(t, t_type, lam(dt, TLM(tangent_type(self.witness.type), tangent_type(t_type)),
                                 self.expr(step.body, inner)))
        return C("lmFold", step, jac, a0, v, self.var(a0, env), self.var(v, env))


def param_lms(nabla: Nabla, params: tuple[ir.Param, ...]) -> tuple[dict[str, str], list]:
    """``∂p = 1`` for one parameter; ``∂p_i = 0 ⋈ .. 1 .. ⋈ 0`` (π_i) for several;
    none for an inactive parameter (labrys.ad.activity)."""
    env: dict[str, str] = {}
    for p in params:
        if p.name not in nabla.inactive:
            nabla.bind(p.name, env, p.type)
    if len(params) == 1:
        return env, [(env[params[0].name], C("lmOne", nabla.witness))]
    return env, [(env[p.name], nabla.projection(k + 1, len(params), nabla.witness))
                 for k, p in enumerate(params) if p.name not in nabla.inactive]
