"""Smeding & Vákár's dual-numbers reverse AD in six steps (dualrev1 … dualrev5, dualrev,
dualrevtape): the paper's worked examples and exact IDs, its blow-ups and fixes as
op-count and call-count ratios, agreement with finite differences, Knossos rev and
Krawiec et al.'s deltarev on the examples, the corpus and random programs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrys
from labrys import METER
from labrys.ad.dualrev_runtime import Run, last_run
from labrys.ad.dualrev_staged import Staged, plus_staged, resolve_staged
from labrys.verify import verify
from strategies import ALL_FEATURES, NONSMOOTH, programs
from test_knossos_ad import _check_random_program

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5", "dualrev", "dualrevtape"]
STAGED = STAGES[1:]          # every backpropagator runs at most once
LINEAR = ["dualrev5", "dualrev", "dualrevtape"]


def ops(fn, *args) -> int:
    before = METER.ops
    fn(*args)
    return METER.ops - before


PAPER = """
(def fig1 Float ((x : Float) (y : Float)) (let (z (add x y)) (mul x z)))
(def tex Float (x : Tuple Float Float)
  (let ((x1 (get$1$2 x)) (x2 (get$2$2 x)) (x3 (add x1 x2))) (add (mul x3 x1) x3)))
(def tbad Float ((x : Float) (n : Integer)) (if (eq n 0) x (let (y (tbad x (sub n 1))) (mul y y))))
(def fibc Float ((x0 : Float) (x1 : Float) (n : Integer)) (if (eq n 1) x1 (fibc x1 (add x0 x1) (sub n 1))))
(def ident Float (x : Float) x)
(def swap (Tuple Float Float) ((x : Float) (y : Float)) (tuple y x))
(def twice (Tuple Float Float) (x : Float) (tuple x x))
(def const Float (x : Float) 3.0)
(def sumv Float (v : Vec Float) (sum v))
(def mapped Float ((v : Vec Float) (a : Float))
  (let (g (lam (t : Float) (mul a (sin t)))) (sum (map g v))))
(def loop Float ((x : Float) (n : Integer))
  (fold (lam (acc_i : Tuple Float Integer) (add (mul (get$1$2 acc_i) 0.999) (sin x)))
        x (build n (lam (i : Integer) i))))
"""


@pytest.fixture(scope="module")
def paper():
    return labrys.load(PAPER, backend="interp")


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


# --- exact checks (hand-computed) --------------------------------------------------------

@pytest.mark.parametrize("alg", STAGES)
def test_fig1_and_t_ex_values(paper, alg):
    assert paper.derive(alg, "fig1")((2.0, 3.0), 1.0) == pytest.approx((7.0, 2.0), rel=1e-15)
    assert paper.derive(alg, "tex")((2.0, 3.0), 1.0) == pytest.approx((8.0, 3.0), rel=1e-15)


def test_fig15a_ids_and_contribs(paper):
    """λ(x,y). let z = x + y in x·z: x=1, y=2, z=3, result 4; cb1 = [(1,cbx,1),(2,cby,1)],
    cb2 = [(1,cbx,z),(3,cb1,x)], at (2, 3) so z = 5 (Fig. 15a)."""
    paper.derive("dualrev", "fig1")((2.0, 3.0), 1.0)
    value, (i, cb2) = last_run().output
    assert value == 10.0 and i == 4
    (j1, cbx, z), (j3, cb1, x) = cb2
    assert (j1, cbx, z, j3, x) == (1, (), 5.0, 3, 2.0)
    assert cb1 == ((1, (), 1.0), (2, (), 1.0)) and cbx == ()  # the inputs' Contribs are []


def test_fig15b_the_tape(paper):
    paper.derive("dualrevtape", "fig1")((2.0, 3.0), 1.0)
    run = last_run()
    assert run.output == (10.0, 4)
    assert run.tape[3:] == [((1, 1.0), (2, 1.0)), ((1, 5.0), (3, 2.0))]


def test_t_ex_ids(paper):
    """D³ numbers from 0 (IDs 0..4); D⁵ from 1 (IDs 1..5, i = 3, i' = 6)."""
    for alg, first in (("dualrev3", 0), ("dualrev4", 0), ("dualrev5", 1), ("dualrev", 1), ("dualrevtape", 1)):
        paper.derive(alg, "tex")((2.0, 3.0), 1.0)
        run = last_run()
        assert (run.first, run.first + run.inputs, run.next_id) == (first, first + 2, first + 5), alg
        assert run.output[1][0] == first + 4 if alg != "dualrevtape" else run.output[1] == 5


def test_dualrev2_tags_are_dualrev3_ids(paper):
    for fn, args in (("tex", (2.0, 3.0)), ("fibc", (1.0, 2.0, 9)), ("mapped", (np.array([0.1, 0.2, 0.3]), 1.5))):
        runs = {}
        for alg in ("dualrev2", "dualrev3"):
            paper.derive(alg, fn)(args, 1.0)
            runs[alg] = last_run()
        assert runs["dualrev2"].next_id == runs["dualrev3"].next_id
        assert runs["dualrev2"].calls == runs["dualrev3"].calls


def test_section6_resolver_example():
    """f1 = λz.(0,(z,0)), f2 = λz. f1(2z) + f1(3z), f3 = λz. f2(4z) + f1(5z), f4 = λz. f2(z) + f3(2z):
    called by value, f1 runs five times; staged, every one once, giving (0,(55z,0))."""
    cbv = {"f1": 0}

    def f1(z):
        cbv["f1"] += 1
        return np.array([0.0, z, 0.0])

    def f2(z):
        return f1(2 * z) + f1(3 * z)

    def f3(z):
        return f2(4 * z) + f1(5 * z)

    def f4(z):
        return f2(z) + f3(2 * z)
    assert list(f4(1.0)) == [0.0, 55.0, 0.0] and cbv["f1"] == 5

    run = Run("test", 0)
    ids = {}

    def staged(name, calls):
        ids[name] = run.fresh()  # created in order, as call-by-value makes them

        def bp(z):
            out = Staged(run)
            for callee, k in calls:
                out = plus_staged(out, Staged(run).stage(ids[callee], bps[callee], k * z))
            return out
        return bp
    bps = {}
    ids["f1"] = run.fresh()

    def f1_staged(z):
        cbv["f1"] += 1
        return Staged(run, np.array([0.0, z, 0.0]))
    bps["f1"] = f1_staged
    bps["f2"] = staged("f2", [("f1", 2), ("f1", 3)])
    bps["f3"] = staged("f3", [("f2", 4), ("f1", 5)])
    bps["f4"] = staged("f4", [("f2", 1), ("f3", 2)])
    top = Staged(run, np.zeros(3)).stage(ids["f4"], bps["f4"], 7.0)
    cbv["f1"] = 0
    assert list(resolve_staged(top)) == [0.0, 55.0 * 7, 0.0] and cbv["f1"] == 1
    assert dict(run.calls) == {ids[f]: 1 for f in ("f1", "f2", "f3", "f4")}


@pytest.mark.parametrize("alg", STAGES)
def test_output_seeding(paper, alg):
    """P6: f(x) = x, (y, x), (x, x) and a constant output."""
    assert paper.derive(alg, "ident")(2.0, 5.0) == 5.0
    assert paper.derive(alg, "swap")((2.0, 3.0), (1.0, 10.0)) == (10.0, 1.0)
    assert paper.derive(alg, "twice")(2.0, (1.0, 10.0)) == 11.0
    assert paper.derive(alg, "const")(2.0, 1.0) == 0.0


@pytest.mark.parametrize("alg", STAGES)
def test_fresh_state_per_call(paper, alg):
    """P7: the derivative is a function — calling it again gives the same cotangent."""
    d = paper.derive(alg, "tex")
    first = d((2.0, 3.0), 1.0)
    run = last_run()
    assert d((2.0, 3.0), 1.0) == first and last_run() is not run


def test_eager_partials_use_ieee_arithmetic(paper):
    """P14: dualrev computes every partial in the forward pass, even of a dead op."""
    m = labrys.load("(def dead Float (x : Float) (let ((d (sqrt x)) (e (log x))) x))", backend="interp")
    for alg in STAGES:
        assert m.derive(alg, "dead")(0.0, 1.0) == 1.0


# --- the blow-ups and their fixes (Smeding & Vákár §5–§9) --------------------------------------------

def test_dualrev1_runs_the_input_backpropagator_two_to_the_n_times(paper):
    for n in range(0, 13):
        assert paper.derive("dualrev1", "tbad")((1.01, n), 1.0)[0] == pytest.approx(2 ** n * 1.01 ** (2 ** n - 1))
        assert last_run().input_calls == 2 ** n


def test_dualrev1_on_the_fibonacci_chain(paper):
    for n in range(1, 20):
        assert paper.derive("dualrev1", "fibc")((1.0, 1.0, n), 1.0)[:2] == (fib(n - 1), fib(n))
        assert last_run().input_calls == fib(n + 1)


@pytest.mark.parametrize("alg", STAGED)
def test_staged_versions_run_every_backpropagator_at_most_once(paper, alg):
    for n in (4, 12):
        assert paper.derive(alg, "tbad")((1.01, n), 1.0)[0] == pytest.approx(2 ** n * 1.01 ** (2 ** n - 1))
        run = last_run()
        assert max(run.calls.values()) == 1 and run.input_calls <= 1
        assert run.next_id - run.first == n + 1  # the input and one ID per mul
        assert paper.derive(alg, "fibc")((1.0, 1.0, 20), 1.0)[:2] == (fib(19), fib(20))
        assert max(last_run().calls.values()) == 1


def _ratios(paper, alg, fn, make, sizes=(50, 100, 200)):
    counts = [ops(paper.derive(alg, fn), make(n), 1.0) for n in sizes]
    return [b / a for a, b in zip(counts, counts[1:])], counts


@pytest.mark.parametrize("alg", ["dualrev1", "dualrev2", "dualrev3", "dualrev4"])
def test_sum_of_a_vector_is_quadratic_before_dualrev5(paper, alg):
    """One-hots and c additions of size I (D¹–D³), setters copying c (D⁴): ×4 per doubling."""
    ratios, counts = _ratios(paper, alg, "sumv", np.ones)
    assert all(3.4 < r < 4.4 for r in ratios), counts


@pytest.mark.parametrize("alg", LINEAR)
@pytest.mark.parametrize("fn,make", [("sumv", np.ones), ("tbad", lambda n: (1.0001, n)),
                                     ("loop", lambda n: (0.5, n)), ("fibc", lambda n: (1e-3, 2e-3, n)),
                                     ("mapped", lambda n: (np.linspace(0, 1, n), 0.7))])
def test_dualrev5_and_after_are_linear(paper, alg, fn, make):
    ratios, counts = _ratios(paper, alg, fn, make)
    assert all(1.8 < r < 2.2 for r in ratios), counts
    primal = ops(lambda a: paper.function(fn)(*a) if isinstance(a, tuple) else paper.function(fn)(a), make(200))
    assert counts[-1] / primal < 40, (counts, primal)


def test_log_factor_of_the_tree_map(paper):
    """D³/D⁴ keep pending calls in a search tree: comparisons per element grow like log n
    (×4 elements: about two more levels per lookup); D⁵ has no map."""
    for alg in ("dualrev3", "dualrev4"):
        per = []
        for n in (128, 512, 2048):
            paper.derive(alg, "sumv")(np.ones(n), 1.0)
            per.append(last_run().comparisons / n)
        assert all(b - a > 3.0 for a, b in zip(per, per[1:])), per
    paper.derive("dualrev5", "sumv")(np.ones(512), 1.0)
    assert last_run().comparisons == 0


# --- agreement -----------------------------------------------------------------------------

def _cells(rows, algs):
    for row in rows:
        for alg in algs:
            cell = row.cells.get(alg)
            if cell is not None and cell.ok is not None:
                yield row.function, alg, cell


AGREE = sorted((ROOT / "tests" / "corpus" / "dual").glob("*.ks")) \
    + [ROOT / "examples" / f"{e}.ks" for e in ("vectors", "fold", "recursion", "tensor", "sums", "lets", "closures",
                                              "rotate_vec_by_quat", "dualrev")]
EVERY_PROGRAM = sorted((ROOT / "examples").glob("**/*.ks")) + sorted((ROOT / "tests" / "corpus").glob("*/*.ks"))


@pytest.mark.parametrize("path", EVERY_PROGRAM if os.environ.get("LABRYS_EXAMPLES") else AGREE,
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_corpus_and_examples_agree(path):
    """Every version against finite differences and the other derivations (verify's agree);
    with LABRYS_EXAMPLES set, on every example and corpus program."""
    try:
        module = labrys.load(path)
    except labrys.LabrysError:
        pytest.skip("the program asks for a derivation that is not implemented")
    rows = verify(module, trials=2)
    checked = 0
    for fn, alg, cell in _cells(rows, [*STAGES, "agree"]):
        assert cell.ok, f"{fn} {alg}: {cell.text()}"
        checked += alg != "agree"
    assert checked >= len(STAGES) or path not in AGREE


def test_same_gradients_as_deltarev_on_rotate_vec_by_quat():
    m = labrys.load(ROOT / "examples" / "rotate_vec_by_quat.ks")
    q, v = (1.1, 2.2, 3.3, 4.4), (5.5, 6.6, 7.7)
    want = m.derive("deltarev", "rotx")((q, v), 1.0)
    for alg in STAGES:
        got = m.derive(alg, "rotx")((q, v), 1.0)
        assert [x for p in got for x in p] == pytest.approx([x for p in want for x in p], rel=1e-12)


RANDOM = settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 15)), deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@RANDOM
@given(gen=programs({"core", "vectors"}, exclude=NONSMOOTH | {"map"}, result="float"), data=st.data())
def test_random_first_order_programs(gen, data):
    _check_random_program(gen, data, revs=("rev", *STAGES), fwds=("fwd",))


@RANDOM
@given(gen=programs(ALL_FEATURES, exclude=NONSMOOTH, result="float"), data=st.data())
def test_random_programs_of_the_whole_language(gen, data):
    """Closures, (fn f), sums, recursion, map/fold/build: each version against finite
    differences and Krawiec et al.'s dualfwd (the dot-product test)."""
    _check_random_program(gen, data, revs=tuple(STAGES), fwds=("dualfwd",))


@RANDOM
@given(gen=programs(ALL_FEATURES, exclude=NONSMOOTH, result="float"), data=st.data())
def test_dualrev_and_deltarev_agree(gen, data):
    """§9.4: the same trace — the same cotangent, to rounding, on every program."""
    m = labrys.load(gen.text)
    args = gen.args
    from test_knossos_ad import coerce
    x = tuple(coerce(a, p.type) for a, p in zip(args, gen.entry_def.params))
    x = x[0] if len(x) == 1 else x
    try:
        want = m.derive("deltarev", gen.entry)(x, 1.0)
    except labrys.LabrysError:
        return
    for alg in ("dualrev", "dualrevtape"):
        assert _flat(m.derive(alg, gen.entry)(x, 1.0)) == pytest.approx(_flat(want), rel=1e-9, abs=1e-12)


def _flat(v) -> list[float]:
    if isinstance(v, (tuple, list)):
        return [y for e in v for y in _flat(e)]
    if isinstance(v, np.ndarray):
        return [float(y) for y in v.ravel()]
    if hasattr(v, "value"):  # a sum's injection
        return _flat(v.value)
    return [float(v)]


# --- deep programs -------------------------------------------------------------------------

DEEP = 10_000
SWEEP = os.environ.get("LABRYS_EXAMPLES") is not None  # the long sweeps: every version on 10^4 nested lets


@pytest.mark.parametrize("alg", STAGES if SWEEP else ["dualrev"])
def test_ten_thousand_nested_lets(alg, monkeypatch):
    monkeypatch.setenv("LABRYS_LINT", "0")  # the pass driver's type re-check of 10^4 lets is tested elsewhere
    text = "(def f Float (x0 : Float)\n" + "".join(f"(let (x{k + 1} (mul x{k} 1.0001))\n" for k in range(DEEP)) \
        + f"x{DEEP}" + ")" * DEEP + ")\n"
    assert labrys.load(text).derive(alg, "f")(2.0, 1.0) == pytest.approx(1.0001 ** DEEP, rel=1e-9)


@pytest.mark.parametrize("alg", STAGES)
def test_ten_thousand_deep_recursion(alg):
    rec = labrys.load("(def r Float ((x : Float) (n : Integer)) (if (eq n 0) x (mul (r x (sub n 1)) 1.0001)))")
    assert rec.derive(alg, "r")((2.0, DEEP), 1.0)[0] == pytest.approx(1.0001 ** DEEP, rel=1e-9)


# --- access: gdef, API, CLI, errors ---------------------------------------------------------

def test_gdef_grad_and_printed_translation_runs(paper):
    text = PAPER + "\n(gdef dualrev [fig1 (Tuple Float Float)])\n" \
        "(def main (Tuple Float Float) () ([dualrev fig1] (tuple 2.0 3.0) 1.0))\n"
    assert labrys.load(text).main() == (7.0, 2.0)
    assert labrys.grad(paper.fig1, method="dualrevtape")(2.0, 3.0) == (7.0, 2.0)
    for alg in STAGES:
        printed = paper.derive(alg, "fig1").source
        again = labrys.load(PAPER + "\n" + printed)
        assert again[f"[{alg} fig1]"]((2.0, 3.0), 1.0) == (7.0, 2.0)


def test_show_stages_cli():
    out = subprocess.run([sys.executable, "-m", "labrys", "show", str(ROOT / "examples" / "lets.ks"), "stats",
                          "--deriv", "dualrev", "--stages"], capture_output=True, text=True, check=True).stdout
    assert "[drc f]" in out and "drcOp" in out and "(drcGradient x y dt)" in out


def test_function_typed_argument_is_an_error():
    m = labrys.load("(def app Float (g : Lam Float Float) (g 1.0))")
    for alg in STAGES:
        with pytest.raises(labrys.LabrysError, match="first-order"):
            m.derive(alg, "app")
