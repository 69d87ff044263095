"""What a benchmark suite provides, and how the harness finds it.

The suite is the ``benchmarks/`` folder of a labrys clone: `.ks` programs and
the peer implementations (NumPy, JAX, PyTorch, autograd), with a list
``WORKLOADS`` of :class:`Workload` in its ``__init__.py``.  It is imported
under the package name ``labrys_benchmarks`` so that its modules can import
each other relatively and never clash with anything installed.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import LabrysError

PACKAGE = "labrys_benchmarks"
SIZES = ("full", "quick", "probe")  # the benchmark's size; `--quick`; the smallest, to estimate slow cells


class Unavailable(Exception):
    """A workload (or an implementation) that cannot run here, and why."""


@dataclass
class Impl:
    """One implementation of a workload, ready to time: each call returns its result
    (the objective's value; the gradient, or Jacobian, in the workload's layout)."""
    objective: Callable[[], Any]
    gradient: Callable[[], Any] | None = None  # None: no gradient (NumPy without a hand derivation)


@dataclass
class LabrysProgram:
    """A `.ks` function, its arguments, and how to read its reverse derivative."""
    path: Path
    function: str
    args: tuple
    pick: Callable[[Any], Any] = lambda g: g  # the differentiated parts of [rev f]'s result, in the peers' order
    cotangents: tuple = (1.0,)                # one reverse pass each: (1.0,) for a Float result
    # instead of reverse passes of `function`: derivative(module, derivation, pick) -> a call computing it
    derivative: Callable[[Any, str, Callable], Callable[[], Any]] | None = None
    # the parameters the peers differentiate: a derivation that takes wrt (docs/activity.md) computes
    # only their cotangents, in this order, and ``pick`` is not applied
    wrt: tuple[str, ...] = ()


@dataclass
class Instance:
    """A workload at one size: the labrys program and the peers' factories
    (a factory raises ImportError when its framework is not installed)."""
    size: str
    labrys: LabrysProgram
    peers: dict[str, Callable[[], Impl]]
    work: float = 1.0                        # proportional to the cost of a call, in work_unit
    work_unit: str = "units"                 # "points", "time steps", "elements"
    per_unit: tuple[int, str] = (1, "call")  # Table 1 reports time per unit of n


@dataclass
class Workload:
    name: str
    title: str
    make: Callable[[Path, str], Instance]  # (ADBench data folder, one of SIZES) -> instance; may raise Unavailable
    groups: tuple[str, ...] = ()
    paper: dict[str, float] = field(default_factory=dict)  # published per-unit times (µs), for comparison


def find_suite(explicit: str | os.PathLike | None = None) -> Path:
    """The benchmarks/ folder: ``explicit``, else the clone labrys was installed
    from (``pip install -e``), else ./benchmarks."""
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parents[3] / "benchmarks",
                                                   Path.cwd() / "benchmarks"]
    for c in candidates:
        if (c / "__init__.py").is_file():
            return c
    raise LabrysError("no benchmark suite found (looked in " + ", ".join(str(c) for c in candidates) +
                      "); run from a labrys clone installed with pip install -e '.[bench]', or pass --suite DIR")


def load_suite(folder: Path) -> list[Workload]:
    """Import the suite's package and return its WORKLOADS."""
    module = sys.modules.get(PACKAGE)
    if module is None or Path(module.__file__).parent != folder.resolve():
        spec = importlib.util.spec_from_file_location(PACKAGE, folder.resolve() / "__init__.py",
                                                      submodule_search_locations=[str(folder.resolve())])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return list(module.WORKLOADS)


def select(workloads: list[Workload], names: list[str]) -> list[Workload]:
    """Workloads named exactly, by a group ("table1", "adbench") or by a prefix ("gmm")."""
    if not names:
        return workloads
    chosen = []
    for name in names:
        hits = [w for w in workloads if name == w.name or name in w.groups or w.name.startswith(name)]
        if not hits:
            raise LabrysError(f"no workload '{name}'; available: " + ", ".join(w.name for w in workloads) +
                              " (groups: " + ", ".join(sorted({g for w in workloads for g in w.groups})) + ")")
        chosen += [w for w in hits if w not in chosen]
    return chosen


def data_folder(explicit: str | os.PathLike | None = None) -> Path:
    """ADBench's data: ``explicit``, $LABRYS_ADBENCH_DATA, or the clone's data/adbench."""
    if explicit:
        return Path(explicit)
    if os.environ.get("LABRYS_ADBENCH_DATA"):
        return Path(os.environ["LABRYS_ADBENCH_DATA"])
    return Path(__file__).resolve().parents[3] / "data" / "adbench"


def flatten(value: Any) -> np.ndarray:
    """Any result (float, tuple, list, NumPy/JAX array, torch tensor) as one float vector,
    nested parts in order, arrays row-major."""
    if isinstance(value, (tuple, list)):
        parts = [flatten(v) for v in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.ravel(np.asarray(value, dtype=float))


def relative_difference(value: Any, reference: Any) -> float:
    """max |a - b| / max |b| over all entries (normwise, so exact zeros in the
    reference are fine); inf when the shapes differ or anything is not finite."""
    a, b = flatten(value), flatten(reference)
    if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    return diff / scale if scale > 0 else diff
