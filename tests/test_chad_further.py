"""chadfwd and chadrev on programs written for this file (none of them is elsewhere in the
repository), on every backend, against independent expectations: central differences of a
Python transcription of each program, and another algorithm on main — Knossos rev/fwd where
the program is first-order, Krawiec et al.'s deltarev/dualfwd where it has closures (Knossos
AD takes none).  The kinds of program are the ones issue 11 names: the paper's Fig. 1/Fig. 2
shapes (a straight-line program with a shared intermediate, a closure mapped over a vector),
a closure called several times and passed to other closures, a tree-shaped recursion with a
differentiable parameter, a fold whose step captures a parameter."""
from __future__ import annotations

import math

import numpy as np
import pytest

import labrys
from labrys.verify import verify

PROGRAM = """
(def shared (Tuple Float Float) ((a : Float) (b : Float))
  (let ((u (mul a b)) (s (sin u)) (t (add (mul s u) (div a (add 2.0 (mul b b))))))
    (tuple (mul t s) (sub u (exp (mul 0.1 t))))))
(def scaled_map (Vec Float) ((k : Float) (c : Float) (v : Vec Float))
  (let (g (lam (e : Float) (add (mul k (mul e e)) (div c (add 1.0 (mul e e))))))
    (map (lam (e : Float) (mul (g e) c)) v)))
(def compose_many Float ((a : Float) (x : Float))
  (let ((f (lam (y : Float) (mul a (sin y))))
        (after (lam (g : Lam Float Float) (lam (y : Float) (g (f y)))))
        (h (after f))
        (hh (after h)))
    (add (mul (f x) (h x)) (add (hh (f a)) (f (f x))))))
(def fib_tree Float ((p : Float) (x : Float) (n : Integer))
  (if (lt n 2)
      (mul p (sin x))
      (add (fib_tree p (mul x p) (sub n 1))
           (mul (cos p) (fib_tree p (add x 0.25) (sub n 2))))))
(def damped Float ((p : Float) (v : Vec Float))
  (fold (lam (acc_x : Tuple Float Float)
          (add (mul (get$1$2 acc_x) (cos p)) (mul p (sin (get$2$2 acc_x)))))
        p v))
"""


def _shared(a, b):
    u = a * b
    s = math.sin(u)
    t = s * u + a / (2.0 + b * b)
    return np.array([t * s, u - math.exp(0.1 * t)])


def _scaled_map(k, c, v):
    return (k * v * v + c / (1.0 + v * v)) * c


def _compose_many(a, x):
    def f(y):
        return a * math.sin(y)
    return f(x) * f(f(x)) + f(f(f(f(a)))) + f(f(x))


def _fib_tree(p, x, n):
    if n < 2:
        return p * math.sin(x)
    return _fib_tree(p, x * p, n - 1) + math.cos(p) * _fib_tree(p, x + 0.25, n - 2)


def _damped(p, v):
    acc = p
    for e in v:
        acc = acc * math.cos(p) + p * math.sin(e)
    return acc


V = np.array([0.4, -1.1, 2.3, 0.05, -0.7])
# name, transcription, arguments, active (real) arguments, cotangent of the result,
# the reference reverse/forward algorithms (independent of CHAD)
CASES = {
    "shared": (_shared, (0.8, -1.3), (0, 1), (0.7, -2.0), ("rev", "fwd")),
    "scaled_map": (_scaled_map, (0.6, 1.7, V), (0, 1, 2), np.linspace(1.0, -1.0, 5), ("deltarev", "dualfwd")),
    "compose_many": (_compose_many, (1.3, 0.4), (0, 1), 1.0, ("deltarev", "dualfwd")),
    "fib_tree": (_fib_tree, (0.9, 0.3, 7), (0, 1), 1.0, ("rev", "fwd")),
    "damped": (_damped, (0.8, V), (0, 1), 1.0, ("rev", "fwd")),
}


def _flat(x) -> np.ndarray:
    if isinstance(x, (tuple, list)):
        parts = [_flat(e) for e in x]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.atleast_1d(np.asarray(x, dtype=float)).ravel()


def _moved(args, active, direction, h):
    return tuple(a + h * d if k in active else a for k, (a, d) in enumerate(zip(args, direction)))


def _directions(args, active, seed):
    rng = np.random.default_rng(seed)
    return tuple((rng.normal(size=np.shape(a)) if isinstance(a, np.ndarray) else float(rng.normal()))
                 if k in active else (0.0 if isinstance(a, float) else ()) for k, a in enumerate(args))


def _fd(py, args, active, direction, h=1e-6) -> np.ndarray:
    """J · direction by central differences of the Python transcription."""
    return (_flat(py(*_moved(args, active, direction, h))) - _flat(py(*_moved(args, active, direction, -h)))) / (2 * h)


# on compiled, the first-order ones (their CHAD code is lowered and compiled); the ones with
# closures keep CHAD's dynamic run time, which python runs (Numba compilation is the cost here)
COMPILED = ("damped", "fib_tree")
RUNS = [(b, n) for b in ("interp", "python") for n in sorted(CASES)] + [("compiled", n) for n in COMPILED]


@pytest.fixture(scope="module")
def modules():
    return {b: labrys.load(PROGRAM, backend=b) for b in ("interp", "python", "compiled")}


@pytest.fixture(scope="module")
def reference(modules):
    return modules["interp"]


@pytest.mark.parametrize("backend, name", RUNS)
def test_chadfwd_and_chadrev_against_differences_and_another_algorithm(modules, reference, backend, name):
    module = modules[backend]
    py, args, active, dt, (rev, fwd) = CASES[name]
    assert _flat(module[name](*args)) == pytest.approx(_flat(py(*args)), rel=1e-12)
    direction = _directions(args, active, seed=11)
    fd = _fd(py, args, active, direction)
    # forward: the directional derivative, against finite differences and Knossos fwd / dualfwd
    tangent = module.derive("chadfwd", name)(args, direction)
    np.testing.assert_allclose(_flat(tangent), fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_flat(tangent), _flat(reference.derive(fwd, name)(args, direction)),
                               rtol=1e-11, atol=1e-12)
    # reverse: the gradient against Knossos rev / deltarev, and <dt, J d> = <J^T dt, d>
    grad = module.derive("chadrev", name)(args, dt)
    want = reference.derive(rev, name)(args, dt)
    for k in active:
        np.testing.assert_allclose(_flat(grad[k]), _flat(want[k]), rtol=1e-11, atol=1e-12)
    lhs = float(_flat(dt) @ fd)
    rhs = sum(float(_flat(grad[k]) @ _flat(direction[k])) for k in active)
    assert rhs == pytest.approx(lhs, rel=1e-6, abs=1e-8)


def test_compose_many_by_hand():
    """compose_many at a = 1.3, x = 0.4, the gradient by the chain rule written out
    (f(y) = a sin y, ∂f/∂a = sin y, ∂f/∂y = a cos y), independent of any AD."""
    a, x = 1.3, 0.4

    def f(y):  # value, ∂/∂a, ∂/∂y
        return a * math.sin(y), math.sin(y), a * math.cos(y)

    def chain(y, da_y, dx_y, times):  # f applied `times` times to y(a, x): value and its gradient
        for _ in range(times):
            v, fa, fy = f(y)
            y, da_y, dx_y = v, fa + fy * da_y, fy * dx_y
        return y, da_y, dx_y
    f1 = chain(x, 0.0, 1.0, 1)
    f2 = chain(x, 0.0, 1.0, 2)
    f4a = chain(a, 1.0, 0.0, 4)
    want_a = f1[1] * f2[0] + f1[0] * f2[1] + f4a[1] + f2[1]
    want_x = f1[2] * f2[0] + f1[0] * f2[2] + f2[2]
    m = labrys.load(PROGRAM, backend="interp")
    assert m.derive("chadrev", "compose_many")((a, x), 1.0) == pytest.approx((want_a, want_x), rel=1e-13)


def test_fib_tree_is_tree_shaped_and_deep_enough():
    """fib_tree(n) makes fib(n) leaves; at n = 18 (4181 leaves, recursion 18 deep, 6765 calls)
    chadrev's ∂/∂p still equals Knossos rev's and central differences."""
    m = labrys.load(PROGRAM, backend="interp")
    args = (0.9, 0.3, 18)
    got = m.derive("chadrev", "fib_tree")(args, 1.0)
    assert got[0] == pytest.approx(m.derive("rev", "fib_tree")(args, 1.0)[0], rel=1e-11)
    h = 1e-6
    fd = (_fib_tree(0.9 + h, 0.3, 18) - _fib_tree(0.9 - h, 0.3, 18)) / (2 * h)
    assert got[0] == pytest.approx(fd, rel=1e-6)


def test_verify_has_chad_columns_that_pass():
    """labrys verify: chadfwd and chadrev columns on every function; each passes wherever another
    algorithm passes (at verify's far points every algorithm can fail against the differences,
    which are then what is wrong: docs/verification.md), and all algorithms agree."""
    rows = verify(labrys.load(PROGRAM, backend="interp"))
    assert {r.function for r in rows} >= set(CASES)
    for row in rows:
        passing = [alg for alg, c in row.cells.items()
                   if alg not in ("chadfwd", "chadrev", "agree") and c is not None and c.ok]
        assert passing, row.function
        for alg in ("chadfwd", "chadrev"):
            cell = row.cells.get(alg)
            assert cell is not None and cell.ok, f"{row.function} {alg}: {cell and cell.text()} ({passing} pass)"
        agree = row.cells.get("agree")
        assert agree is not None and agree.ok, f"{row.function} agree: {agree and agree.text()}"


def test_verify_cli_prints_the_chad_columns(tmp_path, capsys):
    from labrys.cli.main import main
    path = tmp_path / "further.ks"
    path.write_text(PROGRAM)
    assert main(["verify", str(path), "damped"]) == 0
    out = capsys.readouterr().out
    assert "chadfwd" in out and "chadrev" in out
