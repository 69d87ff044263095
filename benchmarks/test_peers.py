"""The peers of `labrys bench` (JAX, PyTorch, autograd) against the NumPy peer and
labrys. They need the optional extra, so they are not part of the default test
run: `pip install -e '.[bench]' && pytest benchmarks`."""
from __future__ import annotations

from pathlib import Path

import pytest

from labrys.bench.labrys_side import gradient, load_module
from labrys.bench.suite import Impl, Instance, find_suite, load_suite, relative_difference

WORKLOADS = {w.name: w for w in load_suite(find_suite())}
DATA = Path(__file__).resolve().parents[1] / "data" / "adbench"


def _numpy(workload: str) -> tuple[Instance, Impl]:
    inst = WORKLOADS[workload].make(DATA, "probe")
    return inst, inst.peers["NumPy"]()


def _labrys_gradient(inst: Instance):
    module = load_module(inst.labrys, "interp")
    return gradient(module, inst.labrys, "rev", lambda g: g)()


@pytest.mark.parametrize("peer,module", [("JAX (jit)", "jax"), ("PyTorch", "torch"), ("autograd", "autograd")])
@pytest.mark.parametrize("workload", ["sum_mat_vec", "rotate_vec_by_quat", "gmm_d10_K25", "lstm_l2_c1024"])
def test_framework_peers_agree_with_numpy(workload, peer, module):
    pytest.importorskip(module, reason="pip install -e '.[bench]'")
    inst, numpy_impl = _numpy(workload)
    impl = inst.peers[peer]()
    assert relative_difference(impl.objective(), numpy_impl.objective()) < 1e-12
    reference = numpy_impl.gradient() if numpy_impl.gradient else _labrys_gradient(inst)
    assert relative_difference(impl.gradient(), reference) < 1e-10
