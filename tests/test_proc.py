"""The procedure language of Ellis, Peyton Jones & Fitzgibbon's working notes
§10 (Figs 20–23): its linear typing, evaluator, lowering from the first-order
core, [proc f] and the reverse translation [procrev f].

Expected values are hand-computed (Fig. 22's Jacobians), finite differences,
or Knossos ``rev`` / split mode ``sufrev`` (already on main); the cost claim is
an op-count ratio on the interpreter."""
from __future__ import annotations

import importlib
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrys
from labrys.ad import proc_check as K
from labrys.ad import proc_lang as L
from labrys.ad.pipeline import fresh_for
from labrys.ad.proc import signature
from labrys.ad.proc_lower import lower_def, to_ir
from labrys.ad.proc_rev import Reverse, procrev_procedure
from labrys.ad.suf import single_use_form
from labrys.cli.main import main
from labrys.errors import LabrysError
from labrys.ir import nodes as ir
from labrys.ir.traverse import FreshNames
from labrys.ir.types import BOOL, FLOAT, UNIT, TSum, TTuple
from labrys.types.checker import Functions
from strategies import NONSMOOTH, programs
from test_knossos_ad import _check_random_program, coerce

R = FLOAT

# Fig. 22, with its two shorthands written out:
# (r1, r2) = Dup r is t = Dup r; (r1, r2) = t, and a two-argument Call takes a pair.
FIG22 = {
    "y = 5 + 6": ("""
        x1 = Const 5
        x2 = Const 6
        t = (x1, x2)
        y = Call add t""", {}, "· ⊢ · ⊣ y : ℝ"),
    "(x, y) = (r cos θ, r sin θ)": ("""
        rr = Dup r
        (r1, r2) = rr
        tt = Dup θ
        (θ1, θ2) = tt
        ct = Call cos θ1
        st = Call sin θ2
        rct = (r1, ct)
        rst = (r2, st)
        x = Call mul rct
        y = Call mul rst""", {"r": R, "θ": R}, "r : ℝ, θ : ℝ ⊢ · ⊣ x : ℝ, y : ℝ"),
    "r = x² + sin xy + 1": ("""
        xd = Dup x
        (x1, x2) = xd
        xd1 = Dup x1
        (x3, x4) = xd1
        xx = (x2, x3)
        xsq = Call mul xx
        xy = (x4, y)
        xmuly = Call mul xy
        sinxy = Call sin xmuly
        o = Const 1
        so = (sinxy, o)
        sinxy1 = Call add so
        xr = (xsq, sinxy1)
        r = Call add xr""", {"x": R, "y": R}, "x : ℝ, y : ℝ ⊢ · ⊣ r : ℝ"),
}


def judged(key):
    text, given, _ = FIG22[key]
    p = L.parse(text)
    return p, K.judge(p, given)


@pytest.mark.parametrize("key", list(FIG22))
def test_fig22_judgements_exactly(key):
    p, j = judged(key)
    assert L.show_judgement(j.gamma, p, j.delta) == FIG22[key][2]
    assert L.parse(L.show(p)) == p  # the printer's output reads back


def test_fig22_evaluation():
    p, j = judged("y = 5 + 6")
    assert K.run(p, {}, j.types) == {"y": 11.0}
    p, j = judged("(x, y) = (r cos θ, r sin θ)")
    out = K.run(p, {"r": 2.0, "θ": 0.3}, j.types)
    assert out == pytest.approx({"x": 2.0 * math.cos(0.3), "y": 2.0 * math.sin(0.3)})
    p, j = judged("r = x² + sin xy + 1")
    out = K.run(p, {"x": 1.5, "y": -0.5}, j.types)
    assert out["r"] == pytest.approx(1.5 ** 2 + math.sin(-0.75) + 1)


# --- the linear typing: what it refuses, and the Case rule ------------------------------------

@pytest.mark.parametrize("text, message", [
    ("a = Call sin x\nb = Call cos x", "used twice"),
    ("a = Call sin y", "never bound"),
    ("a = Const 1\na = Const 2", "bound twice"),
    ("t = (x, x)", "used twice"),
    ("(a, b) = x", "has type ℝ"),
    ("a = Call sin p", "does not accept"),
])
def test_linear_typing_refuses(text, message):
    with pytest.raises(LabrysError, match=message):
        K.judge(L.parse(text), {"x": R, "p": TTuple((R, R))})


def test_no_implicit_drop_leaves_the_variable_in_the_cocontext():
    p = L.parse("d = Dup x\n(a, b) = d\ny = Call sin a")
    j = K.judge(p, {"x": R})
    assert [x for x, _ in j.delta] == ["b", "y"]  # b was neither used nor Elim'd


def test_case_rule_both_branches_consume_the_same_context_and_bind_the_same_cocontext():
    ok = L.parse("Case c (Inl u Elim u; Elim y; r = Call sin x) (Inr v Elim v; Elim x; r = Call cos y)")
    j = K.judge(ok, {"c": BOOL, "x": R, "y": R})
    assert sorted(x for x, _ in j.gamma) == ["c", "x", "y"] and j.delta == [("r", R)]
    unbalanced = L.parse("Case c (Inl u Elim u; r = Call sin x) (Inr v Elim v; r = Call cos y)")
    with pytest.raises(LabrysError, match="different variables"):
        K.judge(unbalanced, {"c": BOOL, "x": R, "y": R})
    different_out = L.parse("Case c (Inl u Elim u; r = Call sin x) (Inr v Elim v; s = Call cos x)")
    with pytest.raises(LabrysError, match="bind different"):
        K.judge(different_out, {"c": BOOL, "x": R})
    with pytest.raises(LabrysError, match="not a sum"):
        K.judge(L.parse("Case x (Inl u Elim u) (Inr v Elim v)"), {"x": R})


def test_inl_inr_and_case_on_a_sum():
    s = TSum(R, TTuple((R, R)))
    p = (L.Inj("a", False, s, "p"),
         L.Case("a", "l", L.parse("r = Call sin l"), "q", L.parse("r = Call mul q")))
    j = K.judge(p, {"p": TTuple((R, R))})
    assert j.gamma == [("p", TTuple((R, R)))] and j.delta == [("r", R)]
    assert K.run(p, {"p": (2.0, 3.0)}, j.types) == {"r": 6.0}


def test_parse_errors_are_positioned():
    with pytest.raises(LabrysError) as err:
        L.parse("a = Const 1\nb = Call add a c")
    assert err.value.span is not None and err.value.span.line == 2


# --- F⟦p⟧ and R⟦p⟧ on Fig. 22's examples (Fig. 23) ---------------------------------------------

@pytest.mark.parametrize("key", list(FIG22))
def test_reverse_translation_judgements(key):
    """Γ ⊢ F⟦p⟧ ⊣ Δ, Υ_p and Δ̄, Υ_p ⊢ R⟦p⟧ ⊣ Γ̄, the tape variables explicit."""
    p, j = judged(key)
    rv = Reverse(j.types, FreshNames(set(j.types)))
    fwd, rev, tapes = rv.procedure(p)
    sig = signature(Functions())
    jf = K.judge(tuple(fwd), dict(j.gamma), sig)
    assert jf.gamma == j.gamma
    assert sorted(x for x, _ in jf.delta) == sorted([x for x, _ in j.delta] + tapes)
    calls = sum(isinstance(s, L.Call) for s in p)
    assert len(tapes) == calls  # one tape variable per Call, none for the rest
    given = {rv.bar(x): t for x, t in j.delta} | {u: rv.tape_types[u] for u in tapes}
    jr = K.judge(tuple(rev), given, sig)
    assert sorted(x for x, _ in jr.gamma) == sorted(given)
    assert sorted(jr.delta) == sorted((rv.bar(x), t) for x, t in j.gamma)


FIG22_KS = """
(def eleven Float (z : Float) (add 5.0 6.0))
(def polar (Tuple Float Float) ((r : Float) (θ : Float)) (tuple (mul r (cos θ)) (mul r (sin θ))))
(def third Float ((x : Float) (y : Float)) (add (mul x x) (add (sin (mul x y)) 1.0)))
(def pick Float ((x : Float) (y : Float)) (if (gt x y) (mul x x) (exp y)))
(def twice Float ((x : Float) (y : Float)) (add (third x y) (pick y x)))
(def swap (Tuple Float Float) (p : Tuple Float Float) (tuple (get$2$2 p) (mul 2.0 (get$1$2 p))))
(def powi Float ((x : Float) (n : Integer)) (if (eq n 0) 1.0 (mul x (powi x (sub n 1)))))
(def vec Float (v : Vec Float) (sum v))
(def loop Float (x : Float) (sumbuild 3 (lam (i : Integer) (mul x (to_float i)))))
(def asserted Float (x : Float) (assert (gt x 0.0) (sqrt x)))
"""


@pytest.fixture(scope="module")
def m():
    return labrys.load(FIG22_KS, backend="interp")


def test_fig22_derivatives_by_procrev(m):
    r, th = 2.0, 0.3
    jac = np.array([[math.cos(th), -r * math.sin(th)], [math.sin(th), r * math.cos(th)]])
    for row, dt in enumerate(((1.0, 0.0), (0.0, 1.0))):
        np.testing.assert_allclose(m.derive("procrev", "polar")((r, th), dt), jac[row], rtol=1e-14)
    x, y = 1.5, -0.5
    g = m.derive("procrev", "third")((x, y), 1.0)
    np.testing.assert_allclose(g, [2 * x + y * math.cos(x * y), x * math.cos(x * y)], rtol=1e-14)
    assert m.derive("procrev", "eleven")(4.0, 1.0) == 0.0
    assert m["[proc eleven]"](4.0) == 11.0


def test_the_lowered_fig22_example_has_the_figures_judgement(m):
    d = m.derive("proc", "third")
    low = m.derivations.derive("proc", d.sig)
    assert "x : ℝ, y : ℝ ⊢ · ⊣" in low.stages[-1].text and ": ℝ\n" in low.stages[-1].text


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_proc_f_equals_f_on_every_backend(backend):
    mm = labrys.load(FIG22_KS, backend=backend)
    for name, args in (("polar", (2.0, 0.3)), ("third", (1.5, -0.5)), ("pick", (1.0, 2.0)), ("pick", (3.0, 2.0)),
                       ("twice", (0.7, 0.2)), ("swap", ((1.0, 2.0),)), ("powi", (1.1, 5))):
        assert mm[f"[proc {name}]"](*args) == pytest.approx(mm[name](*args), rel=1e-15)


def test_procedure_evaluator_agrees_with_f(m):
    d = m.derive("proc", "pick")
    stages = m.derivations.derive("proc", d.sig).stages
    suf = next(s.d for s in stages if s.name == "suf")
    p, result = lower_def(suf, fresh_for(suf))
    j = K.judge(p, {"x": R, "y": R})
    for x, y in ((1.0, 2.0), (3.0, 2.0)):
        assert K.run(p, {"x": x, "y": y}, j.types)[result] == m.pick(x, y)


@pytest.mark.parametrize("name, args", [("pick", (1.0, 2.0)), ("pick", (3.0, 2.0)), ("twice", (0.7, 0.2)),
                                        ("swap", ((1.0, 2.0),)), ("powi", (1.1, 5)), ("polar", (2.0, 0.3))])
def test_procrev_agrees_with_rev_and_sufrev(m, name, args):
    sig = m.derive("rev", name).sig
    x = args[0] if len(args) == 1 else args
    dt = (0.3, -1.2) if name in ("polar", "swap") else 1.0
    want = m.derive("rev", name)(x, dt)
    for method in ("procrev", "sufrev"):
        got = m.derive(method, name)(x, dt)
        np.testing.assert_allclose(_floats(got), _floats(want), rtol=1e-13)
    assert sig is not None


def _floats(v) -> list[float]:
    """The Float components of a cotangent (an Integer's cotangent () has none)."""
    if isinstance(v, tuple):
        return [y for x in v for y in _floats(x)]
    return [float(v)]


def test_gdefs_make_both_functions_for_any_body():
    mm = labrys.load("""
(def f Float ((x : Float) (y : Float)) (if (gt x y) (mul x x) (exp y)))
(gdef proc [f (Tuple Float Float)])
(gdef procrev [f (Tuple Float Float)])
(def main (Tuple Float Float Float) ()
  (let (g ([procrev f] (tuple 3.0 2.0) 1.0)) (tuple ([proc f] 1.0 2.0) (get$1$2 g) (get$2$2 g))))
""")
    assert mm.main() == (pytest.approx(math.exp(2.0)), 6.0, 0.0)


def test_if_against_finite_differences(m):
    for x, y in ((1.0, 2.0), (3.0, 2.0)):
        g = m.derive("procrev", "pick")((x, y), 1.0)
        h = 1e-6
        fd = [(m.pick(x + h, y) - m.pick(x - h, y)) / (2 * h), (m.pick(x, y + h) - m.pick(x, y - h)) / (2 * h)]
        np.testing.assert_allclose(g, fd, rtol=1e-7)


@pytest.mark.parametrize("name, what, line", [("vec", "vectors", 9), ("loop", "loops", 10),
                                             ("asserted", "assert", 11)])
def test_vectors_loops_and_asserts_are_a_positioned_refusal(tmp_path, capsys, name, what, line):
    path = tmp_path / "f.ks"
    path.write_text(FIG22_KS)
    assert main(["show", str(path), name, "--deriv", "procrev"]) == 1
    err = capsys.readouterr().err
    assert f"f.ks:{line}:" in err and "procedure language" in err and what in err
    assert "Traceback" not in err


def _chain(n: int) -> str:
    lets = " ".join(f"(x{k} (mul 1.0001 x{k - 1}))" for k in range(1, n + 1))
    return f"(def f Float (x0 : Float) (let ({lets}) x{n}))"


def test_deep_let_chain_without_recursion_error():
    """Every procedure pass on a 10^4-deep let chain: lowering, the linear typing, the
    evaluator, F/R and the lowering back (the whole pipeline is timed by its other
    passes, so it runs end to end on a shorter chain below)."""
    n = 10_000
    mm = labrys.load(_chain(n), backend="interp")
    d = next(iter(mm.checked.defs.values()))
    fresh = fresh_for(d)
    p, result = lower_def(single_use_form(d, fresh), fresh)
    j = K.judge(p, {"x0": R}, signature(mm.checked.functions))
    assert j.gamma == [("x0", R)] and j.delta == [(result, R)]
    assert K.run(p, {"x0": 1.0}, j.types)[result] == pytest.approx(1.0001 ** n)
    *_, whole, _, out, _ = procrev_procedure(p, ["x0"], result, "x0", "dt", j.types, fresh)
    jw = K.judge(whole, {"x0": R, "dt": R}, signature(mm.checked.functions))
    assert jw.delta == [(out, R)]
    assert isinstance(to_ir(whole, [out], jw.types), ir.Let)


def test_let_chain_end_to_end():
    n = 300
    mm = labrys.load(_chain(n), backend="interp")
    assert mm["[proc f]"](1.0) == pytest.approx(mm.f(1.0))
    assert mm.derive("procrev", "f")(1.0, 1.0) == pytest.approx(1.0001 ** n)  # d/dx0 of 1.0001^n x0


def _ratio(mm, n):
    x = 0.001
    with warnings.catch_warnings():  # earlier tests ran uncounted on other backends
        warnings.simplefilter("ignore")
        before = labrys.METER.ops
    mm.f(x, n)
    primal = labrys.METER.ops - before
    before = labrys.METER.ops
    g = mm.derive("procrev", "f")((x, n), 1.0)
    assert g[0] == pytest.approx(n * (x + 1.0) ** (n - 1), rel=1e-9)
    return (labrys.METER.ops - before) / primal


def test_procrev_is_a_constant_times_the_primal():
    mm = labrys.load("(def f Float ((x : Float) (n : Integer))\n"
                     "  (if (eq n 0) 1.0 (mul (add x 1.0) (f x (sub n 1)))))", backend="interp")
    ratios = [_ratio(mm, n) for n in (10, 100, 1000)]
    assert max(ratios) / min(ratios) < 1.1, ratios
    assert max(ratios) < 4


def test_show_stages_print_every_procedure(tmp_path, capsys):
    path = tmp_path / "f.ks"
    path.write_text(FIG22_KS)
    assert main(["show", str(path), "pick", "--deriv", "procrev", "--stages"]) == 0
    out = capsys.readouterr().out
    for title in ("Anf-ised", "Single-use form", "The procedure P⟦f⟧", "Forward translation",
                  "Reverse translation", "[procrev f]: F⟦p⟧; R⟦p⟧", "(optimised)"):
        assert title in out
    assert "Case " in out and "Call revf$mul" in out and "Call revr$mul" in out and "= Inl " in out
    assert "x : ℝ, y : ℝ ⊢ · ⊣" in out


def test_algorithms_lists_both(capsys):
    assert main(["algorithms"]) == 0
    out = capsys.readouterr().out
    assert "proc " in out and "procrev " in out and "Fig. 23" in out


def test_bool_cotangent_is_unit():
    assert K.zero_value(TTuple((R, UNIT))) == (0.0, ())


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 15)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(gen=programs({"core", "recursion"}, exclude=NONSMOOTH | {"map", "assert"}, result="float"), data=st.data())
def test_procrev_random_programs(gen, data):
    """procrev vs finite differences and fwd on random first-order programs (assert is not in
    Fig. 20: a positioned refusal, tested on its own)."""
    _check_random_program(gen, data, revs=("procrev",))


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 15)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(gen=programs({"core", "recursion"}, exclude={"map", "assert"}, result="float"))
def test_proc_and_procrev_random_programs_with_if(gen):
    """[proc f] = f, and [procrev f] = [sufrev f] (both exact), on random first-order
    programs with ifs, comparisons and kinks."""
    mm = labrys.load(gen.text, backend="interp")
    d = gen.entry_def
    args = [coerce(a, p.type) for a, p in zip(gen.args, d.params)]
    try:
        y = mm.function(gen.entry)(*args)
    except LabrysError:
        return
    assert mm.function(f"[proc {gen.entry}]")(*args) == y or (y != y)
    x = args[0] if len(args) == 1 else tuple(args)
    try:
        want = mm.derive("sufrev", gen.entry)(x, 1.0)
    except LabrysError:
        return
    got = mm.derive("procrev", gen.entry)(x, 1.0)
    np.testing.assert_allclose(_floats(got), _floats(want), rtol=1e-9, atol=1e-12)


ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "examples").glob("*.ks")) + sorted((ROOT / "tests" / "corpus").glob("*/*.ks"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_procrev_agrees_with_rev_on_examples_and_corpus(path):
    """procrev vs rev and finite differences wherever rev works; otherwise a positioned
    refusal (vectors, loops, assert: not in Fig. 20), never an internal error."""
    verify = importlib.import_module("labrys.verify")
    try:
        mm = labrys.load(path, backend="interp")
    except LabrysError:
        pytest.skip("the program itself asks for an unimplemented derivation")
    for row in verify.verify(mm, trials=2, only=("rev", "procrev")):
        rev, pr = row.cells.get("rev"), row.cells.get("procrev")
        if rev is None or not rev.ok:
            continue
        refused = pr.ok is None and "procedure language" in pr.detail
        assert pr.ok or refused, f"{path.name} {row.function}: {pr.text()}"
        assert "✗" not in row.cells.get("agree", verify.Cell(True)).text()


def test_single_use_form_shared_with_split_mode_keeps_names_apart():
    """SUF is memoised per program: made by sufrev first, its names must not clash
    with the ones the procedure passes make."""
    mm = labrys.load("(def area Float (p : Tuple Float Float) (mul (get$1$2 p) (get$2$2 p)))", backend="interp")
    assert mm.derive("sufrev", "area")((2.0, 3.0), 1.0) == (3.0, 2.0)
    assert mm.derive("procrev", "area")((2.0, 3.0), 1.0) == (3.0, 2.0)
