"""What the ``compiled`` backend can represent: the types that have a machine
representation (Notes [Compiled sums], [Struct of arrays]) and the reason a
def is not compiled (:class:`Unsupported`), shared by the generator's modules."""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Iterator

from ..errors import Span
from ..ir.nodes import Call
from ..ir.traverse import nodes
from ..ir.types import BOOL, CONTRIB, DELTA, FLOAT, INTEGER, STAGED, STATE, STRING, TLam, TSum, TTensor, TTuple, Type

MAX_TYPE_DEPTH = 32  # Numba's typing of nested tuples is superlinear in their depth
MAX_STATEMENTS = 2000  # Numba's compile time grows faster than linearly with function size
MAX_NODES = 4 * MAX_STATEMENTS  # a def this big would exceed MAX_STATEMENTS: refused before generating


class Unsupported(Exception):
    def __init__(self, what: str, span: Span | None) -> None:
        super().__init__(f"{what} at {span!r}" if span else what)


class Orchestration(Unsupported):
    """The def prints (or calls a function that does): Note [Orchestration] in compiled.py."""


def oversized(d) -> Unsupported | None:
    """Note [Oversized defs go to python first]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A def of more than MAX_NODES nodes is refused by ``NumbaModuleSource.generate_def``
    (Numba's compile time grows faster than linearly), but only after the compiled
    backend has walked all of it: whether a type in it mentions a BOG (twice: for the
    def and for its entry as a callee), and, once refused, whether it holds a vector of
    vectors of integers for the ragged variant, which would be refused for its size too.
    At 10^5 nested lets those walks made the compiled backend 1.5-2.5 s slower than
    python, which then ran the def anyway.  So the size is counted first, in the same
    pre-order as ``generate_def``, stopping at MAX_NODES + 1: by ``CompiledBackend.generate``
    for the def it is asked to compile and by ``NumbaModuleSource.definition`` for a
    callee (a small def calling a huge one).  The result is the refusal, or None; a def
    that prints within those nodes is left to the general path, which makes it an
    orchestrator exactly as before."""
    for k, x in enumerate(nodes(d.body)):
        if x.__class__ is Call and x.func == "print":
            return None
        if k > MAX_NODES:
            return Unsupported(f"a body of more than {MAX_NODES} nodes", d.span)
    return None


def refusal(exc: BaseException) -> str:
    """The first line of Numba's refusal of generated code, for a note."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:120]


def representable(t: Type, depth: int = 0) -> bool:
    if t in (FLOAT, INTEGER, BOOL, STRING, DELTA, CONTRIB):  # a Delta, a Contrib: nodes of the tape (numba_tape.py)
        return True
    if t in (STAGED, STATE):  # inside a run only (Note [Staged versions in compiled code] in numba_dualrev.py)
        return True
    if isinstance(t, TTuple):
        return depth < MAX_TYPE_DEPTH and all(representable(e, depth + 1) for e in t.elems)
    if isinstance(t, TSum):  # Note [Compiled sums]
        return depth < MAX_TYPE_DEPTH and representable(t.left, depth + 1) and representable(t.right, depth + 1)
    if isinstance(t, TLam):  # (tag, slot): Note [Defunctionalisation] in numba_closures.py
        return representable(t.arg, depth + 1) and representable(t.res, depth + 1)
    if closure_vec(t):  # an int64 array of (tag, slot) rows
        return representable(t.elem, depth + 1)
    return array_rank(t) is not None or int_array(t) or is_soa(t) or soa_matrix(t)


def closure_vec(t: Type | None) -> bool:
    """``Vec (Lam S T)``: an (n, 2) int64 array of closures (Note [Defunctionalisation])."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TLam)


_RAGGED: ContextVar[bool] = ContextVar("labrys_ragged", default=False)


@contextlib.contextmanager
def ragged_variant() -> Iterator[None]:
    """Note [Ragged vectors of numbers] (numba_nested.py): while generating (and converting for) a
    def's ragged variant, every ``Vec (Vec … Float)`` is a nested struct of arrays, not an N-D array."""
    token = _RAGGED.set(True)
    try:
        yield
    finally:
        _RAGGED.reset(token)


def in_ragged_variant() -> bool:
    return _RAGGED.get()


def _number_nest(t: Type) -> bool:
    """``Vec (Vec … N)`` of a number N, two or more vectors deep."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTensor) and soa_rank(t) is not None


def mentions_nest(d, number: Type) -> bool:
    """Does a type of d's parameters, result or body hold a ``Vec (Vec … number)``?"""
    def holds(t: Type) -> bool:
        if isinstance(t, TTuple):
            return any(holds(e) for e in t.elems)
        if isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTensor) and t.elem.rank == 1:
            e = t.elem
            while isinstance(e, TTensor) and e.rank == 1:
                e = e.elem
            return e == number or holds(e)
        return isinstance(t, TTensor) and holds(t.elem)
    return any(holds(p.type) for p in d.params) or holds(d.ret) or \
        any(holds(getattr(x, "type", None)) for x in nodes(d.body))


def int_array(t: Type) -> bool:
    """``Tensor N Integer``: an int64 array (no arithmetic on it is compiled)."""
    return isinstance(t, TTensor) and t.elem == INTEGER


def array_rank(t: Type) -> int | None:
    """Rank of the float64 array that represents ``t``: ``Tensor N Float`` is N-D,
    ``Vec`` of such a tensor one more (rectangular: checked where values enter)."""
    if not isinstance(t, TTensor):
        return None
    if t.elem == FLOAT:
        return t.rank
    if _RAGGED.get() and _number_nest(t):  # Note [Ragged vectors of numbers]
        return None
    inner = array_rank(t.elem)
    return None if inner is None or t.rank != 1 else inner + 1


def float_tensor(t: Type) -> bool:
    return array_rank(t) is not None


UNIT = TTuple(())  # the tangent of an Integer
UNITS = TTensor(1, UNIT)  # Vec (Tuple): the tangent of a Vec Integer


CLOSURE_PAIR = TTuple((INTEGER, INTEGER))


def layout(t: Type) -> Type:
    """Note [Closures in a struct of arrays]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A closure value is the pair ``(tag, slot)`` of int64 (Note [Defunctionalisation]
    in numba_closures.py), so a function-typed component of a vector of tuples
    (the staged dualrev versions' dual of a ``Vec Float``: ``Vec (Tuple Float
    (Lam Float c))``, Note [Staged versions in compiled code] in numba_dualrev.py)
    is laid out as the tuple ``(Tuple Integer Integer)`` is: two int64 columns, and
    reading element i gives the pair back.  ``layout`` is t with every closure
    (outside function types) replaced by that pair."""
    if isinstance(t, TLam):
        return CLOSURE_PAIR
    if isinstance(t, TTuple) and any(isinstance(e, (TLam, TTuple)) for e in t.elems):
        return TTuple(tuple(layout(e) for e in t.elems))
    return t


def components(t: Type) -> tuple[Type, ...]:
    """The columns of a vector of t: a tuple's components; a sum's tag and its two
    slots, as in its tagged representation (Notes [Compiled sums], [Struct of arrays]);
    a closure as a pair of int64 (Note [Closures in a struct of arrays])."""
    return (BOOL, layout(t.left), layout(t.right)) if isinstance(t, TSum) else layout(t).elems


def is_soa(t: Type | None) -> bool:
    """``Vec (Tuple …)`` or ``Vec (Sum …)`` whose components have columns (Note [Struct of arrays])."""
    return isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, (TTuple, TSum)) and \
        all(column_ok(e) for e in components(t.elem))


# a column's NumPy type; Float's is the default
COLUMN_DTYPES = {INTEGER: "int64", DELTA: "int64", CONTRIB: "int64", BOOL: "bool_"}


def column_ok(e: Type) -> bool:
    """A component with a column: a number, a Float tensor, a tuple or sum (a struct of its own),
    or a vector of tuples (rows, Note [Rows of structs of arrays] in numba_soa.py)."""
    return e in (FLOAT, INTEGER, BOOL, DELTA, CONTRIB) or array_rank(TTensor(1, e)) is not None \
        or is_soa(TTensor(1, e)) or is_soa(e)


def soa_rank(t: Type | None) -> int | None:
    """r ≥ 2 for ``Vec (… (Vec (Tuple …)))``, r vectors deep, of Float, Integer, Bool columns (in tuples
    of their own, e.g. a dual number, or units ``(Tuple)``, the tangent of an Integer, which have none): a struct
    of arrays of rank r (Note [Nested struct of arrays] in numba_nested.py); None otherwise."""
    r = 0
    while isinstance(t, TTensor) and t.rank == 1:
        t, r = t.elem, r + 1
    if r >= 2 and t in (FLOAT, INTEGER) and _RAGGED.get():  # Note [Ragged vectors of numbers]
        return r
    t = layout(t)
    return r if r >= 2 and isinstance(t, TTuple) and t.elems and _flat(t) else None


def _flat(t: Type) -> bool:
    """Numbers, or tuples of them (the unit ``(Tuple)`` among them), at any depth: flat columns."""
    return t in (FLOAT, INTEGER, BOOL, DELTA, CONTRIB) or isinstance(t, TTuple) and all(_flat(e) for e in t.elems)


def holds_data(t: Type, scalars: tuple[Type, ...]) -> bool:
    """One of ``scalars`` in t's tuples, sums or vectors (not inside function types): a run's
    values that no compiled call may take or return (Deltas, Contribs, Staged maps, States)."""
    if t in scalars:
        return True
    if isinstance(t, TTuple):
        return any(holds_data(e, scalars) for e in t.elems)
    if isinstance(t, TSum):
        return holds_data(t.left, scalars) or holds_data(t.right, scalars)
    return isinstance(t, TTensor) and holds_data(t.elem, scalars)


def soa_matrix(t: Type | None) -> bool:
    return soa_rank(t) is not None


def soa_leaves(t: TTensor) -> list[tuple[tuple[int, ...], Type]]:
    """The columns of a nested struct of arrays: each number's path in the element tuple, and its type."""
    while isinstance(t, TTensor):
        t = t.elem
    t = layout(t)
    if not isinstance(t, TTuple):  # a nest of numbers: one column (Note [Ragged vectors of numbers])
        return [((), t)]
    out: list[tuple[tuple[int, ...], Type]] = []
    todo = [((k,), e) for k, e in reversed(list(enumerate(t.elems)))]
    while todo:
        path, e = todo.pop()
        if isinstance(e, TTuple):
            todo.extend((path + (k,), u) for k, u in reversed(list(enumerate(e.elems))))
        else:
            out.append((path, e))
    return out


def involves_soa(t: Type | None) -> bool:
    if isinstance(t, TTuple):
        return any(involves_soa(e) for e in t.elems)
    return is_soa(t) or soa_matrix(t)
