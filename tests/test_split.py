"""Split reverse mode by BOG AD (Ellis et al.'s working notes §6.1, §11, Figs 24–26):
single-use form, [suffwdpass f], [sufrevpass f], [sufrev f].

Expected values are hand-computed, finite differences, or Knossos ``rev``
(already on main); cost claims are op-count ratios on the interpreter."""
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
from labrys.ad.bog_runtime import Bog
from labrys.ad.suf import single_use_form, uses
from labrys.cli.main import main
from labrys.errors import LabrysError
from labrys.ir import nodes as ir
from labrys.ir.names import DerivedName
from labrys.ir.traverse import FreshNames, free_vars, nodes
from labrys.syntax.printer import show_decl
from strategies import NONSMOOTH, programs
from test_knossos_ad import _check_random_program

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "examples").glob("*.ks")) + sorted((ROOT / "tests" / "corpus").glob("*/*.ks"))

F = """
(def f Float ((x : Float) (y : Float))
  (let ((a (mul x y))
        (b (sin x)))
    (add (mul a b) (div x y))))
(def prod Float ((x : Float) (y : Float)) (mul x y))
(def plus Float ((x : Float) (y : Float)) (add x y))
(def pick Float ((x : Float) (y : Float)) (if (gt x y) (mul x x) (exp y)))
(def powi Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (mul x (powi x (sub n 1)))))
(def poly Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (mul (add x 1.0) (poly x (sub n 1)))))
(def vsum Float ((v : Vec Float) (n : Integer))
  (if (eq n 0) 0.0 (add (mul (index (sub n 1) v) (index (sub n 1) v)) (vsum v (sub n 1)))))
(def scale (Vec Float) ((v : Vec Float) (a : Float))
  (let (s (sum v)) (build (size v) (lam (i : Integer) (mul (mul a s) (index i v))))))
(def pair (Tuple Float (Vec Float)) ((v : Vec Float) (a : Float))
  (tuple (sumbuild (size v) (lam (i : Integer) (mul a (index i v)))) (scale v a)))
(def unused Float ((x : Float) (v : Vec Float)) (mul x x))
(def fprod Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float) (mul (get$1$2 acc_x) (get$2$2 acc_x))) 1.0 v))
"""


@pytest.fixture(scope="module")
def m():
    return labrys.load(F, backend="interp")


def grad(m, name, *args, method="sufrev"):
    return labrys.grad(getattr(m, name), method=method)(*args)


# --- 1. single-use form --------------------------------------------------------------------

def _scopes(e: ir.Expr):
    """Every block of e with the variables it must consume: (block, names)."""
    out, stack = [], [(e, None)]
    while stack:
        x, consumed = stack.pop()
        if consumed is not None:
            out.append((x, consumed))
        for y in nodes(x) if consumed is not None else [x]:
            if isinstance(y, ir.If):
                names = free_vars(y.then) | free_vars(y.orelse)
                stack += [(y.then, names), (y.orelse, names)]
            elif isinstance(y, ir.Lam):
                stack.append((y.body, free_vars(y.body)))
    return out


def _suf_of(m, name: str) -> ir.Def:
    sig = m.function(name).sigs[0]
    return m.derivations.derive("sufrev", sig, views=True).stage("suf")


@pytest.mark.parametrize("name", ["f", "pick", "powi", "scale", "pair", "unused", "vsum"])
def test_single_use_form_uses_every_variable_exactly_once(m, name):
    d = _suf_of(m, name)
    blocks = [(d.body, {p.name for p in d.params})] + _scopes(d.body)
    for block, consumed in blocks:
        counts = uses(block)
        bound = set()
        node = block
        while isinstance(node, ir.Let):
            bound |= set(node.names)
            node = node.body
        for x in consumed | bound:
            assert counts.get(x, 0) == 1, f"{x} used {counts.get(x, 0)} times in\n{show_decl(d)}"


def test_single_use_form_dups_elims_and_balances_branches(m):
    text = show_decl(_suf_of(m, "pick"))
    assert "(dup x)" in text and "(dup y)" in text  # the condition and the branches
    assert "(elim y" in text and "(elim x" in text   # each branch consumes what the other uses
    assert "(elim v)" in show_decl(_suf_of(m, "unused"))


def test_single_use_form_keeps_the_meaning(m):
    sig = m.function("pick").sigs[0]
    suf = _suf_of(m, "pick")
    assert suf.ret == sig.ret
    again = labrys.load(show_decl(suf), backend="interp")
    for x, y in ((2.0, 1.0), (0.5, 1.5)):
        assert again.pick(x, y) == m.pick(x, y)


def test_single_use_form_alone_on_a_deep_let_chain():
    body = "x"
    for k in range(10_000):
        body = f"(let (x{k} (add x x)) {body})"
    mm = labrys.load(f"(def f Float (x : Float) {body})")
    d = mm.checked.typed(mm.program.decls[0])
    out = single_use_form(d, FreshNames({"x"}))
    assert isinstance(out.body, ir.Let)


# --- 2. the BOG: what the forward pass keeps (Fig. 24's primitive BOGs) -----------------------

def _bog(m, name, *args):
    t, bog = m.derive("suffwdpass", name)(args if len(args) > 1 else args[0])
    assert isinstance(bog, Bog)  # opaque to the user
    return t, bog.value


def test_mul_keeps_both_arguments_and_add_keeps_nothing(m):
    t, bog = _bog(m, "prod", 3.0, 5.0)
    assert t == 15.0 and sorted(bog) == [3.0, 5.0]          # mul_fbog(x, y) = (x*y, (x, y))
    t, bog = _bog(m, "plus", 3.0, 5.0)
    assert t == 8.0 and bog == ()                           # add keeps ()


def test_the_two_passes_compose_to_sufrev(m):
    t, bog = m.derive("suffwdpass", "f")((1.5, 0.5))
    assert t == m.f(1.5, 0.5)
    back = m.derive("sufrevpass", "f")
    assert back(1.0, bog) == m.derive("sufrev", "f")((1.5, 0.5), 1.0)


def test_worked_example_gradient(m):
    # f = x y sin x + x / y: df/dx = y sin x + x y cos x + 1/y, df/dy = x sin x - x / y^2
    x, y = 1.5, 0.5
    want = (y * math.sin(x) + x * y * math.cos(x) + 1 / y, x * math.sin(x) - x / y ** 2)
    assert grad(m, "f", x, y) == pytest.approx(want, rel=1e-12)


def test_if_bog_is_a_sum_and_both_branches_differentiate(m):
    assert grad(m, "pick", 2.0, 1.0) == pytest.approx((4.0, 0.0))
    assert grad(m, "pick", 0.5, 1.5) == pytest.approx((0.0, math.exp(1.5)))
    text = m.source("[sufrevpass pick]") if False else show_decl(m.derive("sufrevpass", "pick").d)
    assert "(Sum " in text and "(case " in text


def test_vectors_build_sumbuild_and_tuple_results(m):
    v, a = np.array([1.0, 2.0, 3.0]), 0.5
    dr = (2.0, np.array([1.0, -1.0, 0.5]))
    got = m.derive("sufrev", "pair")((v, a), dr)
    want = m.derive("rev", "pair")((v, a), dr)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1] == pytest.approx(want[1], rel=1e-12)
    # by hand: pair = (a Σv, a (Σv) v); with s = Σv, d/da = 2 Σv + (Σv) <v, dr2>
    s = v.sum()
    assert got[1] == pytest.approx(2.0 * s + s * float(v @ dr[1]))


def test_recursion_with_an_integer_argument(m):
    assert grad(m, "powi", 2.0, 5) == (80.0, ())
    np.testing.assert_allclose(grad(m, "vsum", np.array([1.0, 2.0, 3.0]), 3)[0], [2.0, 4.0, 6.0])


def test_unused_arguments_get_zero_cotangents(m):
    g = grad(m, "unused", 3.0, np.ones(4))
    assert g[0] == 6.0 and np.array_equal(g[1], np.zeros(4))


# --- 3. recursion: 10^4 deep, and a constant times the primal -----------------------------------

def _ratio(m, method: str, n: int) -> float:
    g = labrys.grad(m.poly, argnums=0, method=method)
    before = labrys.METER.ops
    m.poly(0.001, n)
    primal = labrys.METER.ops - before
    before = labrys.METER.ops
    value = g(0.001, n)
    assert value == pytest.approx(n * 1.001 ** (n - 1), rel=1e-9)  # d/dx (x+1)^n
    return (labrys.METER.ops - before) / primal


def test_sufrev_on_non_tail_recursion_is_a_constant_times_the_primal(m):
    ratios = [_ratio(m, "sufrev", n) for n in (10, 100, 1000, 10_000)]  # 10^4 deep works
    assert max(ratios) / min(ratios) < 1.05, ratios
    assert max(ratios) < 4
    rev = [_ratio(m, "rev", n) for n in (10, 100)]  # Knossos rev recomputes each callee's primal
    assert rev[1] / rev[0] > 5


def test_sufrev_on_loops_is_a_constant_times_the_primal():
    mm = labrys.load("(def f Float ((x : Vec Float) (a : Float))\n"
                     "  (sumbuild (size x) (lam (i : Integer) (mul a (index i x)))))", backend="interp")
    ratios = []
    for n in (10, 100, 1000, 10_000):
        x = np.linspace(0.0, 1.0, n)
        before = labrys.METER.ops
        mm.f(x, 0.5)
        primal = labrys.METER.ops - before
        before = labrys.METER.ops
        g = mm.derive("sufrev", "f")((x, 0.5), 1.0)
        ratios.append((labrys.METER.ops - before) / primal)
        np.testing.assert_allclose(g[0], np.full(n, 0.5))
        assert g[1] == pytest.approx(x.sum())
    assert max(ratios) / min(ratios) < 1.1, ratios


# --- 4. hand-written passes, overloads, errors ------------------------------------------------

HAND = """
(def g Float (x : Float) (mul x x))
; a deliberately different derivative (3x, not 2x), to tell that callers use it
(def [suffwdpass g] (Tuple Float Float) (x : Float) (tuple (mul x x) x))
(def [sufrevpass g] Float ((dr : Float) (x : Float)) (mul 3.0 (mul x dr)))
(def h Float (x : Float) (sin (g x)))
(def clip Float (x : Float) (max 0.0 (min 1.0 x)))
(def [rev clip] Float ((x : Float) (dr : Float)) dr)
(def k Float (x : Float) (mul 3.0 (clip (mul 2.0 x))))
"""


def test_callers_use_hand_written_passes():
    mm = labrys.load(HAND, backend="interp")
    x = 0.7
    assert grad(mm, "h", x) == pytest.approx(math.cos(x * x) * 3.0 * x, rel=1e-12)
    assert grad(mm, "k", 1.5) == 6.0   # through the hand-written [rev clip]: straight through


def test_overloaded_callees():
    mm = labrys.load(ROOT / "examples" / "overloading.ks", backend="interp")
    for sig in mm.checked.functions.candidates("norm2"):
        if isinstance(sig.decl, ir.Def) and not isinstance(sig.name, DerivedName):
            got = mm.derivations.derive("sufrev", sig).d
            assert got.ret == mm.derivations.derive("rev", sig).d.ret


def test_fold_products_and_captured_variables(m):
    v = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(grad(m, "fprod", v), [24.0, 12.0, 8.0, 6.0])   # ∂/∂v_i Π v = Π / v_i
    mm = labrys.load("(def g Float ((v : Vec Float) (a : Float))\n"
                     "  (fold (lam (acc_x : Tuple Float Float) (mul (get$1$2 acc_x) (mul a (get$2$2 acc_x))))"
                     " a v))", backend="interp")
    # g = a · Π (a v_i) = a^(n+1) Π v_i: ∂/∂a = (n+1) a^n Π v, ∂/∂v_i = g / v_i
    a = 0.5
    dv, da = grad(mm, "g", v, a)
    np.testing.assert_allclose(dv, a ** 5 * 24.0 / v)
    assert da == pytest.approx(5 * a ** 4 * 24.0)


def test_fold_is_a_constant_times_the_primal(m):
    ratios = []
    for n in (10, 100, 1000, 10_000):
        v = np.full(n, 1.0001)
        before = labrys.METER.ops
        m.fprod(v)
        primal = labrys.METER.ops - before
        before = labrys.METER.ops
        m.derive("sufrev", "fprod")(v, 1.0)
        ratios.append((labrys.METER.ops - before) / primal)
    assert max(ratios) / min(ratios) < 1.1, ratios


def test_closures_are_a_positioned_error():
    mm = labrys.load("(def f Float (x : Float)\n  (let (g (lam (y : Float) (mul y x)))\n    (g x)))\n")
    with pytest.raises(LabrysError) as err:
        mm.derive("sufrev", "f")
    assert "<string>:" in str(err.value)


# --- 5. every example and corpus program; random programs ------------------------------------

@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_sufrev_agrees_with_rev_and_finite_differences_on_examples_and_corpus(path):
    verify = importlib.import_module("labrys.verify")
    try:
        mm = labrys.load(path, backend="interp")
    except LabrysError:
        pytest.skip("the program itself asks for an unimplemented derivation")
    for row in verify.verify(mm, trials=2, only=("rev", "sufrev")):
        rev, sufrev = row.cells.get("rev"), row.cells.get("sufrev")
        if rev is None or not rev.ok:
            continue
        assert sufrev.ok, f"{path.name} {row.function}: {sufrev.text()}"
        assert "✗" not in row.cells.get("agree", verify.Cell(True)).text()


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(gen=programs({"core", "vectors", "recursion"}, exclude=NONSMOOTH | {"map"}, result="float"),
       data=st.data())
def test_sufrev_random_programs(gen, data):
    """sufrev and rev vs finite differences and fwd, on random first-order programs
    (with a recursive helper)."""
    _check_random_program(gen, data, revs=("rev", "sufrev"))


# --- 6. tools ---------------------------------------------------------------------------------

def test_show_stages_names_suf_and_both_passes(tmp_path, capsys):
    path = tmp_path / "f.ks"
    path.write_text(F)
    assert main(["show", str(path), "powi", "--deriv", "sufrev", "--stages"]) == 0
    out = capsys.readouterr().out
    for title in ("Single-use form", "BOG forward pass", "BOG reverse pass", "[sufrev f] calls the two passes"):
        assert title in out
    assert "(bogOpen" in out and "(Sum (Tuple" in out  # the BOG type, printed


def test_gmm_gradient_by_sufrev_matches_rev():
    from labrys.adbench import run_gmm
    data = ROOT / "data" / "adbench" / "gmm" / "test.txt"
    a, b = run_gmm(data, "rev", backend="interp"), run_gmm(data, "sufrev", backend="interp")
    np.testing.assert_allclose(b.gradient, a.gradient, rtol=1e-12, atol=1e-14)
    assert b.ok


# --- 7. nTimes and ccl (Figs 16–19) ---------------------------------------------------------

LOOPS = """
(def newton Float ((x : Float) (n : Integer))
  (nTimes n x (lam (s : Float) (mul 0.5 (add s (div 2.0 s))))))
(def horner Float ((x : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (add (mul (get$2$2 ks) x) (to_float (get$1$2 ks))))))
(def scaled (Vec Float) ((v : Vec Float) (n : Integer))
  (nTimes n v (lam (w : Vec Float) (mul 1.5 w))))
"""


def _newton(x, n):
    for _ in range(n):
        x = 0.5 * (x + 2.0 / x)
    return x


def _horner(x, n):
    s = x
    for k in range(n - 1, -1, -1):
        s = s * x + k
    return s


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_ntimes_and_ccl_run(backend):
    mm = labrys.load(LOOPS, backend=backend)
    assert mm.newton(1.0, 4) == pytest.approx(_newton(1.0, 4), rel=1e-15)
    assert mm.horner(2.0, 3) == 26.0 == _horner(2.0, 3)   # ((2·2 + 2)·2 + 1)·2 + 0
    assert mm.horner(2.0, 0) == 2.0                        # ccl 0 s f = s
    np.testing.assert_allclose(mm.scaled(np.ones(3), 2), np.full(3, 2.25))
    with pytest.raises(LabrysError) as err:
        mm.newton(1.0, -1)
    assert "negative" in str(err.value) and "<string>:3:3" in str(err.value)


@pytest.mark.parametrize("method", ["rev", "sufrev", "deltarev", "deltarev2"])
def test_ntimes_and_ccl_gradients(method):
    mm = labrys.load(LOOPS, backend="interp")
    h = 1e-6
    for f, ref, x, n in ((mm.newton, _newton, 1.3, 4), (mm.horner, _horner, 0.7, 5)):
        g = labrys.grad(f, argnums=0, method=method)(x, n)
        assert g == pytest.approx((ref(x + h, n) - ref(x - h, n)) / (2 * h), rel=1e-6)
    # horner at (2, 3) by hand: s1 = s0 x + 2, s2 = s1 x + 1, s3 = s2 x; ds3/dx = 41
    assert labrys.grad(mm.horner, argnums=0, method=method)(2.0, 3) == pytest.approx(41.0)
    back = mm.derive(method, "scaled")((np.ones(2), 3), np.array([1.0, 2.0]))
    np.testing.assert_allclose(back[0], 1.5 ** 3 * np.array([1.0, 2.0]))


@pytest.mark.parametrize("method", ["fwd", "dualfwd"])
def test_ntimes_and_ccl_tangents(method):
    mm = labrys.load(LOOPS, backend="interp")
    _, dy = labrys.jvp(mm.horner, (2.0, 3), (1.0, ()), method=method)
    assert dy == pytest.approx(41.0)


def test_sufrev_on_ntimes_is_a_constant_times_the_primal():
    mm = labrys.load(LOOPS, backend="interp")
    with warnings.catch_warnings():  # earlier tests ran uncounted calls on other backends
        warnings.simplefilter("ignore")
        _ = labrys.METER.ops
    ratios = []
    for n in (10, 100, 1000, 10_000):
        before = labrys.METER.ops
        mm.newton(1.0, n)
        primal = labrys.METER.ops - before
        before = labrys.METER.ops
        labrys.grad(mm.newton, argnums=0, method="sufrev")(1.0, n)
        ratios.append((labrys.METER.ops - before) / primal)
    assert max(ratios) / min(ratios) < 1.1, ratios


def test_a_parameter_named_like_a_bog_is_not_captured_by_one():
    """[suffwdpass f] is derived in its own Work, reusing f's single-use form from
    [sufrev f]'s: the copies of ``b`` (b$1, …) and the BOGs' fresh names (b$N) met, and a
    call received a BOG for an Integer (LSTM's ``block`` calls, found by verify)."""
    m = labrys.load("""
(def g Float ((v : Vec Float) (k : Integer)) (mul (to_float k) (index 0 v)))
(def f Float ((v : Vec Float) (b : Integer))
  (add (g v b) (mul (g v b) (g v b))))
""", backend="interp")
    dv, db = m.derive("sufrev", "f")((np.array([1.5, 2.0]), 3), 1.0)
    # f = 3 v0 + (3 v0)²: ∂f/∂v0 = 3 + 18 v0
    assert np.allclose(dv, [3 + 18 * 1.5, 0.0]) and db == ()
