"""CL, the categorical combinator language of Ellis, Peyton Jones & Fitzgibbon's
working notes (§6, Fig. 9), as its own small immutable IR.

    pgm ::= def₁ … defₙ          def ::= f : S ⇒ T = c
    c   ::= I                    identity
          | K(k)                 constant
          | P[i₁,…,iₘ/n]         pruning: the tuple of components i₁ … iₘ of an n-tuple (0 ≤ m ≤ n)
          | F(f)                 a function or primitive; F(get$i$n) is the projection π_{i,n}
          | c₁ ; c₂ ; …          composition, c₁ first
          | (c₁, …, cₙ)          tuple (fan-out); ``(c,)`` is the 1-tuple, ``()`` the 0-tuple
          | IF(c₁, c₂, c₃)       conditional
          | L(x, c_r, c_b)       let: c_b runs on the context extended with c_r's value
          | B(c_s, i, c_e)       build: c_e runs on the context extended with the index
          | FOLD(x, c_f, c_a, c_v)   fold (the Knossos compiler's CLFold; not in Fig. 9)
          | ASSERT(c_c, c_b)     assert (not in Fig. 9: the Knossos compiler dropped asserts)

A term denotes a function from an input value ``t`` (for converted code, the
context: a flat tuple of the variables in scope) to a value, ``t ◇ c``
(:mod:`labrys.cl.semantics`).  Composition is n-ary and flat: :func:`comp`
splices nested compositions, so ``(a ; b) ; c`` and ``a ; (b ; c)`` are one
term (composition is associative) and the printer needs no grouping
parentheses — a parenthesis is always a tuple.

Note [CL extensions]
~~~~~~~~~~~~~~~~~~~~
Fig. 9 has no fold and no assert.  The Knossos compiler's own CL (ksc's
``CatLang.hs``) added ``CLFold`` and dropped asserts; labrys keeps asserts as a
combinator instead, so converting to CL never turns a failing program into
one that returns a number.  Both follow the pattern of L and B: the body of
FOLD runs on the context extended with the pair (accumulator, element).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.names import Name
from ..ir.types import Type

_h = dict(default=None, init=False, compare=False, repr=False)


class Term:
    """Base of CL terms: structural equality and hashing walk the term with an
    explicit stack (as the IR's, Note [Iterative equality] in labrys.ir.nodes),
    so 10⁴-deep terms compare on any thread."""

    __slots__ = ()

    def kids(self) -> tuple["Term", ...]:
        return ()

    def head(self) -> tuple:
        return ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Term):
            return False
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if type(a) is not type(b) or a.head() != b.head():
                return False
            ka, kb = a.kids(), b.kids()
            if len(ka) != len(kb):
                return False
            stack.extend(zip(ka, kb))
        return True

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        if self._hash is not None:
            return self._hash
        order, stack = [], [self]
        while stack:
            x = stack.pop()
            if x._hash is None:
                order.append(x)
                stack.extend(x.kids())
        for x in reversed(order):
            if x._hash is None:
                object.__setattr__(x, "_hash", hash((type(x).__name__, x.head(), tuple(k._hash for k in x.kids()))))
        return self._hash

    def __repr__(self) -> str:
        from .printer import show
        text = show(self, width=10**9)
        return f"<CL {text if len(text) < 80 else text[:77] + '...'}>"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Identity(Term):
    """I : S ⇒ S."""

    _hash: int | None = field(**_h)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Konst(Term):
    """K(k) : () ⇒ τ_k."""

    value: float | int | bool | str
    ctype: Type
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        # repr distinguishes -0.0 from 0.0 and equates nan with nan; ctype tells 1 from 1.0 and True
        return (repr(self.value), self.ctype)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Prune(Term):
    """P[i₁…iₘ/n] : (s₁…sₙ) ⇒ (s_{i₁}…s_{iₘ}), 1-based; always a tuple."""

    picks: tuple[int, ...]
    n: int
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        return (self.picks, self.n)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Func(Term):
    """F(f) : S ⇒ T for f : S → T (a user function, a primitive, or get$i$n)."""

    name: Name
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        return (self.name,)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Comp(Term):
    """c₁ ; c₂ ; … ; cₙ (n ≥ 2, none a Comp): c₁ runs first.  Build with :func:`comp`."""

    parts: tuple[Term, ...]
    _hash: int | None = field(**_h)

    def kids(self) -> tuple[Term, ...]:
        return self.parts


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Tup(Term):
    """(c₁, …, cₙ) : S ⇒ (T₁, …, Tₙ)."""

    elems: tuple[Term, ...]
    _hash: int | None = field(**_h)

    def kids(self) -> tuple[Term, ...]:
        return self.elems


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class If(Term):
    """IF(c₁, c₂, c₃)."""

    cond: Term
    then: Term
    orelse: Term
    _hash: int | None = field(**_h)

    def kids(self) -> tuple[Term, ...]:
        return (self.cond, self.then, self.orelse)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Let(Term):
    """L(x, c_r, c_b): t ◇ L = (t ▷ (t ◇ c_r)) ◇ c_b."""

    var: str
    rhs: Term
    body: Term
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        return (self.var,)

    def kids(self) -> tuple[Term, ...]:
        return (self.rhs, self.body)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Build(Term):
    """B(c_s, i, c_e): build (t ◇ c_s) (λi. (t ▷ i) ◇ c_e)."""

    size: Term
    var: str
    body: Term
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        return (self.var,)

    def kids(self) -> tuple[Term, ...]:
        return (self.size, self.body)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fold(Term):
    """FOLD(x, c_f, c_a, c_v): fold (λx. (t ▷ x) ◇ c_f) (t ◇ c_a) (t ◇ c_v) (Note [CL extensions])."""

    var: str
    body: Term
    init: Term
    vec: Term
    _hash: int | None = field(**_h)

    def head(self) -> tuple:
        return (self.var,)

    def kids(self) -> tuple[Term, ...]:
        return (self.body, self.init, self.vec)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Assert(Term):
    """ASSERT(c_c, c_b): assert (t ◇ c_c) (t ◇ c_b) (Note [CL extensions])."""

    cond: Term
    body: Term
    _hash: int | None = field(**_h)

    def kids(self) -> tuple[Term, ...]:
        return (self.cond, self.body)


I = Identity()  # noqa: E741  (the paper's name)


def comp(*terms: Term) -> Term:
    """c₁ ; c₂ ; …, flattened; one term is itself, none is I."""
    parts: list[Term] = []
    for t in terms:
        parts.extend(t.parts if isinstance(t, Comp) else (t,))
    if not parts:
        return I
    return parts[0] if len(parts) == 1 else Comp(tuple(parts))


def projection(i: int, n: int) -> Func:
    """F(π_{i,n}): component i (1-based) of an n-tuple, a bare value."""
    return Func(f"get${i}${n}")


def projection_index(name: Name) -> tuple[int, int] | None:
    """(i, n) when ``name`` is get$i$n."""
    if isinstance(name, str) and name.startswith("get$"):
        bits = name.split("$")
        if len(bits) == 3 and bits[1].isdigit() and bits[2].isdigit() and 1 <= int(bits[1]) <= int(bits[2]):
            return int(bits[1]), int(bits[2])
    return None


@dataclass(frozen=True)
class CLDef:
    """def f : S ⇒ T = c.  ``params`` are f's parameters (the context Γ the
    conversion started from); a function of one parameter takes its argument
    bare, so its term starts with ``(I,)``, which makes the one-element context."""

    name: Name
    arg: Type
    ret: Type
    params: tuple[tuple[str, Type], ...]
    body: Term
