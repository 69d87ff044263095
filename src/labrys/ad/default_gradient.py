"""The default gradient: which of Knossos ``rev`` and split ``sufrev`` (both
reverse modes of Ellis, Peyton Jones & Fitzgibbon's working notes) a gradient
uses when the user names no method — ``labrys.grad(m.f)``, ``labrys adbench``.

    f : S → Float   ↦   Choice(method ∈ {rev, sufrev}, reason)

The rule reads f's call graph (the user functions f reaches), in this order:

1. a **non-tail recursive call** (g calls h, h reaches g, and the call is not
   g's result) → ``sufrev``: ``[rev g]`` reruns the whole rest of the recursion
   at every level, quadratic; split mode keeps each level's BOG, linear;
2. calls **nested ``DEEP_CALLS`` or more deep** (f → g → h → k → l) →
   ``sufrev``: ``[rev g]`` reruns the primal of everything below g, so rev's
   cost grows with the depth; split mode's does not;
3. otherwise → ``rev``: it recomputes little (leaf callees are inlined by
   the optimiser, where CSE shares their primal) and its constant is smaller
   (ADBench GMM: 3.9× the primal against sufrev's 4.5×).  Tail recursion is
   linear under rev too (the tail call's primal is never needed).

``sufrev`` is chosen only if it can differentiate f; if split mode refuses
it, ``rev`` is the default and the reason says why.

Note [The default gradient]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
``DEEP_CALLS`` is measured, not derived: on a chain of functions each calling
the next and adding a loop of its own (``docs/split.md``), ``[rev f]`` costs
3.0, 3.7, 4.4, 5.0, 5.5, 6.1 × the primal at call depths 1…6.  ``[sufrev f]``
cost 4.7…4.9 × when the rule was set (crossing between depths 3 and 4); split
mode has since become cheaper, 4.0…4.2 ×, which moves the crossing to between
2 and 3, where at depth 3 rev costs 6% more.  The threshold stays at 4: the
3-deep ADBench programs it would switch still lose on ``compiled``, where the
counts are not the cost (LSTM l2 c1024, process CPU, median of 5: ``rev``
28 ms, ``sufrev`` 36 ms — 235 ms before its split passes compiled; GMM d10
K25: 25 ms against 160 ms).  The rule is static (no run is needed to choose)
and in one place; ``labrys show FILE f`` prints the choice and its reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, show_name
from ..types.checker import Signature
from .pipeline import calls

DEEP_CALLS = 4


@dataclass(frozen=True)
class Choice:
    method: str   # "rev" or "sufrev"
    reason: str


def default_gradient(derivations, sig: Signature) -> Choice:
    """The reverse mode ``labrys.grad`` uses for ``sig`` when no method is named."""
    table = derivations.memo.setdefault("default-gradient", {})
    if id(sig) not in table:
        table[id(sig)] = _choose(derivations, sig)
    return table[id(sig)]


def _choose(derivations, sig: Signature) -> Choice:
    graph = CallGraph(derivations, sig)
    name = show_name(sig.name)
    why = None
    looping = graph.non_tail_recursion()
    if looping is not None:
        g, h = looping
        calling = f"{g} calls itself" if g == h else f"{g} calls {h}, which calls {g} again,"
        why = (f"non-tail recursion ({calling} and uses the result): [rev {g}] "
               f"would rerun the rest of the recursion at every level (quadratic); sufrev keeps each level's BOG")
    else:
        chain = graph.deepest_chain()
        if len(chain) - 1 >= DEEP_CALLS:
            why = (f"calls nest {len(chain) - 1} deep ({' → '.join(chain)}): [rev g] reruns the primal of every "
                   f"function below g, so rev's cost grows with the depth; sufrev keeps each callee's BOG")
    if why is None:
        return Choice("rev", f"{name} has no non-tail recursion and calls nest less than {DEEP_CALLS} deep: "
                             "rev recomputes little (leaf callees are inlined, where they "
                             "share their primal) and its constant is smaller than sufrev's")
    try:
        derivations.derive("sufrev", sig)
    except LabrysError as err:
        return Choice("rev", f"{why}, but split mode refuses {name}: {err.message}")
    return Choice("sufrev", why)


class CallGraph:
    """The user functions ``sig`` reaches, with each call and whether it is a tail call."""

    def __init__(self, derivations, sig: Signature) -> None:
        self.derivations = derivations
        self.root = show_name(sig.name)
        self.edges: dict[str, list[tuple[str, bool]]] = {}   # caller -> [(callee, tail call?)]
        todo = [sig]
        while todo:
            s = todo.pop()
            key = show_name(s.name)
            if key in self.edges:
                continue
            self.edges[key] = []
            d = derivations.checked.typed(s.decl)
            tails = _tail_calls(d.body)
            for x in calls(d):
                if not isinstance(x, ir.Call):
                    continue
                target = derivations.functions.resolve(x.func, x.arg.type)
                if not _user_def(target):
                    continue
                self.edges[key].append((show_name(target.name), id(x) in tails))
                todo.append(target)

    def reaches(self, a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(c for c, _ in self.edges.get(x, ()))
        return False

    def non_tail_recursion(self) -> tuple[str, str] | None:
        for g, out in self.edges.items():
            for h, tail in out:
                if not tail and self.reaches(h, g):
                    return g, h
        return None

    def deepest_chain(self) -> list[str]:
        """The longest chain of calls from the root, recursive (tail) calls left out."""
        best: dict[str, list[str]] = {}
        stack = [(self.root, False)]
        while stack:
            g, done = stack.pop()
            if g in best:
                continue
            callees = [h for h, _ in self.edges[g] if not self.reaches(h, g)]
            if done:
                below = max((best[h] for h in callees), key=len, default=[])
                best[g] = [g, *below]
            else:
                stack.append((g, True))
                stack.extend((h, False) for h in callees if h not in best)
        return best[self.root]


def _user_def(target) -> bool:
    return (isinstance(target, Signature) and isinstance(target.decl, ir.Def)
            and not isinstance(target.name, DerivedName))


def _tail_calls(body: ir.Expr) -> set[int]:
    """The ids of the calls whose result is the function's result."""
    out, todo = set(), [body]
    while todo:
        e = todo.pop()
        match e:
            case ir.Let(_, _, rest) | ir.Assert(_, rest):
                todo.append(rest)
            case ir.If(_, t, f):
                todo += [t, f]
            case ir.Case():
                todo += [e.left_body, e.right_body]
            case ir.Call():
                out.add(id(e))
    return out
