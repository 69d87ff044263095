"""What CHAD's forward and reverse translations share: building the linear layer's
IR (typed zeros, ``+``, projections of linear tuples, linear functions), the
context's snoc-list (co)tangent, and the checks on what reaches a rule.

Note [Linear terms in the IR]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The translation produces the lowered form of §9 directly: ``lin v -> t`` is
``(lam (v : τ) t)``, ``t • s`` an application, ``0`` and ``+`` the typed
primitives ``chadZero`` and ``chadPlus`` (:mod:`.chad_runtime`), copowers
``chadCopow``/``chadCopowFold``.  Two rewrites of Fig. 6 are applied while
building (the unit laws ``0 + a = a`` and projections of a literal pair), so
the raw output is already free of the most common noise; everything else is
left as the paper's rules produce it.  These terms are Fig. 5's linear language
in the one IR, checked by :mod:`.chad_linear` (Note [One IR for the linear language]).
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.traverse import FreshNames, children, map_bottom_up
from ..ir.types import FLOAT, UNIT, TTuple, Type
from ..prelude.arith import is_data
from ..types.checker import Functions
from ..types.tangent import tangent_type
from ..util.deep import deep
from .chad_types import Context, context, extend


def is_zero(e: ir.Expr) -> bool:
    return (isinstance(e, ir.Call) and e.func in ("chadZero", "chadZeroLike")) \
        or (isinstance(e, ir.Tuple) and not e.elems) \
        or (isinstance(e, ir.Const) and e.ctype == FLOAT and e.value == 0.0)


def zero(t: Type) -> ir.Expr:
    """The typed 0 of t."""
    if t == FLOAT:
        return ir.Const(0.0, FLOAT)
    if t == UNIT:
        return ir.Tuple(())
    return C("chadZero", ir.Lam("z", t, V("z")))


def zero_like(name: str | ir.Expr, t: Type, lin_t: Type) -> ir.Expr:
    """The 0 of lin_t, the cotangent of the primal ``name : t`` (a context variable, or an
    expression of the primal): shaped like it (``chadZeroLike name``) when lin_t is its tangent
    type and has sizes, so that §9's lowering can make it concrete (Note [Zeros shaped like the
    context] in chad_lower.py); the symbolic zero otherwise."""
    if lin_t in (FLOAT, UNIT) or (isinstance(lin_t, TTuple) and not lin_t.elems) or not is_data(t):
        return zero(lin_t)
    try:
        same = tangent_type(t) == lin_t
    except ValueError:
        same = False
    return C("chadZeroLike", V(name) if isinstance(name, str) else name) if same else zero(lin_t)


def sized(t: Type) -> bool:
    """A type whose zero needs a size (it holds a tensor)."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TTuple):
            stack.extend(x.elems)
        elif not (x == FLOAT or x == UNIT):
            return True
    return False


def plus(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    """a + b, with the unit laws of the monoid applied."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return C("chadPlus", a, b)


def lget(i: int, t: TTuple, e: ir.Expr) -> ir.Expr:
    """Component i (1-based) of a linear value e : t, which may be the symbolic zero."""
    n = len(t.elems)
    if isinstance(e, ir.Tuple):
        return e.elems[i - 1]
    if is_zero(e):
        return zero(t.elems[i - 1])
    return ir.Get(i, n, C("chadOpen", e))


class ChadBase:
    """State and helpers of one translation: fresh names, the function table, the
    (co)tangent type map ``lin`` (f2 or r2), and the algorithm's name for messages."""

    algorithm = "chad"

    def __init__(self, functions: Functions, fresh: FreshNames, lin) -> None:
        self.functions, self.fresh, self.lin = functions, fresh, lin
        self._fv: dict[int, tuple] = {}
        self.linear: set[str] = set()   # binders of the linear λs made (for the linearity lint)

    def scope(self, g: Context | None, body: ir.Expr, x: str | None = None, t: Type | None = None):
        """(Γ̄', Γ̄',x): the context a binder's body is translated in (Note [Restricted contexts])."""
        sub = self.restrict(g, self.free(body))
        return sub, (sub if x is None else self.extend(sub, x, t))

    def ctx(self, gamma: Context | None) -> Type:
        return context(gamma)

    def extend(self, gamma: Context | None, name: str, t: Type) -> Context:
        return extend(gamma, name, t, self.lin)

    # --- Note [Restricted contexts] ---------------------------------------------------------
    # The paper translates every subterm in the whole context Γ̄.  A chain of L lets then
    # has contexts of length up to L, and every (co)tangent of a context is a tuple that
    # deep: code size, type size and the run time of + grow as O(L²) (cost source B1).
    # At each binder (let body, λ body, case branch, loop body) we translate in Γ̄
    # restricted to the variables free there, which is Rev[Γ̄'] of the same term, and
    # connect the two by the weakening Γ̄' ⊆ Γ̄: the (co)tangent of Γ̄' is embedded into
    # Γ̄'s with zeros elsewhere (reverse), or projected out of it (forward).  That is
    # the variable rule's coproj/proj applied to a sub-list; the rules are unchanged.

    def free(self, e: ir.Expr) -> frozenset:
        """The free variables of e (memoised over the whole tree, computed without recursion)."""
        memo = self._fv
        if id(e) in memo:
            return memo[id(e)][1]
        stack = [(e, False)]
        while stack:
            x, done = stack.pop()
            if id(x) in memo:
                continue
            kids = children(x)
            if not done:
                stack.append((x, True))
                stack.extend((c, False) for c, _ in kids if id(c) not in memo)
                continue
            out = {x.name} if isinstance(x, ir.Var) else set()
            for c, bound in kids:
                out |= memo[id(c)][1] - set(bound)
            memo[id(x)] = (x, frozenset(out))
        return memo[id(e)][1]

    def restrict(self, g: Context | None, keep) -> Context | None:
        """Γ̄ restricted to ``keep``, in Γ̄'s order."""
        kept = []
        node = g
        while node is not None:
            if node.name in keep:
                kept.append(node)
            node = node.prev
        if g is not None and len(kept) == _length(g):
            return g
        out = None
        for node in reversed(kept):
            out = self.extend(out, node.name, node.type)
        return out

    def embed(self, sub: Context | None, g: Context | None, u: ir.Expr) -> ir.Expr:
        """The weakening's transpose: u : R2 Γ̄' as an R2 Γ̄ with zeros elsewhere."""
        if sub is g:
            return u
        if sub is None:  # the body uses nothing from Γ̄ (and its cotangent is unit)
            return zero(context(g))
        parts, node, cur = {}, sub, u
        if not is_zero(u):
            name = self.fresh("w")
            cur = ir.Var(name)
            while node is not None:
                parts[node.name] = lget(2, node.lin_type, cur)
                cur = lget(1, node.lin_type, cur)
                node = node.prev
        out: ir.Expr = ir.Tuple(())
        for n in reversed(_nodes(g)):
            out = ir.Tuple((out, parts.get(n.name) or zero_like(n.name, n.type, self.lin(n.type))))
        return out if is_zero(u) else ir.Let(name, u, out)

    def project(self, g: Context | None, sub: Context | None, v: ir.Expr) -> ir.Expr:
        """The weakening: v : F2 Γ̄ restricted to F2 Γ̄'."""
        if sub is g:
            return v
        parts, node, cur = {}, g, v
        while node is not None:
            parts[node.name] = lget(2, node.lin_type, cur)
            cur = lget(1, node.lin_type, cur)
            node = node.prev
        out: ir.Expr = ir.Tuple(())
        for n in reversed(_nodes(sub)):
            out = ir.Tuple((out, parts[n.name]))
        return out

    def unsupported(self, what: str, e: ir.Expr) -> LabrysError:
        return LabrysError(f"{self.algorithm} does not support {what}", e.span)

    def lam(self, v: str, t: Type, body: ir.Expr) -> ir.Lam:
        return ir.Lam(v, t, body)

    def pair_let(self, rhs: ir.Expr, base: str, body) -> ir.Expr:
        """``let <x, x'> = rhs in body(x, x')`` with fresh x, x' (body gets the names)."""
        x, xd = self.fresh(base), self.fresh(base + "d")
        return ir.Let((x, xd), rhs, body(x, xd))


@deep
def name_applied_functions(e: ir.Expr, fresh: FreshNames) -> ir.Expr:
    """Every application of a function that is not a variable, ``(f a)`` with f compound,
    as ``(let (h f) (h a))``: `.ks` calls only named functions, so the printed code reads
    back (the rules apply projections of pairs, ``(snd (y x)) • w``, directly)."""
    def name(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.App) and not isinstance(x.func, ir.Var):
            h = fresh("h")
            return ir.Let(h, x.func, ir.App(ir.Var(h), x.arg, span=x.span), span=x.span)
        return x
    return map_bottom_up(e, name)


def _nodes(g: Context | None) -> list[Context]:
    out = []
    while g is not None:
        out.append(g)
        g = g.prev
    return out


def _length(g: Context | None) -> int:
    n = 0
    while g is not None:
        n, g = n + 1, g.prev
    return n


def args_of_call(e: ir.Call) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


def lam_arg(f: ir.Expr, what: str, e: ir.Expr, algorithm: str) -> ir.Lam:
    if not isinstance(f, ir.Lam):
        raise LabrysError(f"internal: {algorithm} expects a literal lambda in {what} (eta-expanded before)", e.span)
    return f


def hand_written(functions: Functions, f, s: Type, t: Type, names: tuple[str, ...], forward: bool):
    """A derivative the user wrote for f, (def [rev f] ..) or (def [fwd f] ..), which CHAD
    calls instead of differentiating f (AD-MAP: every algorithm uses it); only between
    first-order types, whose (co)tangents are the language's."""
    from ..ir.names import DerivedName, erase_types
    from ..ir.types import has_function
    from ..types.tangent import tangent_type
    if has_function(s) or has_function(t):
        return None
    for name in names:
        derived = DerivedName(name, erase_types(f))
        sig = functions.resolve(derived, TTuple((s, tangent_type(s if forward else t))))
        if sig is not None and isinstance(getattr(sig, "decl", None), ir.Def):
            return derived
    return None
