"""Split reverse mode on the compiled backend (Note [Concrete BOGs] in
labrys.ad.bog_types): a non-recursive function's BOG has its structure type,
so [suffwdpass f], [sufrevpass f] and [sufrev f] compile (no fallback note);
a recursive function's BOG is an index into the module's heap
(tests/test_compiled_split_recursion.py).  Expected values
are hand-computed, central finite differences, or Knossos rev on the
interpreter."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import labrys
from labrys.ad.bog_runtime import Bog
from test_examples import ROOT

PROGRAM = """
(def f Float ((x : Float) (y : Float))
  (let ((a (mul x y)) (b (sin x))) (add (mul a b) (div x y))))
(def pair (Tuple Float Float) ((x : Float) (y : Float))
  (tuple (mul x x) (mul (exp x) y)))
(def dot Float ((u : Vec Float) (v : Vec Float))
  (sumbuild (size u) (lam (i : Integer) (mul (index i u) (index i v)))))
(def sq (Vec Float) (v : Vec Float)
  (build (size v) (lam (i : Integer) (let (x (index i v)) (mul x x)))))
(def relu2 Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer)
    (let (x (index i v)) (if (gt x 0.0) (mul x x) (mul 0.5 x))))))
(def branch Float ((x : Float) (y : Float))
  (if (gt x y) (mul x (sin y)) (add (mul y y) x)))
(def caller Float ((x : Float) (y : Float))
  (add (f x y) (branch y x)))
(def fprod Float (v : Vec Float)
  (fold (lam (ax : Tuple Float Float) (mul (get$1$2 ax) (get$2$2 ax))) 1.0 v))
(def newton Float ((x : Float) (n : Integer))
  (nTimes n x (lam (s : Float) (mul 0.5 (add s (div 2.0 s))))))
(def horner Float ((x : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (add (mul (get$2$2 ks) x) (to_float (get$1$2 ks))))))
(def poly Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (add 1.0 (mul x (poly x (sub n 1))))))
"""

NON_RECURSIVE = ["f", "pair", "dot", "sq", "relu2", "branch", "caller", "fprod", "newton", "horner"]
SPLIT = ("suffwdpass", "sufrevpass", "sufrev")


@pytest.fixture(scope="module")
def mc():
    return labrys.load(PROGRAM, backend="compiled")


@pytest.fixture(scope="module")
def mi():
    return labrys.load(PROGRAM, backend="interp")


def split_fallbacks(m, name: str) -> dict:
    return {k: v for k, v in m.backend.fallbacks.items() if any(f"[{d} {name}" in k for d in SPLIT)}


def fd(fn, args, k, h=1e-6):
    up, down = list(args), list(args)
    up[k], down[k] = args[k] + h, args[k] - h
    return (fn(*up) - fn(*down)) / (2 * h)


def test_straight_line_by_hand(mc):
    x, y = 1.5, 0.5
    dx, dy = mc.derive("sufrev", "f")((x, y), 1.0)
    # f = x y sin x + x / y: ∂x = y sin x + x y cos x + 1/y, ∂y = x sin x − x/y²
    assert dx == pytest.approx(y * math.sin(x) + x * y * math.cos(x) + 1 / y, rel=1e-14)
    assert dy == pytest.approx(x * math.sin(x) - x / y ** 2, rel=1e-14)
    assert split_fallbacks(mc, "f") == {}


def test_the_bog_crosses_the_boundary_as_an_opaque_box(mc, mi):
    t, bog = mc.derive("suffwdpass", "f")((1.5, 0.5))
    assert isinstance(bog, Bog) and t == pytest.approx(mi.f(1.5, 0.5))
    expected = mi.derive("rev", "f")((1.5, 0.5), 2.0)
    assert mc.derive("sufrevpass", "f")(2.0, bog) == pytest.approx(expected, rel=1e-14)
    # a BOG made on the interpreter is read by the compiled reverse pass, and back
    _, ibog = mi.derive("suffwdpass", "relu2")(np.array([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(mc.derive("sufrevpass", "relu2")(1.0, ibog), [2.0, 0.5, 6.0])
    _, cbog = mc.derive("suffwdpass", "relu2")(np.array([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(mi.derive("sufrevpass", "relu2")(1.0, cbog), [2.0, 0.5, 6.0])


def test_tuple_results(mc):
    x, y = 0.3, 2.0
    dx, dy = mc.derive("sufrev", "pair")((x, y), (1.0, 0.5))
    assert dx == pytest.approx(2 * x + 0.5 * math.exp(x) * y, rel=1e-14)
    assert dy == pytest.approx(0.5 * math.exp(x), rel=1e-14)
    assert split_fallbacks(mc, "pair") == {}


def test_vectors(mc):
    u, v = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])
    du, dv = mc.derive("sufrev", "dot")((u, v), 2.0)
    np.testing.assert_allclose(du, 2 * v)
    np.testing.assert_allclose(dv, 2 * u)
    np.testing.assert_allclose(mc.derive("sufrev", "sq")(u, np.array([1.0, 0.0, 2.0])), [2.0, 0.0, 12.0])
    np.testing.assert_allclose(mc.derive("sufrev", "relu2")(np.array([1.0, -2.0, 3.0]), 1.0), [2.0, 0.5, 6.0])
    for name in ("dot", "sq", "relu2"):
        assert split_fallbacks(mc, name) == {}


def test_if_and_calls_of_user_functions(mc, mi):
    for x, y in ((2.0, 1.0), (0.5, 1.5)):
        got = mc.derive("sufrev", "branch")((x, y), 1.0)
        assert got == pytest.approx((fd(mi.branch, (x, y), 0), fd(mi.branch, (x, y), 1)), rel=1e-6)
        assert mc.derive("sufrev", "caller")((x, y), 1.0) == \
            pytest.approx(mi.derive("rev", "caller")((x, y), 1.0), rel=1e-13)
    assert split_fallbacks(mc, "branch") == {} and split_fallbacks(mc, "caller") == {}


def test_fold_ntimes_ccl(mc, mi):
    v = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(mc.derive("sufrev", "fprod")(v, 1.0), [24.0, 12.0, 8.0, 6.0])
    got = mc.derive("sufrev", "newton")((1.3, 4), 1.0)[0]
    assert got == pytest.approx(fd(mi.newton, (1.3, 4), 0), rel=1e-6)
    # horner at (2, 3): s1 = 2x + 2, s2 = s1 x + 1, s3 = s2 x; ds3/dx at 2 = 41
    assert mc.derive("sufrev", "horner")((2.0, 3), 1.0)[0] == pytest.approx(41.0)
    for name in ("fprod", "newton", "horner"):
        assert split_fallbacks(mc, name) == {}


def test_non_tail_recursion_compiles(mc):
    # poly x n = 1 + x (1 + x (… )) : d/dx at n = 3 is 1 + 2x + 3x²  (Note [Recursive BOGs])
    x = 0.5
    assert mc.derive("sufrev", "poly")((x, 3), 1.0)[0] == pytest.approx(1 + 2 * x + 3 * x * x)
    assert split_fallbacks(mc, "poly") == {}


CHAIN = """
(def f0 Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (sin (index i v)))))
(def f1 Float (v : Vec Float) (mul (f0 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f2 Float (v : Vec Float) (mul (f1 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f3 Float (v : Vec Float) (mul (f2 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f4 Float (v : Vec Float) (mul (f3 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
"""


def test_default_gradient_compiles_where_it_picks_sufrev():
    """Calls nested 4 deep: the default gradient is sufrev, and it compiles."""
    m = labrys.load(CHAIN, backend="compiled")
    assert labrys.default_method(m.f4).method == "sufrev"
    v = np.array([0.3, -0.2, 0.9])
    g = labrys.grad(m.f4)(v)
    # f4 = (Σ sin v)(Σ cos v)^4: ∂/∂v_j = cos v_j C^4 − 4 S C^3 sin v_j
    S, C = np.sum(np.sin(v)), np.sum(np.cos(v))
    np.testing.assert_allclose(g, np.cos(v) * C ** 4 - 4 * S * C ** 3 * np.sin(v), rtol=1e-13)
    assert not m.backend.fallbacks


@pytest.mark.parametrize("path, names", [("examples/split.ks", ["possq"]),
                                          ("examples/derivatives.ks", ["f"])])
def test_examples_have_no_fallback_for_non_recursive_functions(path, names):
    m = labrys.load((ROOT / path).read_text(), backend="compiled")
    for name in names:
        fn = getattr(m, name)
        arg = np.array([-1.5, -0.5, 0.5, 1.5]) if name == "possq" else (1.5, 0.5)
        got = m.derive("sufrev", name)(arg, 1.0)
        want = labrys.load((ROOT / path).read_text(), backend="interp").derive("rev", name)(arg, 1.0)
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-13)
        assert fn is not None and split_fallbacks(m, name) == {}


def test_sufrev_op_slope_stays_linear(mi):
    """The op meter (interp) over loop sizes: sufrev/primal flat (log-log slope ≤ 1.1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ = labrys.METER.ops
    sizes, costs = [10, 100, 1000], []
    for n in sizes:
        v = np.linspace(0.5, 1.5, n)
        before = labrys.METER.ops
        mi.derive("sufrev", "relu2")(v, 1.0)
        costs.append(labrys.METER.ops - before)
    slope = np.polyfit(np.log(sizes), np.log(costs), 1)[0]
    assert slope <= 1.1


# --- ccl's O(1)-memory reverse (Fig. 19; Note [ccl in O(1) memory]) ------------------

CCL = """
(def drift Float ((x : Float) (c : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (add (get$2$2 ks) (mul c (to_float (get$1$2 ks))))) true))
(def drift_tape Float ((x : Float) (c : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (add (get$2$2 ks) (mul c (to_float (get$1$2 ks)))))))
(def vdrift (Vec Float) ((s : Vec Float) (u : Vec Float) (n : Integer))
  (ccl n s (lam (ks : Tuple Integer (Vec Float)) (add (get$2$2 ks) (mul (sin (to_float (get$1$2 ks))) u))) true))
(def vdrift_tape (Vec Float) ((s : Vec Float) (u : Vec Float) (n : Integer))
  (ccl n s (lam (ks : Tuple Integer (Vec Float)) (add (get$2$2 ks) (mul (sin (to_float (get$1$2 ks))) u)))))
(def halve Float ((x : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (mul (get$2$2 ks) (div 1.0 (to_float (add 1 (get$1$2 ks)))))) true))
"""


@pytest.mark.parametrize("backend", ["interp", "compiled"])
def test_ccl_commuting_reverse_is_the_gradient(backend):
    m = labrys.load(CCL, backend=backend)
    # drift x c n = x + c Σ_{k<n} k:  ∂x = 1, ∂c = n(n-1)/2
    assert m.derive("sufrev", "drift")((0.3, 2.0, 5), 1.0)[:2] == pytest.approx((1.0, 10.0))
    u = np.array([0.5, -1.0, 2.0])
    ds, du, _ = m.derive("sufrev", "vdrift")((np.ones(3), u, 6), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(ds, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(du, sum(math.sin(k) for k in range(6)) * np.array([1.0, 2.0, 3.0]))
    # halve x n = x / n!:  ∂x = 1/n!
    assert m.derive("sufrev", "halve")((3.0, 4), 1.0)[0] == pytest.approx(1 / 24)
    mi = labrys.load(CCL, backend="interp")
    for name, args, dt in (("drift", (0.3, 2.0, 7), 1.0), ("halve", (3.0, 5), 2.0)):
        got, want = m.derive("sufrev", name)(args, dt), mi.derive("rev", name)(args, dt)
        assert got[:-1] == pytest.approx(want[:-1], rel=1e-13)
    if backend == "compiled":
        for name in ("drift", "vdrift", "halve"):
            assert split_fallbacks(m, name) == {}


def test_show_says_which_reverse_each_ccl_gets(tmp_path, capsys):
    from labrys.cli.main import main
    path = tmp_path / "ccl.ks"
    path.write_text(CCL)
    main(["show", str(path), "drift", "--deriv", "sufrev", "--stages"])
    out = capsys.readouterr().out
    assert "O(1)-memory reverse" in out and "asserts that the steps commute" in out and "(fold " in out
    main(["show", str(path), "drift_tape", "--deriv", "sufrev", "--stages"])
    out = capsys.readouterr().out
    assert "the tape of its n states" in out and "(ccl n s0 f true)" in out and "rfold" in out


def test_ccl_commuting_reverse_stores_o1_states_where_the_tape_stores_n():
    """Peak memory of the reverse over a state of 2000 Floats: the tape grows with n,
    the replay does not (interp backend; tracemalloc sees NumPy's buffers)."""
    import tracemalloc
    m = labrys.load(CCL, backend="interp")
    s, u = np.ones(2000), np.linspace(0.0, 1.0, 2000)

    def peak(name, n):
        grad = m.derive("sufrev", name)
        grad((s, u, 2), s)  # generated and warmed before measuring
        tracemalloc.start()
        try:
            grad((s, u, n), s)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    tape = peak("vdrift_tape", 200) / peak("vdrift_tape", 20)
    replay = peak("vdrift", 200) / peak("vdrift", 20)
    assert tape > 5.0      # 10× the states: the tape of n states of 16 kB each
    assert replay < 1.5    # O(1): the same few states whatever n


def test_ccl_commutes_must_be_a_literal_and_other_derivations_accept_it():
    bad = CCL + "(def g Float ((x : Float) (b : Bool)) (ccl 3 x (lam (ks : Tuple Integer Float) (get$2$2 ks)) b))"
    m = labrys.load(bad, backend="interp")
    with pytest.raises(labrys.LabrysError) as err:
        m.derive("sufrev", "g")((1.0, True), 1.0)
    assert "literal true or false" in str(err.value)
    mi = labrys.load(CCL, backend="interp")
    for method in ("rev", "fwd", "dualfwd", "deltarev"):
        if method in ("fwd", "dualfwd"):
            _, dy = labrys.jvp(mi.drift, (0.3, 2.0, 5), (0.0, 1.0, ()), method=method)
            assert dy == pytest.approx(10.0)
        else:
            assert labrys.grad(mi.drift, argnums=1, method=method)(0.3, 2.0, 5) == pytest.approx(10.0)


def test_vectors_of_sums_are_structs_of_arrays():
    """A loop's per-step BOG of an if is a sum: Vec (Sum …) compiles as a tag column
    and both slots' columns (Note [Struct of arrays]), in and out of compiled code."""
    src = """
(def tags (Vec (Sum Float (Tuple Integer Float))) (v : Vec Float)
  (build (size v) (lam (i : Integer)
    (let (x (index i v)) (if (gt x 0.0) (inl (Sum Float (Tuple Integer Float)) (mul x x))
                                        (inr (Sum Float (Tuple Integer Float)) (tuple i x)))))))
(def total Float (s : Vec (Sum Float (Tuple Integer Float)))
  (sumbuild (size s) (lam (i : Integer)
    (case (index i s) ((inl a) a) ((inr b) (mul (to_float (get$1$2 b)) (get$2$2 b)))))))
"""
    m = labrys.load(src, backend="compiled")
    out = m.tags(np.array([2.0, -1.0, 3.0, -4.0]))
    assert [(e.left, e.value) for e in out] == [(True, 4.0), (False, (1, -1.0)), (True, 9.0), (False, (3, -4.0))]
    assert m.total(out) == 4.0 - 1.0 + 9.0 - 12.0
    assert not m.backend.fallbacks


# --- ccl's numerical check (Note [ccl's numerical check] in labrys.ad.bog_loops) -------------

FALSE_CCL = """
(def tangle Float ((x : Float) (c : Float) (n : Integer))
  (ccl n x (lam (ks : Tuple Integer Float) (mul (sin (get$2$2 ks)) c)) true))
(def vtangle (Vec Float) ((s : Vec Float) (u : Vec Float) (n : Integer))
  (ccl n s (lam (ks : Tuple Integer (Vec Float)) (mul (get$2$2 ks) u)) true))
"""


@pytest.mark.parametrize("backend", ["interp", "compiled"])
def test_a_false_ccl_assertion_is_a_positioned_error(backend):
    """sin(s)·c does not commute; nor does s⊙u, though its maps of ∂s are diagonal: u's cotangent
    gains s_k ⊙ ∂s at step k, which the replay pairs with the wrong ∂s.  The replay would be
    wrong, so the reverse pass refuses, at the ccl's position."""
    m = labrys.load(FALSE_CCL, backend=backend)
    for name, args, dt, line in (("tangle", (0.3, 2.0, 5), 1.0, 3),
                                 ("vtangle", (np.array([0.5, 1.5, -1.0]), np.array([0.9, 1.1, 0.7]), 4),
                                  np.ones(3), 5)):
        with pytest.raises(labrys.LabrysError) as err:
            m.derive("sufrev", name)(args, dt)
        msg = str(err.value)
        assert msg.startswith(f"<string>:{line}:3: error:") and "do not" in msg and "commute" in msg
    # one step is always fine (nothing to reorder); the answer is then rev's
    mi = labrys.load(FALSE_CCL, backend="interp")
    assert m.derive("sufrev", "tangle")((0.3, 2.0, 1), 1.0)[:2] == \
        pytest.approx(mi.derive("rev", "tangle")((0.3, 2.0, 1), 1.0)[:2], rel=1e-13)
    if backend == "compiled":
        assert split_fallbacks(m, "tangle") == {} and split_fallbacks(m, "vtangle") == {}


def test_the_check_costs_a_constant():
    """The check runs 3 steps twice whatever n: the op count of sufrev on an asserted ccl grows
    like the primal's (interp op meter, ratio flat over n = 10 … 1000)."""
    m = labrys.load(CCL, backend="interp")
    with warnings.catch_warnings():  # earlier tests ran compiled code: the meter's reading warns once
        warnings.simplefilter("ignore")
        _ = labrys.METER.ops
    ratios = []
    for n in (10, 100, 1000):
        before = labrys.METER.ops
        m.drift(0.3, 2.0, n)
        primal = labrys.METER.ops - before
        before = labrys.METER.ops
        m.derive("sufrev", "drift")((0.3, 2.0, n), 1.0)
        ratios.append((labrys.METER.ops - before) / primal)
    assert ratios[-1] < ratios[0] * 1.05
