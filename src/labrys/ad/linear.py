"""K1, from the Jacobian to derivative code: apply ⊙ (Ellis et al. Fig. 4) and
reverse apply ⊙ᴿ (Fig. 5), pushed through a ∇-built linear map until no
linear map is left (Ellis, Peyton Jones & Fitzgibbon's working notes on automatic differentiation, 2020).

    ∂Γ ⊢ M : LM dS dT,  ds : dS   ↦   dΓ ⊢ M ⊙ ds : dT           (Forward)
    ∂Γ ⊢ M : LM dS dT,  dr : dT   ↦   contributions to each ∂x   (Reverse)

Forward (§6.1, "apply-to-dx"): every linear-map variable ∂x is applied to
the input tangent only, so ``let ∂x = m in b`` becomes ``let dx = m ⊙ ds``
and each occurrence of ∂x becomes dx.  Reverse (§6.2, let-transposition):
the body is reversed first, collecting for each ∂x the cotangents that flow
into it; then ``x̄ = Σ contributions`` flows into m.  Loops (B, Σ) and
branches collect their contributions as tuples, so a sparse ``deltaVec``
from ``index`` is accumulated in place: ``rev`` costs O(cost of f).

Both emit flat let-chains (statements appended to ``out``); the optimiser
cleans up what is left.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, get, is_atom, lam, tup
from ..ir.names import DerivedName, erase_types
from ..ir.traverse import FreshNames
from ..ir.types import INTEGER, TLM, TTuple
from ..opt.anf import rename_apart
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent, tangent_type, zero_tangent

Out = list  # of (binder, rhs): a let-chain under construction


def wrap(out: Out, body: ir.Expr) -> ir.Expr:
    for binder, rhs in reversed(out):
        body = ir.Let(binder, rhs, body)
    return body


def spread(e: ir.Expr, n: int, out: Out, fresh: FreshNames) -> tuple[ir.Expr, ...]:
    """The ``n`` components of ``e`` (a tuple literal, or an atom destructured once)."""
    if n == 1:
        return (e,)
    if isinstance(e, ir.Tuple):
        return e.elems
    names = tuple(fresh("c") for _ in range(n))
    out.append((names, e))
    return tuple(V(x) for x in names)


def renamed_witnesses(witness: dict[str, ir.Expr], log: dict[str, str]) -> dict[str, ir.Expr]:
    """The witnesses of ∂-variables after a renaming of binders (``log``: old -> new)."""
    def ren(w: ir.Expr) -> ir.Expr:
        if isinstance(w, ir.Var):
            return V(log.get(w.name, w.name), w.type)
        return ir.Tuple(tuple(map(ren, w.elems)), type=w.type)
    return {log[k]: ren(w) for k, w in witness.items() if k in log}


class Transposer:
    """Apply/reverse-apply for the linear maps of one function."""

    def __init__(self, fresh: FreshNames, witness: dict[str, ir.Expr], ds: ir.Expr | None = None,
                 tupled: bool = False, hand_written: frozenset = frozenset()) -> None:
        self.fresh, self.ds, self.tupled = fresh, ds, tupled
        self.witness = witness  # ∂x ↦ the primal x (∇'s record)
        self.hand_written = hand_written  # functions whose [fwd g] the user wrote: call it, not [fwdt g]
        self.results: dict[int, ir.Expr] = {}  # id of a [D p](a) node ↦ the variable holding p(a)

    def note_result(self, binder: str, rhs: ir.Expr, witness: dict[str, ir.Expr]) -> None:
        """``∂y = [D p](a) ∘ ∂a``: p's rule may use y, the result (Note [Derivative rules])."""
        if isinstance(rhs, ir.Call) and rhs.func == "lmCompose" and binder in witness:
            jac = rhs.arg.elems[0]
            if isinstance(jac, ir.Call) and isinstance(jac.func, DerivedName):
                self.results[id(jac)] = witness[binder]

    def bind(self, e: ir.Expr, out: Out, hint: str = "t") -> ir.Expr:
        if is_atom(e):
            return e
        name = self.fresh(hint)
        out.append((name, e))
        return V(name)

    def sum(self, terms: list[ir.Expr]) -> ir.Expr:
        total = terms[0]
        for t in terms[1:]:
            total = C("ts_add", total, t)
        return total

    # --- the leaves: Jacobians of calls -------------------------------------
    def call_rule(self, jac: ir.Call, v: ir.Expr, out: Out, reverse: bool) -> ir.Expr:
        """[D f](a) ⊙ v  ⇒  fwd$f(a, v)  (A9);  v ⊙ᴿ [D f](a)  ⇒  rev$f(a, v)  (RA8).
        A primitive's rule is inlined; a user function is called."""
        base = jac.func.base
        prim = lookup(base) if isinstance(base, str) else None
        if prim is None:
            return ir.Call(DerivedName("rev" if reverse else "fwd", base), tup(jac.arg, v))
        arg = jac.arg
        args = arg.elems if isinstance(arg, ir.Tuple) else (arg,)
        types = tuple(a.type for a in args)
        y = self.results.get(id(jac)) or self.bind(ir.Call(prim.name, arg), out, "y")
        if reverse:
            parts = prim.rules["rev"](args, v, types, y)
            return parts[0] if len(args) == 1 else tup(*parts)
        dargs = spread(v, len(args), out, self.fresh) if len(args) != 1 else (v,)
        return prim.rules["fwd"](args, dargs, types, y)

    # --- forward: M ⊙ v, v = None meaning the input tangent ds (Fig. 4) ----
    def apply(self, m: ir.Expr, v: ir.Expr | None, env: dict[str, str], out: Out) -> ir.Expr:
        return self.forward(m, env, out, lambda x, o: self.apply_leaf(x, v, env, o))

    def forward(self, m: ir.Expr, env: dict[str, str], out: Out, leaf) -> ir.Expr:
        """The let/if/assert structure of a Jacobian body, for the forward pass;
        ``leaf(m, out)`` for what is below it."""
        match m:
            case ir.Let():
                return self.forward(self.let_step(m, env, out), env, out, leaf)
            case ir.If(c, t, f):
                return ir.If(c, self.scoped(lambda o: self.forward(t, env, o, leaf)),
                             self.scoped(lambda o: self.forward(f, env, o, leaf)))
            case ir.Assert(c, body):
                return ir.Assert(c, self.scoped(lambda o: self.forward(body, env, o, leaf)))
        return leaf(m, out)

    def apply_leaf(self, m: ir.Expr, v: ir.Expr | None, env: dict[str, str], out: Out) -> ir.Expr:
        match m:
            case ir.Var(name):
                if v is not None:
                    raise LabrysError(f"internal: ∂-variable {name} applied to a non-input tangent", m.span)
                return V(env[name])
            case ir.Call(DerivedName("D"), _):
                return self.call_rule(m, self.input(v), out, reverse=False)
            case ir.Call(f, arg) if isinstance(f, str):
                return self.apply_lm(f, arg, m, v, env, out)
        return C("lmApply", m, self.input(v))

    def tupled_call(self, binder, rhs: ir.Expr, body: ir.Expr, env: dict[str, str], out: Out) -> bool:
        """Rule (CP) of Ellis et al. §5.3: ``let y = g(a); ∂y = ∂g(a) ∘ M`` becomes
        ``let (y, dy) = fwdt$g(a, M ⊙ ds)``: one call gives value and tangent."""
        lm = body.rhs if isinstance(body, ir.Let) and isinstance(body.rhs.type, TLM) else None
        if not (isinstance(binder, str) and isinstance(rhs, ir.Call) and isinstance(rhs.func, str | DerivedName)
                and lookup(rhs.func) is None and lm is not None and isinstance(lm, ir.Call)
                and lm.func == "lmCompose" and erase_types(rhs.func) not in self.hand_written):
            return False
        jac, then = lm.arg.elems
        if not (isinstance(jac, ir.Call) and jac.func == DerivedName("D", rhs.func) and jac.arg == rhs.arg):
            return False
        env[body.binder] = dy = self.fresh("d" + binder.split("$")[0])
        v = self.bind(self.apply(then, None, env, out), out)
        out.append(((binder, dy), ir.Call(DerivedName("fwdt", rhs.func), tup(rhs.arg, v))))
        return True

    def apply_tail(self, m: ir.Expr, env: dict[str, str], out: Out, primal: dict[str, ir.Expr]) -> ir.Expr:
        """(value, M ⊙ ds) at every tail of the function: the tupled result of Fig. 8."""
        def pair(x: ir.Expr, _out: Out) -> ir.Expr:
            match x:
                case ir.Var(name):
                    return tup(primal[name], V(env[name]))
                case ir.Call("lmZero", ir.Tuple((_, value))):
                    return tup(value, zero_tangent(value, value.type))
            raise LabrysError("internal: a tupled tail must be a ∂-variable", x.span)
        return self.forward(m, env, out, pair)

    def let_step(self, m: ir.Let, env: dict[str, str], out: Out) -> ir.Expr:
        """Emit one let of a Jacobian body for the forward pass; return what follows it.
        ``∂y = M`` becomes ``dy = M ⊙ ds``; a primal let is kept, or tupled with its ∂-let."""
        if isinstance(m.rhs.type, TLM):
            self.note_result(m.binder, m.rhs, self.witness)
            env[m.binder] = dx = self.fresh("d" + m.binder.lstrip("∂").split("$")[0])
            out.append((dx, self.apply(m.rhs, None, env, out)))
            return m.body
        if self.tupled and self.tupled_call(m.binder, m.rhs, m.body, env, out):
            return m.body.body  # the pair (value, tangent) bound both lets
        out.append((m.binder, m.rhs))
        return m.body

    def input(self, v: ir.Expr | None) -> ir.Expr:
        return self.ds if v is None else v

    def apply_lm(self, f: str, arg: ir.Expr, m: ir.Expr, v, env, out: Out) -> ir.Expr:
        args = arg.elems if isinstance(arg, ir.Tuple) else (arg,)
        if f == "lmZero":
            return zero_tangent(args[1], args[1].type)
        if f == "lmOne":
            return self.input(v)
        if f == "lmScale":
            return C("ts_scale", args[1], self.input(v))
        if f == "lmCompose":
            inner = self.bind(self.apply(args[1], v, env, out), out)
            return self.apply(args[0], inner, env, out)
        if f == "lmAdd":
            v = v if v is None else self.bind(v, out)
            return C("ts_add", self.bind(self.apply(args[0], v, env, out), out), self.apply(args[1], v, env, out))
        if f == "lmVCat":
            return tup(*(self.bind(self.apply(x, v, env, out), out) for x in args))
        if f == "lmHCat":
            parts = spread(self.bind(self.input(v), out), len(args), out, self.fresh)
            return self.sum([self.bind(self.apply(x, p, env, out), out) for x, p in zip(args, parts)])
        if f in ("lmBuild", "lmSumBuild", "lmBuildT"):
            n, body = args[:2]
            i = body.var
            v_i = v if f != "lmBuildT" else C("index", V(i), self.input(v))
            loop_body = self.scoped(lambda o: self.apply(body.body, v_i, env, o))
            return C("build" if f == "lmBuild" else "sumbuild", n, lam(i, body.var_type, loop_body))
        if f == "lmTranspose":
            return self.reverse_closed(args[0], self.bind(self.input(v), out), out)
        if f == "lmFold" and v is None:
            return self.apply_fold(args, env, out)
        return C("lmApply", m, self.input(v))

    def apply_fold(self, args, env: dict[str, str], out: Out) -> ir.Expr:
        """FFold (Fig. 14): fold over (value, tangent) pairs, carrying (acc, dacc)."""
        step, jac, a0, v, m_a0, m_v = args
        step, jac = rename_apart(step, self.fresh), rename_apart(jac, self.fresh)
        da0 = self.bind(self.apply(m_a0, None, env, out), out)
        dv = self.bind(self.apply(m_v, None, env, out), out)
        a_t, b_t = a0.type, v.type.elem
        pair = TTuple((TTuple((a_t, tangent_type(a_t))), TTuple((b_t, tangent_type(b_t)))))
        st, acc, dacc, x, dx = (self.fresh(n) for n in ("st", "acc", "dacc", "x", "dx"))
        body: Out = [((acc, dacc), get(1, 2, V(st))), ((x, dx), get(2, 2, V(st))),
                     (step.var, tup(V(acc), V(x))), (jac.var, tup(V(acc), V(x)))]
        dt = self.fresh("dt")
        body.append((dt, tup(V(dacc), V(dx))))
        tangent = self.bind(self.apply(jac.body.body, None, {**env, jac.body.var: dt}, body), body)
        new_acc = self.bind(step.body, body)
        i = self.fresh("i")
        pairs = C("build", C("size", v), lam(i, INTEGER, tup(C("index", V(i), v), C("index", V(i), dv))))
        result = self.bind(C("fold", lam(st, pair, wrap(body, tup(new_acc, tangent))), tup(a0, da0), pairs), out)
        return get(2, 2, result)

    def scoped(self, emit) -> ir.Expr:
        out: Out = []
        return wrap(out, emit(out))

    # --- reverse: dr ⊙ᴿ M for a closed M (no ∂-variables) -------------------
    def reverse_closed(self, m: ir.Expr, r: ir.Expr, out: Out) -> ir.Expr:
        match m:
            case ir.Let(binder, rhs, body):
                out.append((binder, rhs))
                return self.reverse_closed(body, r, out)
            case ir.If(c, t, f):
                return ir.If(c, self.scoped(lambda o: self.reverse_closed(t, r, o)),
                             self.scoped(lambda o: self.reverse_closed(f, r, o)))
            case ir.Call(DerivedName("D"), _):
                return self.call_rule(m, r, out, reverse=True)
            case ir.Call(f, arg) if isinstance(f, str):
                return self.reverse_lm(f, arg, m, r, out)
        return C("lmApplyR", r, m)

    def reverse_lm(self, f: str, arg: ir.Expr, m: ir.Expr, r: ir.Expr, out: Out) -> ir.Expr:
        args = arg.elems if isinstance(arg, ir.Tuple) else (arg,)
        if f == "lmZero":
            return zero_tangent(args[0], args[0].type)
        if f == "lmOne":
            return r
        if f == "lmScale":
            return C("ts_scale", args[1], r)
        if f == "lmCompose":
            return self.reverse_closed(args[1], self.bind(self.reverse_closed(args[0], r, out), out), out)
        if f == "lmAdd":
            return C("ts_add", self.bind(self.reverse_closed(args[0], r, out), out),
                     self.reverse_closed(args[1], r, out))
        if f == "lmVCat":
            parts = spread(r, len(args), out, self.fresh)
            return self.sum([self.bind(self.reverse_closed(x, p, out), out) for x, p in zip(args, parts)])
        if f == "lmHCat":
            return tup(*(self.bind(self.reverse_closed(x, r, out), out) for x in args))
        if f in ("lmBuild", "lmSumBuild", "lmBuildT"):
            n, body = args[:2]
            i = body.var
            r_i = C("index", V(i), r) if f == "lmBuild" else r
            loop_body = self.scoped(lambda o: self.reverse_closed(body.body, r_i, o))
            return C("build" if f == "lmBuildT" else "sumbuild", n, lam(i, body.var_type, loop_body))
        if f == "lmTranspose":
            return self.apply(args[0], r, {}, out)
        return C("lmApplyR", r, m)

    # --- reverse: contributions of dr ⊙ᴿ M to each ∂-variable (§6.2) --------
    def reverse(self, m: ir.Expr, r: ir.Expr, acc: dict[str, list], witness: dict[str, ir.Expr],
                out: Out) -> None:
        match m:
            case ir.Var(name):
                if not is_constant_tangent(witness[name].type):
                    acc.setdefault(name, []).append(r)
            case ir.Let(binder, rhs, body) if isinstance(rhs.type, TLM):
                self.note_result(binder, rhs, witness)
                self.reverse(body, r, acc, witness, out)
                terms = acc.pop(binder, [])
                if terms:
                    total = self.bind(self.sum(terms), out, "r" + binder.lstrip("∂").split("$")[0])
                    self.reverse(rhs, total, acc, witness, out)
            case ir.Let(binder, rhs, body):
                out.append((binder, rhs))
                self.reverse(body, r, acc, witness, out)
            case ir.If(c, t, f):
                branches = [self.reverse_scope(x, r, witness) for x in (t, f)]
                self.join(lambda bodies, like: ir.If(c, *bodies), branches, acc, witness, out)
            case ir.Assert(c, body):
                out.append((self.fresh("ok"), ir.Assert(c, tup())))
                self.reverse(body, r, acc, witness, out)
            case ir.Call("lmZero", _):
                pass
            case ir.Call("lmCompose", ir.Tuple((first, then))):
                self.reverse(then, self.bind(self.reverse_closed(first, r, out), out), acc, witness, out)
            case ir.Call("lmAdd", ir.Tuple((a, b))):
                self.reverse(a, r, acc, witness, out)
                self.reverse(b, r, acc, witness, out)
            case ir.Call("lmVCat", arg):
                ms = arg.elems if isinstance(arg, ir.Tuple) else (arg,)
                for x, p in zip(ms, spread(r, len(ms), out, self.fresh)):
                    self.reverse(x, self.bind(p, out), acc, witness, out)
            case ir.Call("lmFold", ir.Tuple(args)):
                self.reverse_fold(args, r, acc, witness, out)
            case ir.Call("lmBuild" | "lmSumBuild" as f, ir.Tuple((n, body, *_))):
                r_i = C("index", V(body.var), r) if f == "lmBuild" else r
                scope = self.reverse_scope(body.body, r_i, witness, bound=body.var)
                self.join(lambda bodies, like: C("ts_sumbuild", n, lam(body.var, body.var_type, bodies[0]), like),
                          [scope], acc, witness, out)
            case _:
                raise LabrysError("internal: cannot transpose this linear map", m.span)

    def reverse_fold(self, args, r: ir.Expr, acc: dict[str, list], witness, out: Out) -> None:
        """RFold (Fig. 15): ``rfold`` sweeps forward storing the accumulators, then
        backward through the step's reverse, summing captured contributions."""
        step, jac, a0, v, m_a0, m_v = args
        log: dict[str, str] = {}
        step, jac = rename_apart(step, self.fresh), rename_apart(jac, self.fresh, log)
        t, t_type, dt = jac.var, jac.var_type, jac.body.var
        witness = {**witness, **renamed_witnesses(witness, log), dt: V(t, t_type)}
        q, rq = self.fresh("q"), self.fresh("r")
        body: Out = [((t, rq), V(q))]
        inner: dict[str, list] = {}
        self.reverse(jac.body.body, V(rq), inner, witness, body)
        ct = inner.pop(dt, None)
        ct = self.sum(ct) if ct else zero_tangent(V(t, t_type), t_type)
        keys = sorted(inner)
        d_acc, d_x = spread(self.bind(ct, body), 2, body, self.fresh)
        captured = tup(*(self.sum(inner[k]) for k in keys))
        step_rev = lam(q, TTuple((t_type, tangent_type(a0.type))), wrap(body, tup(d_acc, d_x, captured)))
        czero = tup(*(zero_tangent(witness[k], witness[k].type) for k in keys))
        ra0, rv, rc = self.fresh("ra"), self.fresh("rv"), self.fresh("rc")
        out.append(((ra0, rv, rc), C("rfold", step, step_rev, a0, v, r, czero)))
        self.reverse(m_a0, V(ra0), acc, witness, out)
        self.reverse(m_v, V(rv), acc, witness, out)
        for j, k in enumerate(keys, 1):
            acc.setdefault(k, []).append(self.bind(get(j, len(keys), V(rc)), out))

    def reverse_scope(self, m: ir.Expr, r: ir.Expr, witness, bound: str | None = None):
        """Reverse ``m`` in a scope of its own: (statements, contributions to outer ∂-variables)."""
        out: Out = []
        acc: dict[str, list] = {}
        r = self.bind(r, out, "r")
        self.reverse(m, r, acc, witness, out)
        return out, acc

    def join(self, make, scopes, acc: dict[str, list], witness, out: Out) -> None:
        """Bind the contributions of sub-scopes (branches, loop bodies) as one tuple."""
        keys = sorted({k for _, a in scopes for k in a})
        if not keys:
            return
        bodies = []
        for s_out, s_acc in scopes:
            parts = [self.sum(s_acc[k]) if k in s_acc else zero_tangent(witness[k], witness[k].type) for k in keys]
            bodies.append(wrap(s_out, parts[0] if len(keys) == 1 else tup(*parts)))
        names = tuple(self.fresh("r" + k.lstrip("∂").split("$")[0]) for k in keys)
        like = witness[keys[0]] if len(keys) == 1 else tup(*(witness[k] for k in keys))
        out.append((names[0] if len(names) == 1 else names, make(bodies, like)))
        for k, name in zip(keys, names):
            acc.setdefault(k, []).append(V(name))
