"""Single-use form (SUF), the prerequisite of BOG AD (Ellis et al.'s working
notes §11, Figs 24–26):

    Γ ⊢ e : τ  (A-normal, renamed apart)   ↦   Γ ⊢ suf(e) : τ
    where every binder (parameter, let, pattern, λ) is used exactly once.

A variable used k > 1 times is copied with k − 1 binary ``dup``s,
``(let ((x1 x') (dup x)) …)``; an unused one is consumed with
``(let (() (elim x)) …)``.  The two branches of an ``if`` consume the same set
of variables (a variable one branch does not use is elim'd there), and so do
the alternatives of an assert; the λ of ``build``, ``sumbuild`` and ``fold``
counts as **one** use of each of its free variables (the reverse pass sums
their cotangents over the iterations), and inside the λ the rules start
again, its own variable included.

Note [Why exactly once]
~~~~~~~~~~~~~~~~~~~~~~~
Fig. 24's caption says "at most once"; the text under Fig. 25 explains why it
must be exactly once.  The reverse pass binds ∂x where x is *used*: an unused
x would leave ∂x unbound, a second use would bind it twice (shadowing one
contribution, a wrong gradient).  With SUF the reverse pass is a plain list of
bindings; the sums that multiple uses need are the reverse of ``dup``
(Fig. 26: ``dup_rbog((∂₁, ∂₂), ()) = ∂₁ + ∂₂``), the zero an unused variable
needs is the reverse of ``elim``.  Variables used only where they are not
differentiable (conditions, sizes, indices) are consumed like any other; their
cotangents are zero or ``()``.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.traverse import FreshNames, children, free_vars
from ..util.deep import deep

LOOPS_WITH_LAMBDA = {"build": 1, "sumbuild": 1, "fold": 0}  # where the λ is among the arguments


def unsupported(what: str, e: ir.Expr) -> LabrysError:
    return LabrysError(f"split reverse mode (BOG AD) does not support {what}", e.span)


def free_var_table(e: ir.Expr) -> dict[int, frozenset]:
    """The free variables of every node of ``e``, by ``id``, in one iterative pass
    (so nested scopes do not recompute them: linear, not quadratic, in depth)."""
    table: dict[int, frozenset] = {}
    stack = [(e, False)]
    while stack:
        x, done = stack.pop()
        if id(x) in table:
            continue
        kids = children(x)
        if not done and kids:
            stack.append((x, True))
            stack.extend((c, False) for c, _ in kids)
            continue
        if isinstance(x, ir.Var):
            table[id(x)] = frozenset((x.name,))
        else:
            acc: set = set()
            for c, binders in kids:
                acc |= table[id(c)] - set(binders)
            table[id(x)] = frozenset(acc)
    return table


class Suf:
    """The conversion of one def (input in A-normal form, renamed apart, typed).

    A nested block is converted with ``ren``, the map from the names its free
    variables have in the input to the names of the copies it consumes, instead
    of substituting them into it (one pass over the def, whatever its depth)."""

    def __init__(self, fresh: FreshNames, table: dict[int, frozenset] | None = None) -> None:
        self.fresh, self.table = fresh, table or {}

    def fv(self, e: ir.Expr) -> frozenset:
        known = self.table.get(id(e))
        return known if known is not None else frozenset(free_vars(e))

    # --- the uses at one binding's right-hand side (a "site") -----------------
    def site_uses(self, e: ir.Expr) -> list[str]:
        """The variables ``e`` uses, in order; a nested scope (a branch, a λ) is one
        use of each of its free variables."""
        match e:
            case ir.Const() | ir.FnRef():
                return []
            case ir.Var(name):
                return [name]
            case ir.Tuple(elems):
                return [u for x in elems for u in self.site_uses(x)]
            case ir.Get(_, _, arg) | ir.Inj(_, _, arg):
                return self.site_uses(arg)
            case ir.Call(f, arg):
                if f in LOOPS_WITH_LAMBDA and isinstance(arg, ir.Tuple):
                    return [u for x in arg.elems for u in
                            (sorted(self.fv(x)) if isinstance(x, ir.Lam) else self.site_uses(x))]
                return self.site_uses(arg)
            case ir.If(c, t, f):
                return self.site_uses(c) + sorted(self.fv(t) | self.fv(f))
            case ir.Assert(c, body):
                return self.site_uses(c) + sorted(self.fv(body))
            case ir.Lam():
                raise unsupported("a function value (lam) outside build, sumbuild and fold", e)
            case ir.App() | ir.Case():
                raise unsupported("functions as values or sum types (the first-order core of Fig. 1)", e)
            case ir.Let():
                raise LabrysError("internal: SUF expects A-normal form", e.span)
        raise TypeError(f"not an expression: {e!r}")

    def rename_site(self, e: ir.Expr, take) -> ir.Expr:
        """``e`` with its uses renamed, in the order of :meth:`site_uses`; ``take(x)``
        gives the name of x's next use."""
        match e:
            case ir.Const() | ir.FnRef():
                return e
            case ir.Var(name):
                return ir.Var(take(name), type=e.type, span=e.span)
            case ir.Tuple(elems):
                return ir.Tuple(tuple(self.rename_site(x, take) for x in elems), type=e.type, span=e.span)
            case ir.Get(i, n, arg):
                return ir.Get(i, n, self.rename_site(arg, take), type=e.type, span=e.span)
            case ir.Inj(left, t, arg):
                return ir.Inj(left, t, self.rename_site(arg, take), type=e.type, span=e.span)
            case ir.Call(f, arg):
                if f in LOOPS_WITH_LAMBDA and isinstance(arg, ir.Tuple):
                    args = tuple(self.scope(x, take) if isinstance(x, ir.Lam) else self.rename_site(x, take)
                                 for x in arg.elems)
                    return ir.Call(f, ir.Tuple(args, type=arg.type, span=arg.span), type=e.type, span=e.span)
                return ir.Call(f, self.rename_site(arg, take), type=e.type, span=e.span)
            case ir.If(c, t, f):
                c2 = self.rename_site(c, take)
                ren = {x: take(x) for x in sorted(self.fv(t) | self.fv(f))}
                consumed = sorted(ren.values())
                branches = (self.block(b, consumed, ren) for b in (t, f))
                return ir.If(c2, *branches, type=e.type, span=e.span)
            case ir.Assert(c, body):
                c2 = self.rename_site(c, take)
                ren = {x: take(x) for x in sorted(self.fv(body))}
                b = self.block(body, sorted(ren.values()), ren)
                return ir.Assert(c2, b, type=e.type, span=e.span)
        raise TypeError(f"not an expression: {e!r}")

    def scope(self, f: ir.Lam, take) -> ir.Lam:
        """A loop's λ: one use of each free variable outside; inside, its own SUF."""
        ren = {x: take(x) for x in sorted(self.fv(f))}
        consumed = sorted(set(ren.values()) | {f.var})
        return ir.Lam(f.var, f.var_type, self.block(f.body, consumed, ren), type=f.type, span=f.span)

    # --- a block: a let chain and its tail ----------------------------------
    def block(self, e: ir.Expr, consumed: list[str], ren: dict[str, str] | None = None) -> ir.Expr:
        """``e`` in SUF, using each variable of ``consumed`` exactly once (they are
        the free variables of ``e``, renamed by ``ren``, and maybe more)."""
        ren = ren or {}
        bindings, tail = chain(e)
        uses = [self.site_uses(rhs) for _, rhs, _ in bindings] + [self.site_uses(tail)]
        count: dict[str, int] = {}
        for us in uses:
            for u in us:
                u = ren.get(u, u)
                count[u] = count.get(u, 0) + 1
        copies: dict[str, list[str]] = {}

        def prologue(names) -> list:
            out = []
            for x in names:
                k = count.get(x, 0)
                if k == 0:
                    out.append(((), C("elim", V(x)), None))
                elif k > 1:
                    names_ = [self.fresh(x) for _ in range(k)]
                    copies[x] = list(names_)
                    src = x
                    for j in range(k - 1):
                        rest = names_[j + 1] if j == k - 2 else self.fresh(x)
                        out.append(((names_[j], rest), C("dup", V(src)), None))
                        src = rest
            return out

        def take(x: str) -> str:
            x = ren.get(x, x)
            return copies[x].pop(0) if x in copies else x

        out = prologue(consumed)
        for binder, rhs, span in bindings:
            out.append((binder, self.rename_site(rhs, take), span))
            out.extend(prologue((binder,) if isinstance(binder, str) else binder))
        body = self.rename_site(tail, take)
        for binder, rhs, span in reversed(out):
            body = ir.Let(binder, rhs, body, span=span)
        return body


def chain(e: ir.Expr) -> tuple[list, ir.Expr]:
    """A block's bindings and tail, a let in a right-hand side floated out (loop-
    invariant hoisting leaves ``(x (let (y a) (build …)))``; binders are unique)."""
    out = []
    node = e
    while isinstance(node, ir.Let):
        if isinstance(node.rhs, ir.Let):
            inner, rhs = chain(node.rhs)
            out.extend(inner)
        else:
            rhs = node.rhs
        out.append((node.binder, rhs, node.span))
        node = node.body
    return out, node


@deep
def single_use_form(d: ir.Def, fresh: FreshNames) -> ir.Def:
    """The def ``d`` (typed, A-normal, renamed apart) in single-use form."""
    for p in d.params:
        fresh.avoid((p.name,))
    body = Suf(fresh, free_var_table(d.body)).block(d.body, [p.name for p in d.params])
    return d.with_body(body)


def uses(e: ir.Expr) -> dict[str, int]:
    """How many times each variable is used in ``e`` under SUF's counting (a
    branch pair or a loop's λ is one use) — for tests and the linter."""
    out: dict[str, int] = {}
    s = Suf(FreshNames())
    node = e
    while isinstance(node, ir.Let):
        for u in s.site_uses(node.rhs):
            out[u] = out.get(u, 0) + 1
        node = node.body
    for u in s.site_uses(node):
        out[u] = out.get(u, 0) + 1
    return out
