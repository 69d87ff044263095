"""labrys bench: the harness (selection, timing bookkeeping, agreement, the
report) and the peers' programs against labrys and against hand-computed
values.  Nothing here asserts a time."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from labrys.bench import summary, timing
from labrys.bench.labrys_side import available_backends, reverse_derivations
from labrys.bench.report import markdown
from labrys.bench.run import Options, Result, Row, run_workload
from labrys.bench.suite import (
    Impl,
    Instance,
    LabrysProgram,
    Unavailable,
    Workload,
    find_suite,
    flatten,
    load_suite,
    relative_difference,
    select,
)
from labrys.bench.threads import default_threads
from labrys.bench.timing import Timing, time_calls
from labrys.cli.main import main
from labrys.errors import LabrysError

SUITE = find_suite()
WORKLOADS = {w.name: w for w in load_suite(SUITE)}
DATA = Path(__file__).resolve().parents[1] / "data" / "adbench"
QUIET = {"progress": lambda line: None}


def test_quick_run_writes_a_table_with_the_agreement_column(tmp_path, capsys):
    code = main(["bench", "dot", "--quick", "--peer", "NumPy", "--backend", "interp", "--deriv", "rev",
                 "--repeat", "2", "--out", str(tmp_path)])
    assert code == 0
    text = (tmp_path / "results.md").read_text()
    assert "## Dot product (Table 1)" in text and "## Issue 15 targets" in text
    assert (tmp_path / "summary.md").read_text().count("| dot |") == 2  # the overview and the per-algorithm table
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()
            if line.startswith("| NumPy |") or line.startswith("| labrys rev (interp) |")}
    assert rows["NumPy"][6] == "0 (ref.)"
    assert float(rows["labrys rev (interp)"][6]) < 1e-12
    assert "wrote" in capsys.readouterr().out


def test_a_wrong_gradient_is_marked(tmp_path):
    ks = tmp_path / "sq.ks"
    ks.write_text("(def sq Float (x : Float) (mul x x))")
    program = LabrysProgram(ks, "sq", (3.0,))
    peers = {"right": lambda: Impl(lambda: 9.0, lambda: 6.0), "wrong": lambda: Impl(lambda: 9.0, lambda: 6.5)}
    workload = Workload("sq", "square", lambda data, size: Instance("x = 3", program, peers))
    result = run_workload(workload, Options(repeat=1, quick=True, backends=["interp"], derivations=["rev"], **QUIET))
    rows = {r.name: r for r in result.rows}
    assert rows["right"].reference and rows["right"].diff == 0
    assert rows["wrong"].wrong and "✗" in markdown([result], Options(), "test")
    assert not rows["labrys rev (interp)"].wrong and rows["labrys rev (interp)"].diff == 0


def test_missing_peers_and_unavailable_workloads_are_reported_not_raised(tmp_path):
    ks = tmp_path / "sq.ks"
    ks.write_text("(def sq Float (x : Float) (mul x x))")

    def missing() -> Impl:
        raise ImportError("No module named 'nothing'")
    workload = Workload("sq", "square", lambda data, size: Instance("x", LabrysProgram(ks, "sq", (3.0,)),
                                                                   {"absent": missing}))
    result = run_workload(workload, Options(repeat=1, quick=True, backends=["interp", "nonesuch"],
                                            derivations=["rev"], **QUIET))
    status = {r.name: r.status for r in result.rows}
    assert status["absent"] == "not installed"
    assert status["labrys (nonesuch)"].startswith("error")

    def unavailable(data, size):
        raise Unavailable("not available: not on main yet")
    skipped = run_workload(Workload("ba1", "BA", unavailable), Options(**QUIET))
    assert "Skipped: not available" in markdown([skipped], Options(), "test")


def test_slow_labrys_cells_are_estimated_not_run():
    options = Options(repeat=1, budget=1e-9, peers=["NumPy"], backends=["interp"], derivations=["rev", "procrev"],
                      **QUIET)
    result = run_workload(WORKLOADS["dot"], options)
    refused = [r for r in result.rows if r.labrys and r.status.startswith("does not accept")]
    assert [r.name for r in refused] == ["labrys procrev (interp)"]  # the procedure language has no vectors
    labrys = [r for r in result.rows if r.labrys and r not in refused]
    assert labrys and all(r.objective.estimated and r.gradient.estimated and r.values == [None, None]
                          for r in labrys)
    assert "(est.)" in markdown([result], Options(), "test")


def test_a_tiny_bench_with_timeouts_writes_nothing_on_stderr(tmp_path):
    """Cells over their budget are estimated or cut short between calls, never interrupted
    inside foreign code (which printed "Exception ignored …" tracebacks)."""
    args = ["bench", "dot", "sum_mat_vec", "--quick", "--peer", "NumPy", "--backend", "interp", "--deriv", "rev",
            "--deriv", "deltarev", "--budget", "1e-6", "--repeat", "3", "--out", str(tmp_path)]
    done = subprocess.run([sys.executable, "-c", f"from labrys.cli.main import main; raise SystemExit(main({args!r}))"],
                          capture_output=True, text=True, timeout=600)
    assert done.stderr == "" and done.returncode == 0
    text = (tmp_path / "results.md").read_text()
    assert "(est.)" in text and "1 call only" in text


SLOW_SUITE = """
from pathlib import Path
from labrys.bench.suite import Impl, Instance, LabrysProgram, Workload
KS = Path(__file__).parent / "slow.ks"
def make(data, size):
    return Instance("x = 1", LabrysProgram(KS, "slow", (1.0,)), {})
def fast(data, size):  # finished before the limit; its peer has an objective only
    return Instance("x = 3", LabrysProgram(KS, "fast", (3.0,)), {"NumPy": lambda: Impl(lambda: 9.0)})
WORKLOADS = [Workload("fast", "Done in time", fast), Workload("slow", "A slow program", make),
             Workload("later", "Never started", make)]
"""


def test_a_call_still_running_at_the_time_limit_ends_the_run_with_complete_tables(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "__init__.py").write_text(SLOW_SUITE)
    (suite / "slow.ks").write_text("(def slow Float (x : Float) (sumbuild 100000000 (lam (i : Integer) "
                                   "(mul x (to_float i)))))\n(def fast Float (x : Float) (mul x x))")
    args = ["bench", "--suite", str(suite), "--backend", "interp", "--deriv", "rev", "--time-limit", "8",
            "--budget", "0.5", "--out", str(tmp_path / "out")]
    done = subprocess.run([sys.executable, "-c", f"from labrys.cli.main import main; raise SystemExit(main({args!r}))"],
                          capture_output=True, text=True, timeout=600)
    assert done.stderr == "" and done.returncode == 0 and "wrote" in done.stdout
    text = (tmp_path / "out" / "results.md").read_text()
    assert "reached its time limit (8 s) while timing labrys's objective (interp)" in text
    fast, slow = text.split("## A slow program")
    assert "| NumPy | 1 | " in fast and "not run" not in fast.split("## Done in time")[1]
    assert "| labrys rev (interp) | 1 | — | — |" in slow and "Skipped: not run: the run's time limit" in slow


def test_cells_after_the_run_time_limit_say_so():
    options = Options(repeat=1, quick=True, peers=["NumPy"], backends=["interp"], derivations=["rev"],
                      deadline=time.monotonic() - 1, **QUIET)
    result = run_workload(WORKLOADS["dot"], options)
    assert result.rows and all(r.status.startswith("not run: the run's time limit") for r in result.rows)
    assert all(r.objective is None and r.gradient is None for r in result.rows)


def test_sampling_stops_before_the_budget_is_overrun(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])

    def call():  # one second a call, on the fake clock
        clock[0] += 1.0
        return 7
    result, value = time_calls(call, repeat=10, budget=3.5)
    # the warm-up (t = 1), samples ending at t = 2 and 3; a third would end at 4 > 3.5
    assert value == 7 and result.runs == 2 and clock[0] == 3.0 and "2 of 10 samples" in result.note


def test_a_probe_times_a_second_call_after_a_first_that_compiled(monkeypatch):
    clock, costs = [0.0], [30.0, 0.5]  # the first call compiles for half a minute

    def call():
        clock[0] += costs.pop(0) if costs else 0.5
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    assert timing.probe(call, budget=10.0) == (0.5, 29.5)


def _timed(median: float) -> Timing:
    return Timing(median, 3, median)


def test_issue_15_targets_are_judged_against_the_marks():
    program = LabrysProgram(Path("gmm.ks"), "gmm_objective", ())
    inst = Instance("d = 10", program, {})
    rows = [Row("JAX (jit)", objective=_timed(1e-3), gradient=_timed(2e-3)),
            Row("labrys rev (compiled)", labrys=True, backend="compiled", objective=_timed(1e-3),
                gradient=_timed(4e-3), setup=2.0, compile=1.5),
            Row("labrys chadrev (compiled)", labrys=True, backend="compiled", objective=_timed(1e-3),
                gradient=_timed(8e-3), compile=0.5)]
    result = Result(Workload("gmm_d10_K25", "GMM", lambda d, s: inst), inst, rows)
    lines = summary.targets([result])
    assert any("≤ 1× JAX (jit) |" in line and "| 2 | missed by 2× |" in line for line in lines)
    assert any("≤ 3× labrys objective" in line and "| 4 | missed by 1.33× |" in line for line in lines)
    assert any("default threads" in line and "not measured" in line for line in lines)
    table = "\n".join(summary.algorithms([result]))
    assert "| gmm_d10_K25 | 4 | 8 |" in table
    assert "| 2 s + 2 s |" in "\n".join(summary.overview([result]))


def test_the_summary_goes_into_readme_between_its_markers(tmp_path):
    readme, short = tmp_path / "README.md", tmp_path / "summary.md"
    short.write_text("| new | table |\n")
    readme.write_text(f"intro\n{summary.BEGIN}\nold numbers\n{summary.END}\nafter\n")
    summary.update_readme(short, readme)
    assert readme.read_text() == f"intro\n{summary.BEGIN}\n| new | table |\n{summary.END}\nafter\n"
    readme.write_text("no markers\n")
    with pytest.raises(LabrysError, match="no benchmark summary block"):
        summary.update_readme(short, readme)


def test_default_threads_rows_come_from_a_child_process_that_can_be_stopped():
    options = Options(repeat=1, quick=True, peers=["NumPy"], backends=["interp"], derivations=["rev"], **QUIET)
    results = [run_workload(WORKLOADS["dot"], options)]
    options.labrys = False
    default_threads(results, options, SUITE, timeout=300, peers=("NumPy",))
    row = results[0].rows[-1]
    assert row.name == "NumPy · default threads" and not row.status and row.gradient.runs >= 1
    stopped = [run_workload(WORKLOADS["dot"], options)]
    default_threads(stopped, options, SUITE, timeout=0.01, peers=("NumPy",))
    assert stopped[0].rows[-1].status.startswith("not run: the run's time limit")


def test_registry_enumeration():
    assert "interp" in available_backends()
    assert "rev" in [name for name, _ in reverse_derivations()]


def test_selection_by_name_group_and_prefix():
    all_ = list(WORKLOADS.values())
    assert [w.name for w in select(all_, ["table1"])] == ["scalar_mult", "dot", "sum_mat_vec", "rotate_vec_by_quat"]
    assert {w.name for w in select(all_, ["gmm"])} == {"gmm_d10_K25", "gmm_d64_K10"}
    with pytest.raises(LabrysError, match="no workload 'nope'"):
        select(all_, ["nope"])
    assert main(["bench", "nope", "--quick"]) == 1


def test_relative_difference():
    assert relative_difference((1.0, np.zeros(2)), [1.0, 0.0, 0.0]) == 0
    assert relative_difference(np.array([1.0, 2.0]), np.array([1.0, 2.2])) == pytest.approx(0.2 / 2.2)
    assert relative_difference(np.ones(2), np.ones(3)) == float("inf")
    assert flatten([np.arange(2.0), (3.0, [4.0])]).tolist() == [0.0, 1.0, 3.0, 4.0]


# --- the peers' programs -------------------------------------------------------------------

def _numpy(workload: str, size: str = "probe") -> tuple[Instance, Impl]:
    inst = WORKLOADS[workload].make(DATA, size)
    return inst, inst.peers["NumPy"]()


def test_table1_programs_by_hand():
    _, scalar = _numpy("scalar_mult")
    assert scalar.objective() == 12.0 and scalar.gradient() == (4.0, 3.0)
    inst, dot = _numpy("dot")
    n = inst.work
    assert dot.objective() == sum(i * (2 * i + 1) for i in range(1, int(n) + 1))
    _, rotate = _numpy("rotate_vec_by_quat")
    assert rotate.objective().tolist() == [270.0, 180.0, 342.0]


def test_rotate_jacobian_by_hand_matches_finite_differences():
    table1 = importlib.import_module("labrys_benchmarks.table1")
    p = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    h = 1e-6
    fd = np.array([(table1.rotate_vec_by_quat(np, (p + h * e)[:3], (p + h * e)[3:]) -
                    table1.rotate_vec_by_quat(np, (p - h * e)[:3], (p - h * e)[3:])) / (2 * h) for e in np.eye(7)]).T
    assert np.allclose(table1.rotate_jacobian(p[:3], p[3:]), fd, rtol=1e-7)


@pytest.mark.parametrize("workload", ["scalar_mult", "dot", "sum_mat_vec", "rotate_vec_by_quat",
                                      "gmm_d10_K25", "lstm_l2_c1024"])
def test_numpy_peer_agrees_with_labrys(workload):
    options = Options(repeat=1, quick=True, peers=["NumPy"], derivations=["rev"], **QUIET)
    result = run_workload(WORKLOADS[workload], options)
    assert result.rows and not any(r.wrong or r.status for r in result.rows)
    assert all(r.diff is not None for r in result.rows)


