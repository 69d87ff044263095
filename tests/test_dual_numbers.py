"""Krawiec et al., dual numbers and deltas: dualfwd, deltarev1, deltarev2, deltarev.

Expectations come from the paper (Fig. 12's values, §7's blow-up counts),
from calculus by hand, from finite differences, and from Knossos rev.
"""
from __future__ import annotations

import math
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
from labrys.ad import deltas
from labrys.verify import verify
from strategies import ALL_FEATURES, NONSMOOTH, programs
from test_knossos_ad import _check_random_program

ROOT = Path(__file__).resolve().parent.parent
REVERSE = ["deltarev1", "deltarev2", "deltarev"]
FAMILY = ["dualfwd", *REVERSE]


def ops(fn, *args) -> int:
    before = METER.ops
    fn(*args)
    return METER.ops - before


# --- Fig. 12: rotate_vec_by_quat -------------------------------------------------------------

Q, V = (1.1, 2.2, 3.3, 4.4), (5.5, 6.6, 7.7)
# Krawiec et al.'s Fig. 12 (rotate_vec_by_quat): the paper's values, checked against finite differences
DX = (91.96, 58.08, -77.44, 38.72, 4.84, -24.2, 26.62)
DY = (-58.08, 91.96, 38.72, 77.44, 33.88, 12.1, 4.84)
DZ = (77.44, -38.72, 91.96, 58.08, -12.1, 24.2, 24.2)


@pytest.fixture(scope="module")
def rotate():
    return labrys.load(ROOT / "examples" / "rotate_vec_by_quat.ks")


def flat(g) -> list[float]:
    return [x for part in g for x in part]


@pytest.mark.parametrize("alg", REVERSE)
def test_rotate_vec_by_quat_gradient(rotate, alg):
    assert flat(rotate.derive(alg, "rotx")((Q, V), 1.0)) == pytest.approx(DX, rel=1e-9)


def test_rotate_vec_by_quat_forward_plan(rotate):
    fwd = rotate.derive("dualfwd", "rotx")
    columns = []
    for k in range(7):
        e = [0.0] * 7
        e[k] = 1.0
        columns.append(fwd((Q, V), (tuple(e[:4]), tuple(e[4:]))))
    assert columns == pytest.approx(DX, rel=1e-9)


@pytest.mark.parametrize("alg", REVERSE)
def test_rotate_vec_by_quat_every_row(rotate, alg):
    """A Tuple-valued function (Fig. 15's general T): one run per cotangent."""
    rev = rotate.derive(alg, "rotate_vec_by_quat")
    for row, dt in zip((DX, DY, DZ), ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))):
        dv, dq = rev((V, Q), dt)
        assert list(dq) + list(dv) == pytest.approx(row, rel=1e-9)


def test_fig12_delta_has_38_bindings(rotate):
    """Fig. 12 shows 40 Let bindings, two of them OCaml's `from_float 2.0`; a faithful
    Fig. 9 translation gives literals (2.0, Zero) and so 38."""
    rotate.derive("deltarev", "rotx")((Q, V), 1.0)
    tape = deltas.last_tape()
    assert tape.first == 8 and len(tape.rhs) == 38
    assert "Let x8 = " in tape.show() and "Let x45 = " in tape.show()


# --- §6–7: sharing lost and regained ---------------------------------------------------------

CHAIN = """
(def chain Float ((x : Float) (n : Integer))
  (if (eq n 0) x (let (y (chain x (sub n 1))) (add y y))))
"""


@pytest.mark.parametrize("alg", ["deltarev2", "deltarev", "deltarev1"])
def test_chain_derivative_is_two_to_the_n(alg):
    m = labrys.load(CHAIN)
    assert m.derive(alg, "chain")((1.5, 12), 1.0)[0] == 2.0 ** 12


def test_deltarev2_blows_up_exponentially_on_shared_lets():
    """eval₂ walks the Delta as a tree: 2^{n+1} − 1 visits (Krawiec et al. §6)."""
    rev = labrys.load(CHAIN).derive("deltarev2", "chain")
    counts = [ops(rev, (1.0, n), 1.0) for n in (8, 9, 10, 11, 12)]
    ratios = [b / a for a, b in zip(counts, counts[1:])]
    assert all(1.8 < r < 2.1 for r in ratios), counts


def test_deltarev_stays_linear_on_shared_lets():
    m = labrys.load(CHAIN)
    rev = m.derive("deltarev", "chain")
    small, large = ops(rev, (1.0, 200), 1.0), ops(rev, (1.0, 400), 1.0)
    assert 1.8 < large / small < 2.2
    primal = ops(m.chain, 1.0, 400)
    assert large / primal < 10


SUMSQ = """
(def sumsq Float (x : Vec Float)
  (fold (lam (acc_xi : Tuple Float Float) (add (get$1$2 acc_xi) (mul (get$2$2 acc_xi) (get$2$2 acc_xi))))
        0.0 x))
"""


def test_deltarev1_costs_input_size_per_operation():
    """Each ⊕/⊗ costs a = |S|: doubling a quadruples deltarev1, doubles deltarev (Krawiec et al. §5, §7.4)."""
    m = labrys.load(SUMSQ)
    x = {a: np.linspace(0.5, 1.5, a) for a in (50, 100, 200)}
    naive = [ops(m.derive("deltarev1", "sumsq"), x[a], 1.0) for a in (50, 100, 200)]
    shared = [ops(m.derive("deltarev", "sumsq"), x[a], 1.0) for a in (50, 100, 200)]
    assert all(3.6 < b / a < 4.4 for a, b in zip(naive, naive[1:])), naive
    assert all(1.8 < b / a < 2.2 for a, b in zip(shared, shared[1:])), shared
    for alg in FAMILY[1:]:
        assert m.derive(alg, "sumsq")(x[50], 1.0) == pytest.approx(2 * x[50], rel=1e-12)


# --- agreement ----------------------------------------------------------------------------

def family_cells(rows):
    for row in rows:
        for alg in (*FAMILY, "agree"):
            yield row.function, alg, row.cells.get(alg)


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "corpus" / "dual").glob("*.ks")), ids=lambda p: p.stem)
def test_corpus_agrees_with_finite_differences(path):
    rows = verify(labrys.load(path))
    checked = 0
    for fn, alg, cell in family_cells(rows):
        if cell is not None and cell.ok is not None:
            assert cell.ok, f"{fn} {alg}: {cell.text()}"
            checked += 1
    assert checked >= 50


@pytest.mark.parametrize("example", ["vectors", "fold", "recursion", "tensor", "sums", "lets"])
def test_examples_agree_with_knossos_and_finite_differences(example):
    rows = verify(labrys.load(ROOT / "examples" / f"{example}.ks"), trials=2)
    for row in rows:
        for alg in (*FAMILY, "rev", "agree"):
            cell = row.cells.get(alg)
            assert cell is None or cell.ok is not False, f"{row.function} {alg}: {cell.text()}"
    assert sum(bool(row.cells[a].ok) for row in rows for a in FAMILY) >= 4 * 2


def test_hand_written_derivatives_are_used_by_callers():
    """examples/custom_derivative.ks writes the straight-through estimator as [fwd clip01] and
    [rev clip01]; h(x) = 3 clip01(2x) then has derivative 6 through every algorithm (AD-MAP 5),
    which finite differences rightly disagree with, while clip01 itself is differentiated."""
    m = labrys.load(ROOT / "examples" / "custom_derivative.ks")
    for alg in REVERSE:
        assert m.derive(alg, "h")(1.0, 1.0) == 6.0
        assert m.derive(alg, "clip01")(1.5, 1.0) == 0.0
    assert m.derive("dualfwd", "h")(1.0, 1.0) == 6.0
    rows = {r.function: r for r in verify(m)}
    assert rows["h"].cells["agree"].ok and not any(rows["h"].cells[a].ok for a in FAMILY)
    assert all(rows["clip01"].cells[a].ok for a in FAMILY)


TUPLE_CUSTOM = """
(def polar (Tuple Float Float) ((r : Float) (a : Float)) (tuple (mul r (cos a)) (mul r (sin a))))
(def [rev polar] (Tuple Float Float) ((x : Tuple Float Float) (d : Tuple Float Float))
  (let (((r a) x) ((dx dy) d))
    (tuple (mul 10.0 (add (mul dx (cos a)) (mul dy (sin a))))
           (mul r (sub (mul dy (cos a)) (mul dx (sin a)))))))
(def [fwd polar] (Tuple Float Float) ((x : Tuple Float Float) (t : Tuple Float Float))
  (let (((r a) x) ((dr da) t))
    (tuple (sub (mul 10.0 (mul dr (cos a))) (mul r (mul da (sin a))))
           (add (mul 10.0 (mul dr (sin a))) (mul r (mul da (cos a)))))))
(def f Float ((r : Float) (a : Float)) (let (p (polar r a)) (add (get$1$2 p) (mul 2.0 (get$2$2 p)))))
"""


@pytest.mark.parametrize("alg", FAMILY)
def test_hand_written_derivative_with_tuples(alg):
    """A hand-written [rev polar] / [fwd polar] that scales ∂/∂r by 10, between tuples."""
    m = labrys.load(TUPLE_CUSTOM)
    r, a = 2.0, 0.3
    want = (10 * (math.cos(a) + 2 * math.sin(a)), r * (-math.sin(a) + 2 * math.cos(a)))
    if alg == "dualfwd":
        got = tuple(m.derive(alg, "f")((r, a), e) for e in ((1.0, 0.0), (0.0, 1.0)))
    else:
        got = m.derive(alg, "f")((r, a), 1.0)
    assert got == pytest.approx(want, rel=1e-12)


RANDOM = settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 40)), deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@RANDOM
@given(gen=programs({"core", "vectors"}, exclude=NONSMOOTH | {"map"}, result="float"), data=st.data())
def test_random_first_order_programs_every_algorithm(gen, data):
    """Knossos rev/fwd and the four of Krawiec et al. on the first-order core: each reverse
    derivation vs finite differences and the dot-product test against each forward one."""
    _check_random_program(gen, data, revs=("rev", *REVERSE), fwds=("fwd", "dualfwd"))


@RANDOM
@given(gen=programs(ALL_FEATURES, exclude=NONSMOOTH, result="float"), data=st.data())
def test_random_higher_order_programs(gen, data):
    """The whole language (closures, sums, recursion, map): only Krawiec et al.'s algorithms take it."""
    _check_random_program(gen, data, revs=tuple(REVERSE), fwds=("dualfwd",))


# --- access: gdef, API, CLI -----------------------------------------------------------------

PROGRAM = """
(def f Float ((x : Float) (y : Float)) (mul (sin x) (exp y)))
(gdef dualfwd [f (Tuple Float Float)])
(gdef deltarev [f (Tuple Float Float)])
(def main (Tuple Float (Tuple Float Float)) ()
  (tuple ([dualfwd f] (tuple 0.5 0.25) (tuple 1.0 0.0)) ([deltarev f] (tuple 0.5 0.25) 1.0)))
"""


def test_gdef_and_calls_from_ks():
    dfx, (gx, gy) = labrys.load(PROGRAM).main()
    assert dfx == pytest.approx(math.cos(0.5) * math.exp(0.25), rel=1e-12)
    assert (gx, gy) == pytest.approx((math.cos(0.5) * math.exp(0.25), math.sin(0.5) * math.exp(0.25)), rel=1e-12)


@pytest.mark.parametrize("alg", REVERSE)
def test_grad_method(alg):
    m = labrys.load(PROGRAM)
    assert labrys.grad(m.f, method=alg)(0.5, 0.25) == pytest.approx(labrys.grad(m.f)(0.5, 0.25), rel=1e-12)


def test_jvp_method():
    m = labrys.load(PROGRAM)
    y, dy = labrys.jvp(m.f, (0.5, 0.25), (0.0, 1.0), method="dualfwd")
    assert dy == pytest.approx(math.sin(0.5) * math.exp(0.25), rel=1e-12) and dy == pytest.approx(y)


def test_printed_program_runs(rotate):
    """The printed translation is `.ks`: appended to the source it loads and gives the same gradient."""
    printed = rotate.derive("deltarev", "rotx").source
    assert "(def [delta rotx]" in printed and "(def [delta dot3]" in printed and "deltaLet" in printed
    source = (ROOT / "examples" / "rotate_vec_by_quat.ks").read_text().replace("(gdef deltarev", "; (gdef")
    again = labrys.load(source + "\n" + printed)
    assert flat(again["[deltarev rotx]"]((Q, V), 1.0)) == pytest.approx(DX, rel=1e-9)


def test_show_cli_prints_the_translation():
    out = subprocess.run([sys.executable, "-m", "labrys", "show", str(ROOT / "examples" / "rotate_vec_by_quat.ks"),
                          "rotx", "--deriv", "deltarev"], capture_output=True, text=True, check=True).stdout
    assert "(def [deltarev rotx]" in out and "(deltaGradient x y dt)" in out and "(Scale" in out


def test_unsupported_primitive_is_a_positioned_error(tmp_path):
    path = tmp_path / "outer.ks"
    path.write_text("(def f Float (v : Vec Float)\n  (index (tuple 0 0) (outer v v)))\n")
    with pytest.raises(labrys.LabrysError) as err:
        labrys.load(path).derive("deltarev", "f")
    assert "outer" in str(err.value) and f"{path}:2:" in str(err.value)


# --- deep programs ----------------------------------------------------------------------------

def test_deep_let_chain_and_recursion():
    n = 10_000
    text = "(def f Float (x0 : Float)\n" + "".join(f"(let (x{k + 1} (mul x{k} 1.0001))\n" for k in range(n)) \
        + f"x{n}" + ")" * n + ")\n"
    m = labrys.load(text)
    assert m.derive("deltarev", "f")(2.0, 1.0) == pytest.approx(1.0001 ** n, rel=1e-9)
    deep = labrys.load(CHAIN.replace("(add y y)", "(mul y 1.0001)"))
    assert deep.derive("deltarev", "chain")((2.0, n), 1.0)[0] == pytest.approx(1.0001 ** n, rel=1e-9)
    assert deep.derive("dualfwd", "chain")((2.0, n), (1.0, ())) == pytest.approx(1.0001 ** n, rel=1e-9)


# --- eval (Lemma 6) ---------------------------------------------------------------------------

@st.composite
def tapes(draw):
    """A random tape over a inputs: each rhs mixes inputs and older bindings, some shared."""
    a = draw(st.integers(1, 4))
    tape = deltas.Tape(a)

    def delta(depth: int) -> deltas.Delta:
        choice = draw(st.integers(0, 3 if depth else 1))
        if choice == 0:
            return deltas.ZERO
        if choice == 1:
            return deltas.Var(draw(st.integers(1, tape.first + len(tape.rhs) - 1)))
        if choice == 2:
            return deltas.Scale(draw(st.floats(-2, 2)), delta(depth - 1))
        return deltas.Add(delta(depth - 1), delta(depth - 1))
    for _ in range(draw(st.integers(0, 12))):
        tape.let(delta(3))
    return a, tape, delta(3)


def denotation(d: deltas.Delta, coeff: list[np.ndarray]) -> np.ndarray:
    """The naive linear meaning of a Let-free Delta, given each id's meaning."""
    if isinstance(d, deltas.Var):
        return coeff[d.i]
    if isinstance(d, deltas.Scale):
        return d.r * denotation(d.d, coeff)
    if isinstance(d, deltas.Add):
        return denotation(d.a, coeff) + denotation(d.b, coeff)
    return np.zeros_like(coeff[1])


@settings(max_examples=200, deadline=None)
@given(tapes(), st.floats(-3, 3))
def test_sweep_computes_the_denotation(case, x):
    a, tape, result = case
    coeff = [None] + [np.eye(a)[i] for i in range(a)]
    for rhs in tape.rhs:
        coeff.append(denotation(rhs, coeff))
    adj = np.zeros(tape.first + len(tape.rhs))
    deltas.eval_into(x, result, adj)
    deltas.sweep(tape, adj)
    want = x * denotation(result, coeff)
    assert adj[1:tape.first] == pytest.approx(want, rel=1e-9, abs=1e-9)
    # Fig. 10's other form: runDelta's Let nest evaluated with a DeltaMap (Thm 5: only inputs stay)
    mp = deltas.eval_map(x, tape.run_delta(result), {})
    assert set(mp) <= set(range(1, tape.first))
    assert [mp.get(i, 0.0) for i in range(1, tape.first)] == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_eval_map_on_a_deep_let_nest():
    """A tape of 10⁵ bindings, each adding the previous to itself: 2^k scaled, no recursion."""
    tape = deltas.Tape(1)
    d: deltas.Delta = deltas.Var(1)
    for _ in range(100_000):
        d = tape.let(deltas.Scale(0.5, deltas.Add(d, d)))
    mp = deltas.eval_map(3.0, tape.run_delta(d), {})
    assert mp == {1: pytest.approx(3.0)}


def test_adbench_takes_every_reverse_derivation_and_refuses_forward():
    data = ROOT / "data" / "adbench" / "gmm" / "test.txt"
    from labrys.adbench import run_gmm
    ref = run_gmm(data, "rev").gradient
    for alg in REVERSE:
        assert run_gmm(data, alg).gradient == pytest.approx(ref, rel=1e-10, abs=1e-12)
    out = subprocess.run([sys.executable, "-m", "labrys", "adbench", "gmm", str(data), "--deriv", "dualfwd"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "needs a reverse derivation" in out.stderr and "Traceback" not in out.stderr


EDEF = """
(edef g Float (Float))
(def [rev g] Float ((x : Float) (d : Float)) (mul d (cos x)))
(def [fwd g] Float ((x : Float) (d : Float)) (mul d (cos x)))
(edef h Float (Float))
(def f Float (x : Float) (mul x (g x)))
(def k Float (x : Float) (h x))
"""


def test_edef_with_hand_written_derivatives():
    m = labrys.load(EDEF)
    m.implement("g", math.sin)
    want = math.sin(1.0) + math.cos(1.0)
    for alg in REVERSE:
        assert m.derive(alg, "f")(1.0, 1.0) == pytest.approx(want, rel=1e-15)
    assert m.derive("dualfwd", "f")(1.0, 1.0) == pytest.approx(want, rel=1e-15)
    with pytest.raises(labrys.LabrysError, match=r"cannot derive h: .*\(def \[rev h\]"):
        m.derive("deltarev", "k")


@pytest.mark.parametrize("alg", FAMILY)
def test_function_typed_argument_is_out_of_scope(alg):
    m = labrys.load(ROOT / "tests" / "corpus" / "dual" / "higher_order.ks")
    with pytest.raises(labrys.LabrysError, match="function-typed argument .* out of scope"):
        m.derive(alg, "twice")
    assert m.derive(alg, "use_twice") is not None  # its first-order callers are fine
