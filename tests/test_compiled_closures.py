"""Closures and function values on the compiled backend (Note [Defunctionalisation]
in labrys.backends.numba_closures, docs/backends.md): every shape gives hand-computed
values on ``compiled`` as on ``interp``, runs compiled (no note, no per-call run on
``python``), and closures cross the boundary both ways."""
from __future__ import annotations

import contextlib
import io
import logging

import numpy as np
import pytest

import labrys
from labrys.backends import python as python_backend
from test_examples import ROOT, same_output

SHAPES = """
(def adder (Lam Float Float) (n : Float) (lam (x : Float) (add x n)))
(def compose (Lam Float Float) ((f : Lam Float Float) (g : Lam Float Float))
  (lam (x : Float) (f (g x))))
(def apply_twice Float ((f : Lam Float Float) (x : Float)) (f (f x)))
(def iterate Float ((f : Lam Float Float) (n : Integer) (x : Float))
  (if (eq n 0) x (iterate f (sub n 1) (f x))))
(def square Float (x : Float) (mul x x))

; closures capturing closures of their own type, made and applied in compiled code
(def composed Float (x : Float)
  (let ((a (adder 1.0))
        (b (compose a (lam (y : Float) (mul 3.0 y))))
        (c (compose b b)))
    (c x)))

; a closure passed to a recursive function; (fn f) as a value
(def iterated Float (x : Float)
  (add (iterate (adder 0.5) 4 x) (iterate (fn square) 2 x)))

; curried: a closure returning a closure
(def curried (Lam Float (Lam Float Float)) ()
  (lam (x : Float) (lam (y : Float) (sub x y))))
(def uncurried Float ((x : Float) (y : Float))
  (let ((c (curried)) (cx (c x))) (cx y)))

; closures in a tuple
(def affine_pair (Tuple (Lam Float Float) (Lam Float Float)) ((a : Float) (b : Float))
  (tuple (lam (x : Float) (add (mul a x) b)) (lam (y : Float) (div (sub y b) a))))
(def round_trip Float (x : Float)
  (let (((f g) (affine_pair 2.0 1.0))) (g (f x))))

; closures in a sum
(def pick (Sum (Lam Float Float) Float) ((b : Bool) (k : Float))
  (if b (inl (Sum (Lam Float Float) Float) (lam (x : Float) (mul k x)))
        (inr (Sum (Lam Float Float) Float) k)))
(def run Float ((s : Sum (Lam Float Float) Float) (x : Float))
  (case s ((inl f) (f x)) ((inr c) (add c x))))

; closures in a vector
(def scalers (Vec (Lam Float Float)) (n : Integer)
  (build n (lam (i : Integer) (lam (x : Float) (mul (to_float i) x)))))
(def use Float ((fs : Vec (Lam Float Float)) (x : Float))
  (sumbuild (size fs) (lam (i : Integer) (let (f (index i fs)) (f x)))))
(def scaled_sum Float (x : Float) (use (scalers 4) x))

; higher-order recursion: a chain of n closures, each calling the previous one
(def chain (Lam Float Float) (n : Integer)
  (if (eq n 0) (lam (x : Float) x)
      (let (f (chain (sub n 1))) (lam (x : Float) (add 1.0 (f (mul 1.0 x)))))))
(def run_chain Float ((n : Integer) (x : Float)) (let (f (chain n)) (f x)))

; a loop over a function value (not a lambda written in place)
(def map_with (Vec Float) ((f : Lam Float Float) (v : Vec Float)) (map f v))
"""


@pytest.fixture(scope="module")
def shapes():
    return labrys.load(SHAPES, backend="compiled")


@pytest.fixture
def on_python(monkeypatch):
    """The defs the python backend generated code for during the test (a def that
    fell back, or a call re-run there)."""
    seen: list[str] = []
    generate = python_backend.PythonBackend.generate

    def spy(self, d):
        seen.append(str(d.name))
        return generate(self, d)
    monkeypatch.setattr(python_backend.PythonBackend, "generate", spy)
    return seen


CASES = [  # (function, arguments, hand-computed value)
    ("composed", (1.0,), 3 * (3 * 1.0 + 1) + 1),        # c = b∘b, b(y) = 3y + 1
    ("iterated", (2.0,), (2.0 + 4 * 0.5) + 2.0 ** 4),
    ("uncurried", (5.0, 2.0), 3.0),
    ("round_trip", (4.0,), 4.0),
    ("scaled_sum", (2.0,), (0 + 1 + 2 + 3) * 2.0),
    ("run_chain", (50, 0.5), 50.5),
]


@pytest.mark.parametrize("name, args, expected", CASES, ids=[c[0] for c in CASES])
def test_closure_shapes_compile_and_agree_with_hand_values(shapes, on_python, name, args, expected) -> None:
    assert getattr(shapes, name)(*args) == pytest.approx(expected, rel=1e-12)
    assert shapes.backend.fallbacks == {} and on_python == []
    assert getattr(labrys.load(SHAPES, backend="interp"), name)(*args) == pytest.approx(expected, rel=1e-12)


def test_closures_returned_to_python_are_callables_running_compiled_code(shapes, on_python) -> None:
    add5 = shapes.adder(5.0)
    assert callable(add5) and add5(1.0) == 6.0
    f, g = shapes.affine_pair(2.0, 1.0)
    assert (f(4.0), g(9.0)) == (9.0, 4.0)
    c = shapes.curried()
    assert c(10.0)(2.5) == 7.5
    fs = shapes.scalers(3)
    assert [h(1.5) for h in fs] == [0.0, 1.5, 3.0]
    assert on_python == [] and shapes.backend.fallbacks == {}
    # ... and go back into compiled code: into another module, with what they capture
    assert shapes.apply_twice(add5, 1.0) == 11.0
    assert shapes.apply_twice(shapes.compose(add5, shapes.adder(-2.0)), 0.0) == 6.0
    assert shapes.use(fs, 2.0) == 6.0
    s = shapes.pick(True, 3.0)
    assert s.left and shapes.run(s, 2.0) == 6.0
    assert shapes.run(shapes.pick(False, 3.0), 2.0) == 5.0
    assert list(shapes.map_with(add5, np.array([1.0, 2.0]))) == [6.0, 7.0]
    assert on_python == [] and shapes.backend.fallbacks == {}


def test_a_closure_chain_10000_deep_runs_compiled(shapes, on_python) -> None:
    """chain n recurses n deep making closures; applying the result recurses n deep
    through apply (native frames on the deep-stack worker): no RecursionError."""
    assert shapes.run_chain(10_000, 0.25) == 10_000.25
    assert on_python == []
    f = shapes.chain(10_000)
    assert f(1.0) == 10_001.0


def test_a_python_function_as_argument_runs_that_call_on_python(shapes, on_python) -> None:
    """A plain Python function is no .ks closure: compiled code has no code for it, so
    that call runs on python, which calls it as the interpreter does."""
    assert shapes.apply_twice(lambda x: x * 10.0, 1.5) == 150.0
    assert labrys.load(SHAPES, backend="interp").apply_twice(lambda x: x * 10.0, 1.5) == 150.0
    assert on_python == ["apply_twice"]


def verbose_run(path) -> tuple[str, str]:
    from labrys.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--verbose", "run", str(path), "--backend", "compiled"]) == 0
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ["closures", "overloading", "sums"])
def test_examples_with_function_values_compile_without_a_note(on_python, name) -> None:
    """Only the printing main runs in Python (Note [Orchestration]); the closures it
    makes (lambdas, (fn f)) and gets back are run by compiled code."""
    out, err = verbose_run(ROOT / "examples" / f"{name}.ks")
    assert same_output(out, (ROOT / "examples" / "expected" / f"{name}.out").read_text())
    assert "runs on the python backend" not in err, err
    assert on_python == ["main"]


# --- derivatives of a closure-using program, on compiled ---------------------------------

CLOSURE_PROGRAM = """
(def twice Float ((f : Lam Float Float) (x : Float)) (f (f x)))
(def g Float ((x : Float) (y : Float))
  (let ((h (lam (z : Float) (mul z (add x y))))
        (k (lam (z : Float) (sin (h z)))))
    (add (twice k x) (h y))))
"""


def g_reference(x: float, y: float) -> float:
    k = lambda z: np.sin(z * (x + y))  # noqa: E731
    return k(k(x)) + y * (x + y)


def central_gradient(x: float, y: float, h: float = 1e-6) -> tuple[float, float]:
    return ((g_reference(x + h, y) - g_reference(x - h, y)) / (2 * h),
            (g_reference(x, y + h) - g_reference(x, y - h)) / (2 * h))


@pytest.mark.parametrize("method", ["chadrev", "dualrev4"])
def test_reverse_derivatives_of_a_closure_program_agree_with_finite_differences(method) -> None:
    """Their run-time primitives still run on python (docs/backends.md), the rest compiled."""
    m = labrys.load(CLOSURE_PROGRAM, backend="compiled")
    assert m.g(0.3, 0.7) == pytest.approx(g_reference(0.3, 0.7), rel=1e-12)
    grad = m.derive(method, "g")((0.3, 0.7), 1.0)
    assert grad == pytest.approx(central_gradient(0.3, 0.7), rel=1e-6)


def test_dualfwd_of_a_closure_program_compiles_whole(on_python) -> None:
    m = labrys.load(CLOSURE_PROGRAM, backend="compiled")
    fd = central_gradient(0.3, 0.7)
    assert m.derive("dualfwd", "g")((0.3, 0.7), (1.0, 0.0)) == pytest.approx(fd[0], rel=1e-6)
    assert m.derive("dualfwd", "g")((0.3, 0.7), (0.0, 1.0)) == pytest.approx(fd[1], rel=1e-6)
    assert m.backend.fallbacks == {} and on_python == []


def test_a_run_time_error_in_a_returned_closure_is_the_interpreters_error() -> None:
    src = "(def getter (Lam Integer Float) (v : Vec Float) (lam (i : Integer) (index i v)))"
    messages = []
    for backend in ("compiled", "interp"):
        g = labrys.load(src, backend=backend).getter([1.0, 2.0])
        assert g(1) == 2.0
        with pytest.raises(labrys.LabrysError) as err:
            g(5)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "1:68: error: index 5 out of range" in messages[0]


def test_a_closure_whose_apply_numba_refuses_runs_on_python(monkeypatch, on_python, caplog) -> None:
    """Calling from Python a closure whose apply Numba cannot compile (on the corpus's
    higher-order program, "cannot type infer runaway recursion") ran on python only for
    run-time errors: Numba's refusal escaped as "a bug in labrys"."""
    from numba.core.errors import TypingError

    from labrys.backends import closure_boundary

    m = labrys.load(SHAPES, backend="compiled")
    add5 = m.adder(5.0)

    def refuse(text, entry, argtypes):
        raise TypingError("cannot type infer runaway recursion")
    monkeypatch.setattr(closure_boundary, "compiled_function", refuse)
    with caplog.at_level(logging.INFO, logger="labrys"):
        assert add5(1.0) == 6.0 and add5(-5.0) == 0.0
    assert on_python == ["closure", "closure"]
    assert sum("Numba could not compile their apply" in r.getMessage() for r in caplog.records) == 1
