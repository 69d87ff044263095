"""labrys bench: the harness (selection, timing bookkeeping, agreement, the
report) and the peers' programs against labrys and against hand-computed
values.  Nothing here asserts a time."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.bench.labrys_side import available_backends, reverse_derivations
from labrys.bench.report import markdown
from labrys.bench.run import Options, run_workload
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
from labrys.bench.timing import time_calls
from labrys.cli.main import main
from labrys.errors import LabrysError

SUITE = find_suite()
WORKLOADS = {w.name: w for w in load_suite(SUITE)}
DATA = Path(__file__).resolve().parents[1] / "data" / "adbench"
QUIET = {"progress": lambda line: None}


def test_quick_run_writes_a_table_with_the_agreement_column(tmp_path, capsys):
    code = main(["bench", "dot", "--quick", "--peer", "NumPy", "--backend", "interp", "--repeat", "2",
                 "--out", str(tmp_path)])
    assert code == 0
    text = (tmp_path / "results.md").read_text()
    assert "## Dot product (Table 1)" in text and "## Issue 6 targets" in text
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()
            if line.startswith("| NumPy |") or line.startswith("| labrys rev (interp) |")}
    assert rows["NumPy"][5] == "0 (ref.)"
    assert float(rows["labrys rev (interp)"][5]) < 1e-12
    assert "wrote" in capsys.readouterr().out


def test_a_wrong_gradient_is_marked(tmp_path):
    ks = tmp_path / "sq.ks"
    ks.write_text("(def sq Float (x : Float) (mul x x))")
    program = LabrysProgram(ks, "sq", (3.0,))
    peers = {"right": lambda: Impl(lambda: 9.0, lambda: 6.0), "wrong": lambda: Impl(lambda: 9.0, lambda: 6.5)}
    workload = Workload("sq", "square", lambda data, size: Instance("x = 3", program, peers))
    result = run_workload(workload, Options(repeat=1, quick=True, **QUIET))
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
    result = run_workload(workload, Options(repeat=1, quick=True, backends=["interp", "nonesuch"], **QUIET))
    status = {r.name: r.status for r in result.rows}
    assert status["absent"] == "not installed"
    assert status["labrys (nonesuch)"].startswith("error")

    def unavailable(data, size):
        raise Unavailable("not available: not on main yet")
    skipped = run_workload(Workload("ba1", "BA", unavailable), Options(**QUIET))
    assert "Skipped: not available" in markdown([skipped], Options(), "test")


def test_slow_labrys_cells_are_estimated_not_run():
    result = run_workload(WORKLOADS["dot"], Options(repeat=1, budget=1e-9, limit=600, peers=["NumPy"], **QUIET))
    refused = [r for r in result.rows if r.labrys and r.status.startswith("does not accept")]
    assert all(r.name.startswith("labrys procrev") for r in refused)  # the procedure language has no vectors
    labrys = [r for r in result.rows if r.labrys and r not in refused]
    assert labrys and all(r.objective.estimated and r.gradient.estimated and r.values == [None, None]
                          for r in labrys)
    assert "(est.)" in markdown([result], Options(), "test")


def test_a_runaway_labrys_call_is_interrupted_and_labrys_still_works(tmp_path):
    ks = tmp_path / "slow.ks"
    ks.write_text("(def slow Float (x : Float) (sumbuild 100000000 (lam (i : Integer) (mul x (to_float i)))))")
    workload = Workload("slow", "slow", lambda data, size: Instance("x = 1", LabrysProgram(ks, "slow", (1.0,)), {}))
    result = run_workload(workload, Options(repeat=1, budget=0.05, quick=True, derivations=["rev"], **QUIET))
    row = result.rows[0]
    assert row.objective.interrupted and row.gradient.interrupted and "interrupted" in row.note
    assert "> 100 ms" in markdown([result], Options(), "test")
    assert labrys.load("(def twice Float (x : Float) (mul x 2.0))").twice(3.0) == 6.0


def test_timing_bookkeeping():
    calls = []
    timing, value = time_calls(lambda: calls.append(1) or 42, repeat=3, budget=1e9)
    assert value == 42 and timing.runs == 3 and not timing.note
    timing, _ = time_calls(lambda: 1, repeat=3, budget=0.0)
    assert timing.runs == 0 and "1 call only" in timing.note


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


