"""CHAD's linear target language (Vákár & Smeding, CHAD §4, Figs 5–6) and its
checker, run on every term CHAD generates (raw and simplified):

    Γ; v : τ̲ ⊢ t : σ̲      t is linear in v (a monoid homomorphism in it)

    linear types   τ̲, σ̲ ::= Float | (Tuple) | Tuple τ̲ .. | Tensor N τ̲ | Sum τ̲ σ̲ [ext]
                          | Lam A σ̲                 power  A → σ̲   (A Cartesian)
                          | Vec (Tuple A σ̲)         copower !A ⊗ σ̲ (A Cartesian)
    Cartesian types gain τ̲ ⊸ σ̲, lowered to Lam τ̲ σ̲ (§9.2).

Note [One IR for the linear language]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
labrys keeps ONE immutable IR.  The linear term formers of Fig. 5 are the
shared IR's nodes with distinguished primitives, each the §9.2 reference
lowering of one former, so the raw term already prints as `.ks`, type-checks
and runs:

    lin v -> t     a ``lam`` whose binder the translation registers as linear
    f • s          ``App`` of a Cartesian f : τ̲ ⊸ σ̲ to a linear s
    0_τ, t + s     ``chadZero (lam (z : τ) z)``, ``chadPlus t s`` (Float: 0.0, add)
    !a ⊗ w         ``chadCopow a w``           case c of !y ⊗ w -> s   ``chadCopowFold (lam (p : Tuple A W) s) c``
    lop(x; s)      a primitive's ``Dop``/``DopT`` from its registry entry (its fwd/rev rule), linear in ONE
                   argument: ``mul``'s factor, ``div``'s numerator, ``neg``, ``chadIndex``, ``chadOneHot``, …
    Σ_i t          ``chadSumBuild n (lam (i : Integer) t)``

so ``⊸`` is ``Lam`` in the types and the copower a list of pairs.  What the
IR's types no longer say is what this module checks:

* **the linear types** (:func:`is_linear_type`): the linear variable of every
  linear λ, its body, every ``0`` and every ``+`` have a type of the grammar
  above — a cotangent never holds an Integer or a Bool except as a copower's
  or power's Cartesian argument;
* **the linear term formers** (:mod:`.chad_lint`): the body is built from v by
  the formers of Fig. 5 only — a linear op applied to ONE argument depending on
  v; ``+`` and tuples of parts depending on v or 0; ``f • s`` with f free of v;
  conditions, case scrutinees, indices and copower arguments free of v; a
  result that depends on v or is 0.  So a cotangent used twice without ``+``
  (``mul v v``), one dropped without ``0`` (``lin v -> 1.0``) and a non-linear
  op applied to it (``sin v``) are rejected, each with its rule named.

The check runs on the *typed* term (after the pass driver's type checker), so
the types it reads are the ones the run time specialises on.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import nodes
from ..ir.types import FLOAT, UNIT, TLam, TSum, TTensor, TTuple, Type
from ..types.checker import Functions, check_def
from .chad_lint import lint_linearity

# linear primitives whose type is the linear type they make (0 and +)
_MONOID = ("chadZero", "chadZeroLike", "chadPlus")


def is_linear_type(t: Type) -> bool:
    """τ̲ of Fig. 5 (with sums [ext]): Float, (Tuple), tuples, tensors and sums of linear
    types, powers A → σ̲ and copowers !A ⊗ σ̲ (A Cartesian)."""
    stack = [t]
    while stack:
        x = stack.pop()
        match x:
            case TTuple(elems):
                stack.extend(elems)
            case TTensor(1, TTuple((a, w))) if not is_linear_type(a):
                stack.append(w)  # a copower !A ⊗ w: A is Cartesian
            case TTensor(_, elem):
                stack.append(elem)
            case TSum(a, b):
                stack.extend((a, b))
            case TLam(_, res):
                stack.append(res)  # a power A → σ̲ (or a lowered ⊸ inside a power)
            case _ if x == FLOAT or x == UNIT:
                pass
            case _:
                return False
    return True


def show_linear_type(t: Type) -> str:
    """A linear type as Fig. 5 writes it: tuples as products, copowers as !A ⊗ σ̲, powers as A → σ̲."""
    match t:
        case TTuple(()):
            return "1"
        case TTuple(elems):
            return "(" + " * ".join(show_linear_type(e) for e in elems) + ")"
        case TTensor(1, TTuple((a, w))) if not is_linear_type(a):
            return f"(!{a} ⊗ {show_linear_type(w)})"
        case TTensor(rank, elem):
            return f"(Tensor {rank} {show_linear_type(elem)})" if rank > 1 else f"(Vec {show_linear_type(elem)})"
        case TSum(a, b):
            return f"({show_linear_type(a)} + {show_linear_type(b)})"
        case TLam(a, res):
            return f"({a} → {show_linear_type(res)})"
    return str(t)


def linear_signatures(d: ir.Def, linear: set[str]) -> list[str]:
    """``v : τ̲ ⊸ σ̲`` for every linear λ of a typed d (what ``show --stages`` prints above a raw term)."""
    out = []
    for x in nodes(d.body):
        if isinstance(x, ir.Lam) and x.var in linear and x.body.type is not None:
            out.append(f"{x.var} : {show_linear_type(x.var_type)} ⊸ {show_linear_type(x.body.type)}")
    return out


def check_linear(d: ir.Def, linear: set[str], functions: Functions) -> ir.Def:
    """Fig. 5 on d: the linear types, then the linear term formers; d type-checked (returned)."""
    typed = check_def(d, functions)
    _check_types(typed, linear)
    lint_linearity(typed, linear)
    return typed


def _fail(d: ir.Def, what: str, e: ir.Expr):
    raise LabrysError(f"internal: CHAD made a term outside its linear language (Fig. 5) in {show_name(d.name)}: "
                      f"{what}", e.span or d.span)


def _check_types(d: ir.Def, linear: set[str]) -> None:
    for x in nodes(d.body):
        if isinstance(x, ir.Lam) and x.var in linear:
            if not is_linear_type(x.var_type):
                _fail(d, f"the linear variable {x.var} has type {x.var_type}, which is not a linear type "
                         "(Float, (Tuple), products, tensors, sums, powers A → σ and copowers !A ⊗ σ of them)", x)
            if x.body.type is not None and not is_linear_type(x.body.type):
                _fail(d, f"the body of lin {x.var} -> … has type {x.body.type}, which is not a linear type", x)
        elif isinstance(x, ir.Call) and x.func in _MONOID and x.type is not None and not is_linear_type(x.type):
            former = "+" if x.func == "chadPlus" else "0"
            _fail(d, f"'{former}' at type {x.type}, which is not a linear type (Fig. 5 types 0 and + at linear "
                     "types only)", x)
