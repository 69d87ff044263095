"""The fuzz harness in the suite (tests/fuzz/harness.py): a bounded run of
mutants of examples/*.ks and random well-typed programs through parse, fmt,
check, every backend and every registered derivation, each input in its own
process; and the shrunk inputs of every bug class it found, as regressions.

Bounded (about a minute of CPU in all, Note [Fuzzing on a budget] in harness.py):
every derivation runs on `interp` and `python`, a rotating slice of them on
`compiled`.  Each run draws its own seed (``LABRYS_FUZZ_SEED`` sets it); a
failure prints it, so ``LABRYS_FUZZ_SEED=N pytest tests/fuzz`` runs the same
inputs again.  The long run: ``python tests/fuzz/run.py --seconds 3600``."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import harness
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed

import labrys
from strategies import text_programs

SEED = int(os.environ.get("LABRYS_FUZZ_SEED") or random.SystemRandom().randrange(1_000_000))
AGAIN = f"fuzz seed {SEED}; the same inputs again: LABRYS_FUZZ_SEED={SEED} pytest tests/fuzz"
COMPILED_DERIVATIONS = 2  # derivations per sample that also run on `compiled` (rotated)
REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.ks"))


def _compiled_derivations(text: str) -> set[str]:
    """The derivations a regression names on its ``; compiled: NAME ...`` line: the
    bug was on `compiled`, so those run there on every CI run."""
    return {n for line in text.splitlines() if line.startswith("; compiled:") for n in line.split(":")[1].split()}


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.stem)
def test_regression_has_no_bug(path):
    text = path.read_text(encoding="utf-8")
    named = _compiled_derivations(text)
    rotated = harness.rotation(SEED, COMPILED_DERIVATIONS)
    plan = lambda name, backend: name in named or rotated(name, backend)  # noqa: E731
    for seed in range(2):  # the sampled arguments differ per seed (sizes 0 to 3)
        backends = ("interp", "python", "compiled") if seed == 0 else ("interp",)
        out = harness.run_isolated(text, timeout=120, seed=seed, backends=backends, derive_on=plan)
        assert not out.is_bug, (out.stage, out.detail, AGAIN)


def test_derived_code_errors_have_positions():
    m = labrys.load(REGRESSIONS[0].parent / "derived_index_out_of_range.ks", backend="interp")
    for method in ("fwd", "fwdt"):
        with pytest.raises(labrys.LabrysError) as info:
            m.derive(method, "sqnorm")(np.ones(3), np.ones(2))
        err = info.value
        assert err.message == "index 2 out of range for a tensor of size 2"
        assert err.span is not None and (err.span.line, err.span.col) == (4, 1)  # the def of sqnorm


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_dualfwd_tangent_of_another_shape(backend):
    m = labrys.load(REGRESSIONS[0].parent / "dualfwd_tangent_shape.ks", backend=backend)
    d = m.derive("dualfwd", "loss")
    x = (0.3, 0.1, np.ones(3), np.ones(3))
    dx = (1.0, 0.0, np.ones(2), np.ones(3))
    with pytest.raises(labrys.LabrysError, match="the tangent has fewer numbers than the argument") as info:
        d(x, dx)
    assert info.value.span is not None


def _backends(i: int) -> tuple[str, ...]:
    """Sample ``i``'s backends: `interp`, and `python` or `compiled` in turn."""
    return ("interp", ("python", "compiled")[(SEED + i) % 2])


def test_bounded_mutants():
    """A mutant of every example through the whole pipeline: no bug, no hang."""
    rnd = random.Random(SEED)
    bugs = []
    for i, path in enumerate(harness.EXAMPLES):
        for text in harness.mutants(path.read_text(encoding="utf-8"), rnd, 1):
            kw = dict(backends=_backends(i), derive_on=harness.rotation(SEED + i, COMPILED_DERIVATIONS))
            out = harness.run_isolated(text, timeout=60, seed=rnd.randrange(99), **kw)
            if out.is_bug:
                small = harness.shrink(text, harness.same_bug(out, lambda t, kw=kw: harness.run_isolated(
                    t, timeout=60, **kw)), budget=60)
                bugs.append(f"{path.name}: {out.kind} at {out.stage}: {out.detail}\n{small}")
    assert not bugs, "\n\n".join(bugs + [AGAIN])


def random_programs_have_no_bug(run_seed: int, n: int = 12) -> None:
    """``n`` random programs drawn with ``run_seed``, each on `interp` and one
    other backend in turn, every derivation (a slice of them on `compiled`)."""
    count = iter(range(n))

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @hypothesis_seed(run_seed)
    @given(text_programs())
    def check(prog):
        i = next(count, n)
        out = harness.run_isolated(prog[0], timeout=60, seed=i, backends=_backends(i),
                                   derive_on=harness.rotation(run_seed + i, COMPILED_DERIVATIONS))
        assert not out.is_bug, (out.stage, out.detail, prog[0])
    check()


def test_bounded_random_programs():
    """In a fresh interpreter: in the full suite (every test module collected) one draw
    failed twice and never alone; isolating it keeps CI's verdict about labrys."""
    root = Path(__file__).resolve().parents[2]
    code = ("import sys; sys.path[:0] = ['tests/fuzz', 'tests']; import test_fuzz_pipeline as t; "
            f"t.random_programs_have_no_bug({SEED})")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "LABRYS_FUZZ_SEED": str(SEED)})
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-20000:] + "\n" + AGAIN  # the whole program


def test_every_registered_derivation_is_fuzzed():
    from labrys.ad import REGISTRY

    names = harness.derivations()
    assert set(REGISTRY.names()) <= set(names) and "rev" in names and "dualfwd" in names


def test_hang_backstop_reads_cpu_time():
    """The wall-clock backstop asks how much CPU a child used (Linux: /proc)."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("no /proc")
    spent = sum(i * i for i in range(300_000))  # some CPU of our own
    assert spent > 0 and harness._cpu_seconds(os.getpid()) > 0
    assert harness._cpu_seconds(2**22 + 12345) is None  # no such process


def test_hang_backstop_tells_a_starved_child_from_a_stalled_one():
    """A child that is runnable counts as busy whether it gets the CPU or waits for it
    (a niced child on a loaded machine); a sleeping one does not (Linux schedstat)."""
    import subprocess
    import sys
    import time

    if not Path("/proc/self/task").exists():
        pytest.skip("no /proc")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert sleeper.stdout.readline() == "ready\n"  # started: from here on it only sleeps
        before = harness._busy_seconds(spinner.pid), harness._busy_seconds(sleeper.pid)
        time.sleep(1.0)
        after = harness._busy_seconds(spinner.pid), harness._busy_seconds(sleeper.pid)
    finally:
        spinner.kill()
        sleeper.kill()
        spinner.wait()
        sleeper.wait()
    # runnable throughout the second: about 1 s of running plus waiting, however loaded the machine
    assert after[0] - before[0] > 0.5
    assert after[1] - before[1] < 0.05
