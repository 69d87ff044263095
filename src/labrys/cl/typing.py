"""The type system of CL (Ellis et al. Fig. 11) as a checker: ``Σ ⊢ c : S ⇒ T``.

    I : S ⇒ S                      P[i₁…iₘ/n] : (s₁…sₙ) ⇒ (s_{i₁}…s_{iₘ})
    F(f) : S ⇒ T    if f : S → T in Σ (user functions, primitives, get$i$n = π_{i,n})
    K(k) : () ⇒ τ_k                c₁ ; c₂ : S ⇒ T   if c₁ : S ⇒ R and c₂ : R ⇒ T
    (c₁…cₙ) : S ⇒ (T₁…Tₙ)          IF(c₁,c₂,c₃) : S ⇒ T   if c₁ : S ⇒ Bool, c₂, c₃ : S ⇒ T
    L(x,c_r,c_b) : S ⇒ T           if c_r : S ⇒ R and c_b : S ▷ R ⇒ T
    B(c_s,i,c_e) : S ⇒ Vec T       if c_s : S ⇒ ℕ and c_e : S ▷ ℕ ⇒ T
    FOLD(x,c_f,c_a,c_v) : S ⇒ A    if c_a : S ⇒ A, c_v : S ⇒ Vec E, c_f : S ▷ (A, E) ⇒ A
    ASSERT(c_c,c_b) : S ⇒ T        if c_c : S ⇒ Bool and c_b : S ⇒ T

S ▷ R appends R to the tuple S, so L, B and FOLD need a tuple input (a context).

Note [K and pruning]
~~~~~~~~~~~~~~~~~~~~
Fig. 11 types a constant ``K(k) : () ⇒ τ_k``, which holds only because the
conversion prunes a constant's context to nothing (``P[/n] ; K(k)``).  labrys keeps the rule as printed:
the converter always prunes, and the checker rejects a K on a non-empty
input — so "every K runs on the empty context" is checked, not assumed.

B also builds a rank-N tensor when c_s gives an N-tuple of Integers (the
language's ``build`` over ``Tensor N``); its index is then that tuple.
"""
from __future__ import annotations

from ..errors import LabrysError, Span
from ..ir.names import show_name
from ..ir.types import BOOL, INTEGER, TTensor, TTuple, Type
from ..types.checker import Functions, Signature
from ..types.primitives import Primitive
from ..util.deep import deep, gc_paused
from .printer import show
from .syntax import Assert, Build, CLDef, Comp, Fold, Func, Identity, If, Konst, Let, Prune, Term, Tup, projection_index

UNIT = TTuple(())


def _err(c: Term, msg: str, span: Span | None) -> LabrysError:
    text = show(c, width=10**9)
    return LabrysError(f"CL: {msg} (in {text if len(text) <= 70 else text[:67] + '...'})", span)


def extend(s: Type, r: Type) -> TTuple:
    """S ▷ R."""
    return TTuple((*s.elems, r))


def index_type(size: Type) -> Type | None:
    """The index of a build of this size (Integer, or an N-tuple of Integers), or None."""
    if size == INTEGER:
        return size
    if isinstance(size, TTuple) and size.elems and all(e == INTEGER for e in size.elems):
        return size
    return None


def function_type(name, s: Type, functions: Functions) -> tuple[Type | None, Signature | Primitive | None]:
    """T with f : S → T in Σ (None if f does not take S), and what f resolves to."""
    proj = projection_index(name)
    if proj is not None:
        i, n = proj
        ok = isinstance(s, TTuple) and len(s.elems) == n
        return (s.elems[i - 1] if ok else None), None
    target = functions.resolve(name, s)
    if isinstance(target, Signature):
        return target.ret, target
    if isinstance(target, Primitive):
        return target.typeof(s), target
    return None, None


class Checker:
    def __init__(self, functions: Functions, span: Span | None = None) -> None:
        self.functions, self.span = functions, span

    def context(self, c: Term, s: Type) -> TTuple:
        if not isinstance(s, TTuple):
            raise _err(c, f"{type(c).__name__} needs a context (a tuple) as input, not {s}", self.span)
        return s

    def infer(self, c: Term, s: Type) -> Type:
        """T with c : S ⇒ T; a LabrysError when c does not take S."""
        match c:
            case Identity():
                return s
            case Konst(_, ctype):
                if s != UNIT:
                    raise _err(c, f"K(k) : () ⇒ τ runs on the empty context, not on {s} "
                               "(prune first: P[/n] ; K(k))", self.span)
                return ctype
            case Prune(picks, n):
                if not isinstance(s, TTuple) or len(s.elems) != n:
                    raise _err(c, f"P[…/{n}] needs a {n}-tuple, not {s}", self.span)
                return TTuple(tuple(s.elems[i - 1] for i in picks))
            case Func(name):
                t, _ = function_type(name, s, self.functions)
                if t is None:
                    raise _err(c, f"no function {show_name(name)} takes {s}", self.span)
                return t
            case Comp(parts):
                for p in parts:
                    s = self.infer(p, s)
                return s
            case Tup(elems):
                return TTuple(tuple(self.infer(x, s) for x in elems))
            case If(cond, then, orelse):
                if self.infer(cond, s) != BOOL:
                    raise _err(c, "the condition of IF gives no Bool", self.span)
                t, e = self.infer(then, s), self.infer(orelse, s)
                if t != e:
                    raise _err(c, f"the branches of IF give {t} and {e}", self.span)
                return t
            case Let(_, rhs, body):
                ctx = self.context(c, s)
                return self.infer(body, extend(ctx, self.infer(rhs, s)))
            case Build(size, _, body):
                ctx = self.context(c, s)
                n = self.infer(size, s)
                idx = index_type(n)
                if idx is None:
                    raise _err(c, f"the size of B gives {n}, not an Integer (or a tuple of them)", self.span)
                return TTensor(1 if idx == INTEGER else len(idx.elems), self.infer(body, extend(ctx, idx)))
            case Fold(_, body, init, vec):
                ctx = self.context(c, s)
                a, v = self.infer(init, s), self.infer(vec, s)
                if not (isinstance(v, TTensor) and v.rank == 1):
                    raise _err(c, f"FOLD runs over a vector, not {v}", self.span)
                r = self.infer(body, extend(ctx, TTuple((a, v.elem))))
                if r != a:
                    raise _err(c, f"the step of FOLD gives {r}, not its accumulator's {a}", self.span)
                return a
            case Assert(cond, body):
                if self.infer(cond, s) != BOOL:
                    raise _err(c, "the condition of ASSERT gives no Bool", self.span)
                return self.infer(body, s)
        raise TypeError(f"not a CL term: {c!r}")


@deep
@gc_paused
def infer(c: Term, s: Type, functions: Functions, span: Span | None = None) -> Type:
    """Σ ⊢ c : S ⇒ T: the T (Fig. 11), or a LabrysError saying which rule fails."""
    return Checker(functions, span).infer(c, s)


def check_def(d: CLDef, functions: Functions, span: Span | None = None) -> None:
    """``def f : S ⇒ T = c`` holds: c : S ⇒ T."""
    t = infer(d.body, d.arg, functions, span)
    if t != d.ret:
        raise LabrysError(f"CL: def {show_name(d.name)} : {d.arg} ⇒ {d.ret} has a term giving {t}", span)
