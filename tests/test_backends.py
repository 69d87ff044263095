"""Every backend gives the interpreter's results: the bundled examples, the
originals and derived functions of the Knossos corpus, deep programs, and
run-time errors at the same positions.  The interpreter itself is tested
against independent expectations elsewhere."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

import labrys
from test_deep import REC, N, nested_calls, nested_ifs, nested_lets
from test_examples import EXAMPLES, NEEDS_AD, ROOT, same_output
from test_knossos_ad import FILES, load_case, rand_like, same

BACKENDS = ["python", "compiled"]
backends = pytest.mark.parametrize("backend", BACKENDS)


def run_main(path: Path, backend: str) -> str:
    """main's output; nothing may appear on stderr (quiet on success, whatever falls back)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        labrys.load(path, backend=backend).function("main")()
    assert err.getvalue() == "", err.getvalue()
    return out.getvalue()


@backends
@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.stem not in NEEDS_AD], ids=lambda p: p.stem)
def test_examples(path: Path, backend: str) -> None:
    expected = (ROOT / "examples" / "expected" / f"{path.stem}.out").read_text()
    assert same_output(run_main(path, backend), expected)


@backends
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_derivatives_agree_with_interpreter(path: Path, backend: str) -> None:
    case = load_case(path)  # runs on the interpreter (tests/conftest.py)
    other = labrys.load(path, backend=backend)
    rng = case.rng("backends")
    y = case.primal(case.x)
    assert_close(other.function(case.entry)(*case.args), y)
    for derivation, direction in (("fwd", case.x), ("rev", y)):
        tangent = rand_like(direction, rng)
        want = case.derived(derivation)(case.x, tangent)
        got = other.derive(derivation, case.entry)(case.x, tangent)
        same(got, want, f"{path.name}: [{derivation} {case.entry}] on {backend}")


def assert_close(got, want) -> None:
    """Same structure; discrete parts equal, Floats to 1e-12 relative."""
    if isinstance(want, (tuple, list)) or (isinstance(want, np.ndarray) and want.dtype == object):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w)
    elif isinstance(want, (float, np.ndarray)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    else:
        assert got == want and type(got) is type(want)


# --- deep programs (tests/test_deep.py, on every backend) -------------------------------

@pytest.fixture(scope="module")
def deep_program():
    """Parsed and checked once; each backend makes its own Module of it."""
    return labrys.check_program(labrys.parse_program(
        f"(def f Float (x0 : Float) {nested_lets(N)})\n"
        f"(def g Integer (k : Integer) {nested_ifs(N)})\n"
        "(def inc Float (x : Float) (add x 1.0))\n"
        f"(def h Float (x : Float) {nested_calls(N)})\n"
        # ifs nested in non-tail position: the generator outlines them
        f"(def j Integer (k : Integer) (add 1 {nested_ifs(N)}))"))


@backends
def test_deep_lets_ifs_calls(backend: str, deep_program) -> None:
    m = labrys.Module(deep_program, backend=backend)
    assert m.f(0.5) == N + 0.5
    assert [m.g(k) for k in (0, 4321, N - 1, N)] == [1, 4322, N, 0]
    assert m.h(2.0) == N + 2.0
    assert m.j(4321) == 4323


@backends
def test_deep_recursion(backend: str) -> None:
    m = labrys.load(REC, backend=backend)
    assert m.rec(10 * N) == 10 * N
    assert m.sumto(10 * N) == 10 * N * (10 * N + 1) / 2
    assert m.is_even(N) is True


# --- run-time errors ----------------------------------------------------------------------

ERRORS = """
(def at Float ((v : Vec Float) (i : Integer)) (mul 2.0 (index i v)))
(def checked Float (x : Float) (assert (gt x 0.0) (log x)))
(def inlam (Vec Float) (v : Vec Float) (build 3 (lam (i : Integer) (index (add i 5) v))))
"""


@backends
@pytest.mark.parametrize("call", [("at", (np.ones(3), 7)), ("checked", (-1.0,)), ("inlam", (np.ones(2),))])
def test_errors_at_the_interpreters_positions(backend: str, call) -> None:
    name, args = call
    with pytest.raises(labrys.LabrysError) as want:
        labrys.load(ERRORS, backend="interp").function(name)(*args)
    with pytest.raises(labrys.LabrysError) as got:
        labrys.load(ERRORS, backend=backend).function(name)(*args)
    assert str(got.value) == str(want.value)


def test_unknown_backend_is_a_labrys_error() -> None:
    with pytest.raises(labrys.LabrysError, match="unknown backend 'fast'"):
        labrys.load("(def f Float (x : Float) x)", backend="fast")


# --- fallback notes, the cache, the command line ---------------------------------------

def test_a_fallback_is_noted_under_verbose_only(capsys, tmp_path) -> None:
    from labrys.cli.main import main

    src = tmp_path / "dotv.ks"  # dotv (the Knossos runtime's name for dot) has no compiled form
    src.write_text("(def f Float ((u : Vec Float) (v : Vec Float)) (mul 2.0 (dotv u v)))\n"
                   "(def main Integer () (print (f (Vec_init 1.0 2.0) (Vec_init 3.0 4.0)) \"\\n\"))\n")
    assert main(["run", str(src), "--backend", "compiled"]) == 0
    out, err = capsys.readouterr()
    assert out == "22.0\n"
    assert err == ""  # quiet on success
    assert main(["--verbose", "run", str(src), "--backend", "compiled"]) == 0
    out, err = capsys.readouterr()
    notes = [line for line in err.splitlines() if line.startswith("labrys: note: ")]
    assert notes == [f"labrys: note: f runs on the python backend: primitive dotv on (Tuple (Vec Float) (Vec Float)) "
                     f"at {src}:1:57 is not supported by the compiled backend"], notes


def test_closures_compile_without_a_note(capsys) -> None:
    """Note [Defunctionalisation]: function values are compiled (tests/test_compiled_closures.py)."""
    from labrys.cli.main import main

    assert main(["--verbose", "run", str(ROOT / "examples" / "closures.ks"), "--backend", "compiled"]) == 0
    out, err = capsys.readouterr()
    assert same_output(out, (ROOT / "examples" / "expected" / "closures.out").read_text())
    assert "runs on the python backend" not in err


def test_compiled_module_reports_compile_time_and_uses_the_cache(tmp_path, monkeypatch, capsys) -> None:
    from labrys.cli.main import main

    monkeypatch.setenv("LABRYS_CACHE_DIR", str(tmp_path))
    src = "(def f Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (mul 2.0 (index i v)))))"
    m = labrys.load(src, backend="compiled")
    assert m.f([1.0, 2.0]) == 6.0
    assert m.compile_seconds > 0 and not m.backend.fallbacks
    assert list(tmp_path.glob("labrys_*.py"))
    assert main(["cache", "info"]) == 0
    assert "2 compiled modules," in capsys.readouterr().out  # f and the run-time helpers
    assert main(["cache", "clear"]) == 0
    assert list(tmp_path.iterdir()) == []  # labrys did not create tmp_path: emptied, kept (tests/test_cache.py)


def test_run_timings(capsys) -> None:
    from labrys.cli.main import main

    assert main(["run", str(ROOT / "examples" / "fold.ks"), "--backend", "python", "--timings"]) == 0
    assert "labrys: python backend: compile " in capsys.readouterr().err


def test_ragged_input_runs_on_python() -> None:
    m = labrys.load("(def f Float (m : Vec (Vec Float)) (sumbuild (size m) (lam (i : Integer) (sum (index i m)))))",
                    backend="compiled")
    assert m.f([[1.0, 2.0], [3.0, 4.0]]) == 10.0
    assert m.f([[1.0], [2.0, 3.0, 4.0]]) == 10.0


SEMANTICS = """
(def idiv Integer ((a : Integer) (b : Integer)) (div a b))
(def extremes (Tuple Float Float Integer Integer) (v : Vec Float) (tuple (max v) (min v) (imax v) (imin v)))
(def squares (Vec Integer) (n : Integer) (build n (lam (i : Integer) (mul i i))))
(def fold_ints Integer (n : Integer) (fold (lam (a_x : Tuple Integer Integer) (add (get$1$2 a_x) (get$2$2 a_x)))
                                          0 (squares n)))
(def rows (Vec (Vec Float)) (n : Integer)
  (build n (lam (i : Integer) (build 2 (lam (j : Integer) (to_float (add i j)))))))
(def ieee Float (x : Float) (add (div 1.0 x) (log x)))
"""


@pytest.mark.parametrize("call", [("idiv", (-7, 2)), ("idiv", (7, -2)), ("idiv", (1, 0)),
                                  ("extremes", ([1.0, float("nan"), 3.0],)), ("extremes", ([2.0, 5.0, 5.0, -1.0],)),
                                  ("squares", (4,)), ("fold_ints", (5,)), ("rows", (3,)), ("rows", (0,)),
                                  ("ieee", (0.0,)), ("ieee", (-1.0,))], ids=str)
def test_compiled_semantics_are_the_interpreters(call) -> None:
    name, args = call
    results = []
    for backend in ("interp", "compiled"):
        try:
            results.append(labrys.load(SEMANTICS, backend=backend).function(name)(*args))
        except labrys.LabrysError as exc:
            results.append(str(exc))
    want, got = results
    assert exact(got) == exact(want)


def exact(v):
    """A value as nested lists of reprs: compares NaN with NaN and keeps int apart from float."""
    if isinstance(v, (tuple, list, np.ndarray)):
        return [exact(x) for x in v]
    return repr(v) if isinstance(v, str) else f"{type(v).__name__} {v!r}"


def test_map_over_a_vector_compiles_as_a_loop():
    """(map f v) is the build it abbreviates; its lambda is a loop body, not a closure."""
    m = labrys.load("(def f Float ((m : Vec (Vec Float)) (v : Vec Float))\n"
                    "  (sum (map (lam (row : Vec Float) (sum (mul row v))) m)))\n", backend="compiled")
    rows, v = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    assert m.f(rows, v) == float((rows @ v).sum())
    assert not m.backend.fallbacks
