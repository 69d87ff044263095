"""The simplifier of CHAD's generated code (Vákár & Smeding, CHAD, App. B, Table 1,
and the laws of Fig. 6 it relies on), run as its own pass after the translation:

    R1 Γ ⊢ t : τ   ↦   R1 Γ ⊢ simplify(t) : τ       (same meaning, same asymptotic cost)

The rules of Table 1, rewriting left to right (the lowered IR: ``lin v -> t`` is a
``lam``, ``t • s`` an application, ``0``/``+`` are ``chadZero``/``chadPlus``):

     1 lamAppLet       (\\x -> e) a                    → let x = a in e      (also linear β)
     2 letRotate       let x = (let y = a in b) in e  → let y = a in let x = b in e
     3 letPairSplit    let x = <a, b> in e            → let x1 = a in let x2 = b in e[<x1,x2>/x]
     4 letInline       let x = a in e                 → e[a/x]  if a is cheap or x occurs once
     5 pairProj        fst <a, b> → a,  snd <a, b> → b
     6 pairEta         <fst a, snd a> → a
     7 letProj         fst (let x = a in e)           → let x = a in fst e
     8 plusZero        0 + a → a,  a + 0 → a
     9 plusPair        <a, b> + <c, d>                → <a + c, b + d>
    10 plusLet         (let x = e in a) + b           → let x = e in a + b   (and mirrored)
    11 algebra         0 * x → 0,  x * 1 → x,  0 + x → x,  -0 → 0
    12 letLamPairSplit let f = \\x -> <a, b> in e     → let f1 = \\x -> a in let f2 = \\x -> b in
                                                        e[\\x -> <f1 x, f2 x>/f]
    13 mapPairSplit    unzip (build n (\\i -> <a, b>)) → <build n (\\i -> a), build n (\\i -> b)>
    14 mapZero         build n (\\i -> 0) → 0
    15 sumZip          Σ_i <a_i, b_i>  (chadSumBuild)  → <Σ_i a_i, Σ_i b_i>   (a literal pair)
    16 sumZero         Σ_i 0 → 0
    17 sumSingleton    the copower fusions below (a copower is a sum of singletons)

and the laws of Fig. 6 that the simplifier needs beyond Table 1: ``f • 0 → 0`` for a linear f,
``fst 0 → 0``, projections commuting with ``+`` and Σ (they are linear), and the
copower fusions of §8 (``case c of !y ⊗ w -> e``  is ``chadCopowFold (\\p -> e) c``):

    case (!a ⊗ w) of !y ⊗ u -> e      → e[a/y, w/u]
    case (c1 + c2) of …               → (case c1 of …) + (case c2 of …)
    case 0 of …                       → 0
    case Σ_i c_i of …                 → Σ_i (case c_i of …)

Note [Side conditions of the simplifier]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Table 1 states the rules without side conditions; labrys adds them (a rule must
neither duplicate work nor break linearity).  "Occurs once" counts an occurrence under
a λ (a linear λ, a loop body, a closure) as *many*, so a binding is never moved into
code that runs more often — except a λ itself, which is a value: moving it costs
nothing, and it is then β-reduced where it is applied.  Every binder of the
translation is fresh, so the rewrites are capture-free; the one rule that duplicates a
term with binders (a copower fold over a sum) renames the copy apart.  ``f • 0 → 0``
is applied only where f is known to be linear: a backpropagator or tangent map of the
translation (the second binder of a ``let <x, x'> = …``) or a linear λ.  The pair
rules 12, 13 and 15 fire only on a literal pair, never by duplicating the shared
let-bound work in front of it.  Because binders are unique, one substitution map
serves the whole sweep (it is extended in place, never copied: copying it per binding
made a chain of L lets cost O(L²)).  The simplifier is recursive, run on the
deep-stack worker (Note [Deep programs]), and repeats its sweep until the term stops
shrinking.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import FreshNames, children, free_vars, rebuild, size
from ..ir.types import FLOAT, TTuple
from ..opt.anf import rename_apart
from ..types.checker import Functions, check_def
from ..util.deep import deep
from .chad_common import is_zero, zero
from .chad_lint import UNARY
from .chad_simplify_terms import (
    _args,
    _at_most,
    _call,
    _chain_longer_than,
    _cheap,
    _ends_in_lam,
    _lin_zero,
    _names,
    _one,
    _open,
    _part,
    _pure,
    _stem,
    _uses,
    _without,
    _zero_float,
    _zero_tuple,
)

MAX_SWEEPS = 24
# the run-time primitives of the linear layer that are linear in one argument (its position)
_LINEAR_OPS = {"chadIndex": 1, "chadOneHot": 2, "chadSumVec": 0, "chadApp": 0, "chadLeft": 0, "chadRight": 0,
               "chadZip": 0, "chadUnzip": 0, "chadCopow": 1}
SMALL_LAMBDA = 40  # nodes: a λ this small is copied to each use (code size, never work)
SHORT_CHAIN = 8    # lets: a longer chain in a right-hand side is rotated by the next sweep


def linear_functions(e: ir.Expr) -> set[str]:
    """The variables the translation binds to linear maps: the second binder of every
    ``let <x, x'> = …`` (each translated subterm is a pair of a primal and a linear map)."""
    out, stack = set(), [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Let) and not isinstance(x.binder, str) and len(x.binder) == 2:
            out.add(x.binder[1])
        stack.extend(c for c, _ in children(x))
    return out


@deep
def simplify_def(d: ir.Def, functions: Functions, fresh: FreshNames, linear: set[str],
                 copy_limit: int = SMALL_LAMBDA) -> ir.Def:
    """App. B's simplifier to a fixed point (at most MAX_SWEEPS sweeps); ``linear`` (the
    binders of linear λs) is extended with the names of copies it makes.  A let-bound λ of at
    most ``copy_limit`` nodes is copied to each use (Note [Loop steps inlined after lowering])."""
    lin_fns = linear_functions(d.body)
    previous = d.body  # sizes are measured only when a sweep changed nothing: one walk, not two a sweep
    for _ in range(MAX_SWEEPS):
        d = check_def(d, functions)
        sweep = _Sweep(fresh, linear, lin_fns, copy_limit)
        body = sweep.go(d.body, {})
        d = d.with_body(body)
        if not sweep.changed and size(body) >= size(previous):
            break
        previous = body
    return check_def(d, functions)


class _Sweep:
    def __init__(self, fresh: FreshNames, linear: set[str], lin_fns: set[str], copy_limit: int) -> None:
        self.fresh, self.linear, self.lin_fns, self.copy_limit = fresh, linear, lin_fns, copy_limit
        self.uses: dict[str, int] | None = None     # occurrences, 2 for one under a λ
        self.occurrences: dict[str, int] = {}       # occurrences
        self.splits: set[str] = set()               # the variables letPairSplit split
        self.copies: set[str] = set()               # small λs inlined at every use (renamed apart)
        self.curried: set[str] = set()              # λs returning a λ: applying one is O(1)
        self.changed = False

    def go(self, e: ir.Expr, env: dict[str, ir.Expr]) -> ir.Expr:
        if self.uses is None:
            self.uses, self.occurrences = _uses(e)
        match e:
            case ir.Var(name):
                out = env.get(name, e)
                if name in self.splits:  # <x1, x2> for a split x: x1, x2 may be inlined since
                    return ir.Tuple(tuple(self.go(x, env) for x in out.elems), type=out.type)
                return self.copy(out) if name in self.copies else out
            case ir.Let(binder, rhs, body):
                while isinstance(rhs, ir.Let):  # 2 letRotate on the term as it comes: O(1) each, so
                    self.changed = True         # a let nested L deep in right-hand sides costs O(L)
                    binder, rhs, body = rhs.binder, rhs.rhs, ir.Let(binder, rhs.body, body, type=e.type)
                return self.bind(binder, self.go(rhs, env), lambda env2: self.go(body, env2), env, e)
        old = children(e)
        kids = [self.go(c, _without(env, binders)) for c, binders in old]
        if any(k is not c for k, (c, _) in zip(kids, old)):  # unchanged: the same node (and its type)
            e = rebuild(e, kids)
        return self.rules(e)

    # --- lets: rules 2, 3, 4 and 12 ----------------------------------------------------------

    def bind(self, x, rhs: ir.Expr, body, env, e: ir.Let) -> ir.Expr:
        """let x = rhs in body, with rhs simplified; body(env) simplifies the body."""
        t = e.type
        if isinstance(rhs, ir.Let):  # 2 letRotate (binders are fresh: no capture)
            self.changed = True
            if _chain_longer_than(rhs, SHORT_CHAIN):  # rebuilt at O(1) a let by the next sweep (in go)
                return ir.Let(x, rhs, body(_without(env, _names(x))), type=t, span=e.span)
            return ir.Let(rhs.binder, rhs.rhs, self.bind(x, rhs.body, body, env, e), type=t)
        if not isinstance(x, str):
            if isinstance(rhs, ir.Tuple) and len(rhs.elems) == len(x):  # 3 on a tuple pattern
                self.changed = True
                return self.bind_all(list(zip(x, rhs.elems)), body, env, e)
            if all(self.uses.get(n, 2) == 0 for n in x) and _pure(rhs):
                self.changed = True
                return body(env)
            return ir.Let(x, rhs, body(_without(env, x)), type=t, span=e.span)
        if x not in self.uses:  # made by this sweep (a copy): the next sweep counts its uses
            return ir.Let(x, rhs, body(_without(env, (x,))), type=t, span=e.span)
        n = self.uses[x]
        if isinstance(rhs, ir.Tuple) and rhs.elems and not _cheap(rhs):  # 3 letPairSplit
            self.changed = True
            names = tuple(self.fresh(_stem(x)) for _ in rhs.elems)
            env[x] = ir.Tuple(tuple(ir.Var(m) for m in names), type=rhs.type)
            self.splits.add(x)
            for m in names:  # at most as often as x (the next sweep counts exactly)
                self.uses[m], self.occurrences[m] = n, self.occurrences.get(x, 0)
            if x in self.lin_fns:
                self.lin_fns.update(names)
            return self.bind_all(list(zip(names, rhs.elems)), body, env, e)
        split = self.tail_pair(rhs.body) if isinstance(rhs, ir.Lam) else None
        if split is not None and self.occurrences.get(x, 0) > 1:  # 12 letLamPairSplit
            self.changed = True
            f1, f2, y = self.fresh(_stem(x)), self.fresh(_stem(x)), self.fresh(_stem(rhs.var))
            a, b = split
            pair = ir.Tuple((ir.App(ir.Var(f1), ir.Var(y)), ir.App(ir.Var(f2), ir.Var(y))))
            env[x] = ir.Lam(y, rhs.var_type, pair, type=rhs.type)
            self.copies.add(x)  # each use gets its own binder
            first = self.copy(ir.Lam(rhs.var, rhs.var_type, a))
            second = ir.Lam(rhs.var, rhs.var_type, b)
            for f, lam in ((f1, first), (f2, second)):
                self.uses[f] = self.occurrences[f] = 2
                if isinstance(lam.body, ir.Lam) or _ends_in_lam(lam.body):
                    self.curried.add(f)
            return ir.Let(f1, first, ir.Let(f2, second, body(env), type=t), type=t)
        if isinstance(rhs, ir.Lam) and (n > 1 or self.occurrences.get(x, 0) > 1) and _at_most(rhs, self.copy_limit):
            self.changed = True  # 4 letInline of a small λ (a value), copied at each use
            self.copies.add(x)
            self.duplicated(rhs, x)
            env[x] = rhs
            return body(env)
        if isinstance(rhs, ir.Lam) and _ends_in_lam(rhs.body):
            self.curried.add(x)
        once = n == 1 or (self.occurrences.get(x, 0) == 1 and isinstance(rhs, ir.Lam))
        if _cheap(rhs) or once or (n == 0 and _pure(rhs)):  # 4 letInline
            self.changed = True
            if not once:
                self.duplicated(rhs, x)
            env[x] = rhs
            return body(env)
        return ir.Let(x, rhs, body(_without(env, (x,))), type=t, span=e.span)

    def duplicated(self, value: ir.Expr, x: str) -> None:
        """value replaces every occurrence of x: its variables occur that much more often
        (Note [Side conditions of the simplifier]: counts may only err upwards)."""
        times = self.occurrences.get(x, 0)
        for y in free_vars(value):
            self.uses[y] = self.uses.get(y, 0) + 2 * times
            self.occurrences[y] = self.occurrences.get(y, 0) + times

    def trivial(self, e: ir.Expr) -> bool:
        """O(1) work, safe to repeat: atoms, λ values, lookups, a curried λ applied."""
        match e:
            case ir.Lam():
                return True
            case ir.Call("index" | "size" | "chadIndex"):
                return all(_cheap(a) for a in _args(e))
            case ir.App(ir.Var(f), a):
                return f in self.curried and _cheap(a)
        return _cheap(e)

    def tail_pair(self, e: ir.Expr):
        """(let bs in a, let bs in b) if e is let bs in <a, b> with only trivial bs, else None."""
        binds = []
        while isinstance(e, ir.Let) and isinstance(e.binder, str) and self.trivial(e.rhs):
            binds.append(e)
            e = e.body
        if not (isinstance(e, ir.Tuple) and len(e.elems) == 2):
            return None
        out = []
        for part in e.elems:
            for let in reversed(binds):
                part = ir.Let(let.binder, let.rhs, part, type=part.type)
            out.append(part)
        return tuple(out)

    def bind_all(self, pairs, body, env, e) -> ir.Expr:
        (x, rhs), rest = pairs[0], pairs[1:]
        if not rest:
            return self.bind(x, rhs, body, env, e)
        return self.bind(x, rhs, lambda env2: self.bind_all(rest, body, env2, e), env, e)

    # --- everything else, after the children ------------------------------------------------

    def rules(self, e: ir.Expr) -> ir.Expr:
        out = self._rules(e)
        if out is not e:
            self.changed = True
        return out

    def _rules(self, e: ir.Expr) -> ir.Expr:
        match e:
            case ir.App(ir.Lam(v, t, body), a):  # 1 lamAppLet, linear β
                if v in self.linear and is_zero(a) and e.type is not None:
                    return zero(e.type)
                return ir.Let(v, a, body, type=e.type)  # simplified further by the next sweep
            case ir.App(ir.Let(b, rhs, body), a):  # a let in function position floats out
                return ir.Let(b, rhs, self.rules(ir.App(body, a, type=e.type)), type=e.type)
            case ir.App(ir.Var(f), a) if f in self.lin_fns and _lin_zero(a) and e.type is not None:
                return zero(e.type)  # f • 0 → 0
            case ir.Get(i, n, a):
                return self.project(e, i, n, a)
            case ir.Tuple(elems) if elems and all(isinstance(x, ir.Get) and x.index == k + 1 and x.size == len(elems)
                                                  and isinstance(x.arg, ir.Var) and x.arg.name == elems[0].arg.name
                                                  for k, x in enumerate(elems)):
                return elems[0].arg  # 6 pairEta
            case ir.Call("chadOpen", a) if isinstance(a, ir.Tuple):
                return a
            case ir.Call("chadPlus", ir.Tuple((a, b))):
                return self.plus(e, a, b)
            case ir.Call("chadCopowFold", ir.Tuple((f, c))):
                return self.fuse(e, f, c)
            case ir.Call("chadSumBuild", ir.Tuple((n, ir.Lam(i, t, body), *shape))):
                if is_zero(body) and e.type is not None:  # 16 sumZero (shaped like γ if it has one)
                    return _call("chadZeroLike", shape[0], t=e.type) if shape else zero(e.type)
                split = self.tail_pair(body)
                if split is not None and isinstance(e.type, TTuple):  # 15 sumZip
                    return ir.Tuple(tuple(_call("chadSumBuild", n, self.copy(ir.Lam(i, t, x)), *_part(shape, k, s), t=s)
                                          for k, (x, s) in enumerate(zip(split, e.type.elems))), type=e.type)
            case ir.Call(f, _) if f in _LINEAR_OPS and e.type is not None:
                args = (e.arg,) if f in UNARY else _args(e)
                if is_zero(args[_LINEAR_OPS[f]]):
                    return zero(e.type)  # a linear op of 0 (t[0/v] = 0, Fig. 6)
            case ir.Call("sub", ir.Tuple((a, b))) if _zero_float(b):
                return a
            case ir.Call("div", ir.Tuple((a, _))) if _zero_float(a):
                return a  # 0 / x → 0
            case ir.Call("mul", ir.Tuple((a, b))):
                if _zero_float(a) or _zero_float(b):
                    return ir.Const(0.0, FLOAT)  # 11 algebra
                if _one(a):
                    return b
                if _one(b):
                    return a
            case ir.Call("add", ir.Tuple((a, b))) if a.type == FLOAT:
                return b if _zero_float(a) else a if _zero_float(b) else e
            case ir.Call("neg", a) if _zero_float(a):
                return a
        return e

    def project(self, e: ir.Get, i: int, n: int, a: ir.Expr) -> ir.Expr:
        inner = a.arg if isinstance(a, ir.Call) and a.func == "chadOpen" else a
        match inner:
            case ir.Tuple(elems) if len(elems) == n and all(_pure(x) for k, x in enumerate(elems) if k != i - 1):
                return elems[i - 1]  # 5 pairProj
            case ir.Let(b, rhs, body):  # 7 letProj
                wrap = _open if inner is not a else (lambda x: x)
                return ir.Let(b, rhs, self.rules(ir.Get(i, n, wrap(body), type=e.type)), type=e.type)
            case ir.Call("chadPlus", ir.Tuple((x, y))):  # a projection is linear
                return self.plus(e, self.rules(ir.Get(i, n, _open(x), type=e.type)),
                                 self.rules(ir.Get(i, n, _open(y), type=e.type)))
            case ir.Call("chadSumBuild", ir.Tuple((m, ir.Lam(k, t, body), *shape))):  # and commutes with Σ
                return _call("chadSumBuild", m, ir.Lam(k, t, self.rules(ir.Get(i, n, _open(body), type=e.type))),
                             *_part(shape, i - 1, e.type), t=e.type)
        if is_zero(inner) and e.type is not None and not isinstance(inner, ir.Const):
            return zero(e.type)  # fst 0 → 0
        return e

    def plus(self, e: ir.Expr, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        if is_zero(a) or _zero_tuple(a):  # 8 plusZero
            return b
        if is_zero(b) or _zero_tuple(b):
            return a
        if isinstance(a, ir.Tuple) and isinstance(b, ir.Tuple) and len(a.elems) == len(b.elems):  # 9 plusPair
            return ir.Tuple(tuple(self.plus(None, x, y) for x, y in zip(a.elems, b.elems)), type=a.type)
        if isinstance(a, ir.Let):  # 10 plusLet (binders are fresh)
            return ir.Let(a.binder, a.rhs, self.plus(None, a.body, b), type=a.type)
        if isinstance(b, ir.Let):
            return ir.Let(b.binder, b.rhs, self.plus(None, a, b.body), type=b.type)
        if e is not None and isinstance(e, ir.Call) and e.arg.elems == (a, b):
            return e
        return _call("chadPlus", a, b, t=a.type or b.type)

    def fuse(self, e: ir.Call, f: ir.Expr, c: ir.Expr) -> ir.Expr:
        """The copower fusions of §8 (17 sumSingleton: a copower is a sum of singletons)."""
        match c:
            case ir.Call("chadCopow", ir.Tuple((a, w))) if isinstance(f, ir.Lam):
                return ir.Let(f.var, ir.Tuple((a, w)), f.body, type=e.type)
            case ir.Call("chadPlus", ir.Tuple((c1, c2))):
                return self.plus(None, self.fuse(e, f, c1), self.fuse(e, self.copy(f), c2))
            case ir.Let(b, rhs, body):
                return ir.Let(b, rhs, self.fuse(e, f, body), type=e.type)
            case ir.Call("chadSumBuild", ir.Tuple((n, ir.Lam(i, t, body), *_))):  # its shape is c's, not the result's
                return _call("chadSumBuild", n, ir.Lam(i, t, self.fuse(e, f, body)), t=e.type)
        if is_zero(c) and e.type is not None:
            return zero(e.type)
        if c is e.arg.elems[1] and f is e.arg.elems[0]:
            return e
        return _call("chadCopowFold", f, c, t=e.type)

    def copy(self, f: ir.Expr) -> ir.Expr:
        log: dict[str, str] = {}
        out = rename_apart(f, self.fresh, log)
        self.linear.update(new for old, new in log.items() if old in self.linear)
        self.lin_fns.update(new for old, new in log.items() if old in self.lin_fns)
        return out
