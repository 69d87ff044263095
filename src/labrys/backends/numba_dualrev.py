"""Smeding & Vákár's staged versions D¹–D⁵ (Dual-numbers reverse AD, efficiently,
§5–§8) on the ``compiled`` backend: their run-time primitives as code over the data
of :mod:`.numba_dualrev_runtime`, their backpropagators as closures.

    Γ ⊢ (dr1Zero) : Lam Float c                 ↦  the run-time closure λz. 0_c
    Γ ⊢ (oplus c1 c2) : c                       ↦  _dr_add_c(c1, c2)
    Γ ⊢ (drNewId) : Integer                     ↦  _drt_fresh(_tape)
    Γ ⊢ (drZeroS) / (drPlusS s1 s2) : Staged    ↦  _drs_empty() / _drs_plus(s1, s2)
    Γ ⊢ (dr2Tag f) : Lam Float Staged           ↦  the run-time closure (fresh tag, f): λz. f z
    Γ ⊢ (dr2Call f x) / (dr3Call (j, f) x)      ↦  _drs_stage(_drs_empty(), tag of f / j, f, x)
    Γ ⊢ (dr4Call (j, f) x s) : Staged           ↦  _drs_stage(s, j, f, x)
    Γ ⊢ (dr5Call (j, f) x s) : State            ↦  _dr5_stage(s, j, f, x)
    Γ ⊢ (drNInputs x) : D[S]                    ↦  x's reals paired with run-time input backpropagators
    Γ ⊢ (drNGradient x y dt) : dS               ↦  the outputs' backpropagators applied, the version's
                                                    resolve loop, c read like x

Note [Staged versions in compiled code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The translations stay as they are (their op counts on ``interp`` are the
paper's claims): a backpropagator is a real closure, compiled as every closure
is (Note [Defunctionalisation] in numba_closures.py), and the closures the run
time makes — an input's backpropagator, a literal's, D²'s tagged one, D⁴'s
setters and D⁵'s input updaters — are run-time candidates of their types
(Note [Run-time closures]), with the captured values (the input's position,
its ID, D²'s tag) in the heap.  D²'s key of a backpropagator is read from the
heap: every backpropagator of D² is tagged or an input's, both keep their key
first.  D¹ needs no run; from D² on the tags and IDs come from the tape's
counter (Note [The ID counter of the staged versions]), so a module that uses
them threads ``_tape`` (Note [The tape in generated code]).  The resolve loops
are the Python run time's (``labrys.ad.dualrev_staged``), iterative, in the
wrapper's code.  Inputs and outputs are Floats, Integers, Bools, Strings and
tuples of them; another type raises :class:`Unsupported` (the derivative runs
on ``python`` with a note).
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.types import FLOAT, INTEGER, STAGED, STATE, TLam, TSum, TTensor, TTuple, Type
from .numba_closures import Candidate, lam_types
from .numba_dualrev_io import StagedIOMixin, count_reals
from .numba_tape import NeedsTape
from .numba_types import Unsupported, holds_data

VEC = TTensor(1, FLOAT)
BP1 = TLam(FLOAT, VEC)
BP2 = TLam(FLOAT, STAGED)
UPD4, UPD5 = TLam(STAGED, STAGED), TLam(STATE, STATE)
BP4, BP5 = TLam(FLOAT, UPD4), TLam(FLOAT, UPD5)
VERSIONS = {"dr1": "dualrev1", "dr2": "dualrev2", "dr3": "dualrev3", "dr4": "dualrev4", "dr5": "dualrev5"}
STAGED_PRIMITIVES = ("oplus", "drNewId", "drZeroS", "drPlusS", "dr2Tag", "dr2Call", "dr3Call", "dr4Call", "dr5Call") \
    + tuple(f"{v}{what}" for v in VERSIONS for what in ("Zero", "Inputs", "Gradient"))
_RUN_FREE = ("oplus", "dr1Zero", "dr1Inputs", "dr1Gradient", "drZeroS", "drPlusS", "dr3Call", "dr4Call",
             "dr5Call")  # need no ID counter


def native(table, name: str, t: TLam, env: tuple[Type, ...], call: Callable[[str, str], str],
           applies: bool = False) -> Candidate:
    """Note [Run-time closures]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A closure the run time of an AD algorithm makes has no lambda in the program:
    it is a candidate of its type all the same (Note [Defunctionalisation]), named,
    whose call ``call(x, env)`` is an expression of generated code (``env[i]`` its
    i-th captured value, of type ``env[i]``); ``applies``: the call applies a function
    value, so its branch of ``apply`` is typed last."""
    key = ("native", name, t)
    if key in table.by_key:
        return table.by_key[key]
    table.used = True
    table.apply_of(t)
    heap = table.env_list(TTuple(env)) if env else None
    cand = Candidate(len(table.by_type[t]), t, None, tuple((f"_v{i}", u) for i, u in enumerate(env)), heap, call,
                     applies)
    table.by_key[key] = cand
    table.by_type[t].append(cand)
    for u in env:
        lam_types(u, table._env_types)
    return cand


def staged_boundary(d: ir.Def) -> None:
    """A Staged or a State lives inside one run: never an argument or the result of a compiled call."""
    for what, t in [(f"parameter {p.name}", p.type) for p in d.params] + [("result", d.ret)]:
        if holds_data(t, (STAGED, STATE)):
            raise Unsupported(f"{what} of type {t} (the state of a run of a staged dualrev version)", d.span)
        if _closure_column(t):  # Note [Closures in a struct of arrays]: built and read inside a run only
            raise Unsupported(f"{what} of type {t} (a vector of tuples holding functions)", d.span)


def _closure_column(t: Type, in_vec: bool = False) -> bool:
    if isinstance(t, TLam):
        return in_vec
    if isinstance(t, TTuple):
        return any(_closure_column(e, in_vec) for e in t.elems)
    if isinstance(t, TSum):
        return _closure_column(t.left, in_vec) or _closure_column(t.right, in_vec)
    return isinstance(t, TTensor) and not isinstance(t.elem, TLam) and _closure_column(t.elem, True)


def _i(n) -> str:
    return f"_np.int64({n})"  # Note [Closure tags are not literals]


class StagedMixin(StagedIOMixin):
    """The rules of the Numba emitter for D¹–D⁵ (Note [Staged versions in compiled code])."""

    def staged_call(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> bool:
        if name not in STAGED_PRIMITIVES or (name == "oplus" and any(a.type != VEC for a in args)):
            return False
        if name not in _RUN_FREE and not self.mod.tape:
            raise NeedsTape(name)
        xs = [self.atom(a) for a in args]
        if name == "oplus":
            self.emit(f"{t} = _dr_add_c({xs[0]}, {xs[1]})")
        elif name == "drNewId":
            self.emit(f"{t} = _drt_fresh(_tape)")
        elif name == "drZeroS":
            self.emit(f"{t} = _drs_empty()")
        elif name == "drPlusS":
            self.emit(f"{t} = _drs_plus({xs[0]}, {xs[1]})")
        elif name == "dr1Zero":
            self.emit(f"{t} = {self._closure(self._runtime('zero', BP1), [])}")
        elif name == "dr2Zero":
            self.emit(f"{t} = {self._tagged(self._closure(self._runtime('zero', BP2), []))}")
        elif name == "dr2Tag":
            self.emit(f"{t} = {self._tagged(xs[0])}")
        elif name in ("dr3Zero", "dr4Zero", "dr5Zero"):
            image = {"dr3Zero": BP2, "dr4Zero": BP4, "dr5Zero": BP5}[name]
            i = self.mod.fresh("id")
            self.emit(f"{i} = _drt_fresh(_tape)")
            self.emit(f"{t} = ({i}, {self._closure(self._runtime('zero', image), [])})")
        elif name == "dr2Call":
            key = self.mod.fresh("key")
            tagged, inputs = self._runtime("tagged", BP2), self._runtime("input", BP2)
            self.emit(f"if {xs[0]}[0] == {tagged.tag}:")
            self.indented().emit(f"{key} = _heap[{tagged.heap}][{xs[0]}[1]][0]")
            self.emit("else:")
            self.indented().emit(f"{key} = _heap[{inputs.heap}][{xs[0]}[1]][0]")
            self.emit(f"{t} = _drs_stage(_drs_empty(), {key}, {xs[0]}, {xs[1]})")
        elif name == "dr3Call":
            self.emit(f"{t} = _drs_stage(_drs_empty(), {xs[0]}[0], {xs[0]}[1], {xs[1]})")
        elif name == "dr4Call":
            self.emit(f"{t} = _drs_stage({xs[2]}, {xs[0]}[0], {xs[0]}[1], {xs[1]})")
        elif name == "dr5Call":
            self.emit(f"{t} = _dr5_stage({xs[2]}, {xs[0]}[0], {xs[0]}[1], {xs[1]})")
        elif name.endswith("Inputs"):
            self.emit(f"{t} = {self._interleave(name[:3], xs[0], args[0].type, e)}")
        else:
            self.emit(f"{t} = {self._gradient(name[:3], xs, args, e)}")
        return True

    # --- run-time closures (Note [Run-time closures]) -----------------------------------------

    def _hidden(self) -> str:
        return ", ".join(self.mod.hidden("_room - 1"))

    def _runtime(self, what: str, t: TLam) -> Candidate:
        table = self.mod.closures
        if what == "zero" and t in (BP4, BP5):  # λz. id
            upd = self._runtime("id", t.res)
            return native(table, "zero", t, (), lambda x, e: f"({_i(upd.tag)}, {_i(0)})")
        if what == "id":
            return native(table, "id", t, (), lambda x, e: x)
        if what == "zero":
            return native(table, "zero", t, (), lambda x, e: "_np.zeros(0)" if t == BP1 else "_drs_empty()")
        if what == "tagged":  # D²: (tag, f) ↦ λz. f z
            return native(table, "tagged", t, (INTEGER, t),
                          lambda x, e: f"{table.apply_of(t)}({e}[1], {x}, {self._hidden()})", applies=True)
        if what == "input" and t == BP1:  # (a, k) ↦ λz. one-hot(a, k) z
            return native(table, "input", t, (INTEGER, INTEGER), lambda x, e: f"_dr_onehot({e}[0], {e}[1], {x})")
        if what == "input" and t == BP2:  # (ID, a, k) ↦ λz. InitStaged (one-hot(a, k) z)
            return native(table, "input", t, (INTEGER, INTEGER, INTEGER),
                          lambda x, e: f"_drs_init(_dr_onehot({e}[1], {e}[2], {x}))")
        if what == "input":  # D⁴: k ↦ λz. (c[k] += z), D⁵: ID ↦ λz. (cot[ID] += z)
            d4 = t == BP4
            upd = native(table, "input", t.res, (INTEGER, FLOAT),
                         lambda x, e: f"_drs_setc({x}, {e}[0], {e}[1])" if d4 else f"_dr5_cot({x}, {e}[0], {e}[1])")
            return native(table, "input", t, (INTEGER,),
                          lambda x, e: f"({_i(upd.tag)}, _dr_push(_heap[{upd.heap}], ({e}[0], {x})))")
        raise AssertionError(what)

    def _closure(self, cand: Candidate, env: list[str]) -> str:
        if cand.heap is None:
            return f"({_i(cand.tag)}, {_i(0)})"
        return f"({_i(cand.tag)}, _dr_push(_heap[{cand.heap}], ({''.join(v + ', ' for v in env)})))"

    def _tagged(self, f: str) -> str:
        i = self.mod.fresh("tag")
        self.emit(f"{i} = _drt_fresh(_tape)")
        return self._closure(self._runtime("tagged", BP2), [i, f])

    # --- Interleave (numba_dualrev_io.py) --------------------------------------------------

    def _interleave(self, v: str, x: str, t: Type, e: ir.Call) -> str:
        if v != "dr1":
            self.emit("_drt_begin(_tape)")
        a = self.mod.fresh("a")
        self.emit(f"{a} = _np.int64({count_reals(x, t, e)})")
        return self.staged_interleave(v, x, t, a, e)

    def input_image(self, v: str, a: str, q: str) -> str:
        """The image of the input real at position q of c (size a): its backpropagator, from D³ on
        with its fresh ID."""
        if v == "dr1":
            return self._closure(self._runtime("input", BP1), [a, f"_np.int64({q})"])
        i = self.mod.fresh("id")
        self.emit(f"{i} = _drt_fresh(_tape)")
        if v in ("dr2", "dr3"):
            bp = self._closure(self._runtime("input", BP2), [i, a, f"_np.int64({q})"])
            return bp if v == "dr2" else f"({i}, {bp})"
        env = [f"_np.int64({q})"] if v == "dr4" else [i]  # D⁴: c's position, D⁵: the ID
        return f"({i}, {self._closure(self._runtime('input', BP4 if v == 'dr4' else BP5), env)})"

    # --- Deinterleave and the resolve loops --------------------------------------------------

    def _gradient(self, v: str, xs: list[str], args: tuple[ir.Expr, ...], e: ir.Call) -> str:
        x, y, dt = xs
        a, h = self.mod.fresh("a"), self._hidden()
        self.emit(f"{a} = _np.int64({count_reals(x, args[0].type, e)})")
        image = {"dr1": BP1, "dr2": BP2, "dr3": TTuple((INTEGER, BP2)), "dr4": TTuple((INTEGER, BP4)),
                 "dr5": TTuple((INTEGER, BP5))}[v]

        def outputs(seed: Callable[[object, str, str], None]) -> None:
            self.seed_each(y, dt, args[2].type, image, seed, e)
        table = self.mod.closures
        if v == "dr1":
            g = self.mod.fresh("g")
            self.emit(f"{g} = _np.zeros({a})")
            outputs(lambda em, bp, z: em.emit(f"{g} = _dr_add_c({g}, {table.apply_of(BP1)}({bp}, {z}, {h}))"))
            return self._read(g, "0", x, args[0].type, e)
        s, key, f, arg = (self.mod.fresh(n) for n in ("s", "key", "f", "x"))
        if v == "dr5":
            base, n = self.mod.fresh("base"), self.mod.fresh("n")
            self.emit(f"{base} = _drt_base(_tape)")
            self.emit(f"{n} = _tape[0][0] - {base}")  # ints[N]: the next free ID
            self.emit(f"{s} = _dr5_state({a} + 1, {n}, {base})")
            apply_bp, apply_upd = table.apply_of(BP5), table.apply_of(UPD5)
            outputs(lambda em, bp, z: em.emit(f"{s} = {apply_upd}({apply_bp}({bp}[1], {z}, {h}), {s}, {h})"))
            i = self.mod.fresh("i")
            self.emit(f"for {i} in range({n} - 1, 0, -1):")  # ResolveState: IDs i'−1 down to 1
            body = self.indented()
            body.emit(f"if {s}[1][{i}, 0] >= 0:")
            body.indented().emit(f"{s} = {apply_upd}({apply_bp}(({s}[1][{i}, 0], {s}[1][{i}, 1]), {s}[2][{i}], {h}), "
                                 f"{s}, {h})")
            self.emit("_drs_end(_tape)")
            return self._read(f"{s}[0]", "1", x, args[0].type, e)
        self.emit(f"{s} = _drs_init(_np.zeros({a}))")
        if v == "dr4":
            apply_bp, apply_upd = table.apply_of(BP4), table.apply_of(UPD4)

            def run(bp: str, z: str) -> str:
                return f"{apply_upd}({apply_bp}({bp}, {z}, {h}), {s}, {h})"
        else:
            def run(bp: str, z: str) -> str:
                return f"_drs_plus({table.apply_of(BP2)}({bp}, {z}, {h}), {s})"
        outputs(lambda em, bp, z: em.emit(f"{s} = {run(bp if v == 'dr2' else f'{bp}[1]', z)}"))
        self.emit(f"while len({s}[1]) > 0:")  # ResolveStaged: the largest key first
        body = self.indented()
        body.emit(f"{key}, {f}, {arg} = _drs_pop({s})")
        body.emit(f"{s} = {run(f, arg)}")
        self.emit("_drs_end(_tape)")
        return self._read(f"{s}[0]", "0", x, args[0].type, e)

    def _read(self, c: str, first: str, x: str, t: Type, e: ir.Call) -> str:
        """dS shaped like x, its reals c[first], c[first + 1], … (Interleave's order)."""
        k = self.mod.fresh("k")
        self.emit(f"{k} = {first}")
        return self.deinterleave(c, k, x, t, e)
