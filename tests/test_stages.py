"""labrys show --stages: the twelve stages of the 2019 Knossos notes' Demo, each
runnable, made by the Knossos fwd and rev pipelines (Note [Pass driver])."""
from __future__ import annotations

import subprocess
import sys

import pytest

import labrys
from labrys.opt.simplify import contains_linear_map
from labrys.prelude.linear_maps import LinearMap
from labrys.syntax.printer import show_decl

F2 = """(def f2 Float (x : Float)
  (let ((y (mul x x))
        (z (add x y)))
    (mul y z)))
"""


TITLES = (  # the Demo's order (seed 002, "Demo")
    "Original definition",
    "Anf-ised original definition",
    "The full Jacobian (unoptimised)",
    "The full Jacobian (optimised)",
    "Forward derivative (unoptimised)",
    "Forward-mode derivative (optimised)",
    "Forward-mode derivative (CSE'd)",
    "Transposed Jacobian",
    "Optimised transposed Jacobian",
    "Reverse-mode derivative (unoptimised)",
    "Reverse-mode derivative (optimised)",
    "Reverse-mode derivative (CSE'd)",
)


@pytest.fixture(scope="module")
def stages():
    m = labrys.load(F2)
    sig = m.function("f2").sigs[0]
    out = {}
    for derivation in ("fwd", "rev"):
        for stage in m.derivations.derive(derivation, sig, views=True).stages:
            out.setdefault(stage.title, stage.d)
    return m, out


def run(m, d, *args):
    return m.interpreter.compile_def(d)(args[0] if len(args) == 1 else args)


def test_titles_in_the_demo_order(stages):
    _, s = stages
    assert list(s) == list(TITLES)


def test_every_stage_computes_the_same_derivative(stages):
    # f2 = x^2 (x + x^2): f2'(x) = 3x^2 + 4x^3, so 44 at x = 2 (the 002 printout's 48 is wrong)
    m, s = stages
    x, expected = 2.0, 3 * 2.0 ** 2 + 4 * 2.0 ** 3
    for title in ("The full Jacobian (unoptimised)", "The full Jacobian (optimised)",
                  "Transposed Jacobian", "Optimised transposed Jacobian"):
        lm = run(m, s[title], x)
        assert isinstance(lm, LinearMap)
        assert lm.apply(1.0) == pytest.approx(expected) and lm.apply_r(1.0) == pytest.approx(expected), title
    for title in ("Forward derivative (unoptimised)", "Forward-mode derivative (optimised)",
                  "Forward-mode derivative (CSE'd)", "Reverse-mode derivative (unoptimised)",
                  "Reverse-mode derivative (optimised)", "Reverse-mode derivative (CSE'd)"):
        assert run(m, s[title], x, 1.0) == pytest.approx(expected), title
    assert run(m, s["Original definition"], x) == pytest.approx(x * x * (x + x * x))


def test_optimised_jacobian_is_one_scale(stages):
    _, s = stages
    text = show_decl(s["The full Jacobian (optimised)"])
    assert text.count("lmScale") == 1 and "lmCompose" not in text and "lmHCat" not in text


def test_optimised_derivatives_hold_no_linear_map(stages):
    _, s = stages
    for title in ("Forward-mode derivative (optimised)", "Reverse-mode derivative (optimised)",
                  "Forward-mode derivative (CSE'd)", "Reverse-mode derivative (CSE'd)"):
        assert not contains_linear_map(s[title].body), title


def test_cli_show_stages_and_one_derivation(tmp_path):
    path = tmp_path / "f2.ks"
    path.write_text(F2)
    exe = [sys.executable, "-m", "labrys.cli.main"]
    out = subprocess.run(exe + ["show", str(path), "f2", "--stages"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    positions = [out.stdout.index(t) for t in TITLES]
    assert positions == sorted(positions)
    one = subprocess.run(exe + ["show", str(path), "f2", "--deriv", "fwd"], capture_output=True, text=True)
    assert one.returncode == 0 and one.stdout.startswith("(def [fwd f2]")
    labrys.parse_program(one.stdout)  # the printed derivative is valid .ks
    bad = subprocess.run(exe + ["show", str(path), "nope"], capture_output=True, text=True)
    assert bad.returncode == 1 and "error:" in bad.stderr and "Traceback" not in bad.stderr
