"""``labrys cost``: how a derivative's cost grows with its input, against the
function's own cost (AD-MAP §3: the final reverse modes cost a constant times
the primal; the naive stages blow up).

Inputs are generated from the function's argument types with every vector
dimension and every Integer equal to the size n; the op-count meter gives
machine-independent costs, wall time is reported beside them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np

from .ad import REGISTRY
from .ad.derivation import SAME_TYPE
from .api import Derivative, Module
from .context import METER
from .errors import LabrysError
from .ir.types import FLOAT, TBase, TSum, TTensor, TTuple, Type
from .types.tangent import tangent_type
from .util.deep import run_deep
from .values import Inj, from_python


def sized_value(t: Type, n: int, rng: np.random.Generator, tangent: bool = False,
                random_integers: bool = False) -> Any:
    """A Python value of type t in which every vector dimension is n, and every
    Integer is n (or, with ``random_integers``, drawn from 0..n).  Floats lie in
    [0.5, 1.5] (tangents in [-1, 1])."""
    match t:
        case TBase("Float"):
            return float(rng.uniform(-1, 1) if tangent else rng.uniform(0.5, 1.5))
        case TBase("Integer"):
            return int(rng.integers(0, n + 1)) if random_integers else n
        case TBase("Bool"):
            return True
        case TBase("String"):
            return "s"
        case TTuple(elems):
            return tuple(sized_value(e, n, rng, tangent, random_integers) for e in elems)
        case TTensor(rank, elem):
            shape = (n,) * rank
            if elem == FLOAT:
                return rng.uniform(-1, 1, shape) if tangent else rng.uniform(0.5, 1.5, shape)
            flat = [sized_value(elem, n, rng, tangent, random_integers) for _ in range(n ** rank)]
            return flat if rank == 1 else np.array(flat, dtype=object).reshape(shape)
        case TSum(a, b):
            left = bool(rng.integers(0, 2))
            return Inj(left, sized_value(a if left else b, n, rng, tangent, random_integers))
    raise LabrysError(f"cannot make sized inputs of type {t}")


@dataclass
class Curve:
    derivation: str
    ops: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


@dataclass
class CostReport:
    function: str
    sizes: list[int]
    primal: Curve
    derived: list[Curve]

    def slope(self, curve: Curve) -> float:
        """Fitted log-log slope of the derivative's ops against the primal's ops."""
        p, d = np.log(self.primal.ops), np.log(curve.ops)
        return float(np.polyfit(p, d, 1)[0]) if len(p) > 1 and np.ptp(p) > 0 else 1.0

    def verdict(self, curve: Curve) -> str:
        ratios = [d / p for d, p in zip(curve.ops, self.primal.ops)]
        if len(set(self.primal.ops)) == 1:  # the primal does not grow with n: no slope to fit
            grows = len(set(curve.ops)) > 1
            return "grows while the primal is constant" if grows else "constant (the primal does not grow with n)"
        bounded = self.slope(curve) < 1.1 and max(ratios) < 2 * min(ratios) + 1
        return "linear (a constant times the primal)" if bounded else "super-linear"


def _timed(fn, arg) -> tuple[int, float]:
    before = METER.ops
    start = time.perf_counter()
    fn(arg)
    seconds = time.perf_counter() - start
    return METER.ops - before, seconds


def check_sizes(sizes: list[int]) -> None:
    if len(set(sizes)) < 2 or min(sizes) < 1:
        raise LabrysError(f"cost needs at least two different sizes, each a positive whole number; got {sizes}")


def plotting_available() -> None:
    """Fail before the work when --plot cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise LabrysError("--plot needs matplotlib: pip install 'labrys[plot]'") from None


def measure(module: Module, name: str, derivations: list[str], sizes: list[int], seed: int = 0,
            progress: Callable[[str], None] = lambda text: None) -> CostReport:
    f = module.function(name)
    if len(f.sigs) != 1:
        raise LabrysError(f"{name} is overloaded: name one, e.g. '[{name} Float]'")
    sig = f.sigs[0]
    for d in derivations:
        conv = REGISTRY.get(d).convention
        if conv.direction is None and conv is not SAME_TYPE:
            raise LabrysError(f"cost needs a forward or reverse derivation ({', '.join(REGISTRY.names('forward'))}; "
                              f"{', '.join(REGISTRY.names('reverse'))}) or a translation that computes f "
                              f"(such as CL), not '{d}'")
    derived = [(d, Derivative(module, d, sig)) for d in derivations]
    primal_code = module.interpreter.cell(sig)
    report = CostReport(name, list(sizes), Curve("primal"), [Curve(d) for d in derivations])
    rng = np.random.default_rng(seed)
    check_sizes(sizes)
    for n in sizes:
        progress(f"n = {n}")
        x = from_python(sized_value(sig.arg, n, rng), sig.arg)
        ops, secs = run_deep(partial(_timed, primal_code[0], x))
        report.primal.ops.append(max(ops, 1))
        report.primal.seconds.append(secs)
        for (d, deriv), curve in zip(derived, report.derived):
            code = module.interpreter.compile_def(deriv.d)
            if REGISTRY.get(d).convention is SAME_TYPE:  # [CL f] takes f's argument
                ops, secs = run_deep(partial(_timed, code, x))
            else:
                t = sig.arg if REGISTRY.get(d).convention.direction == "forward" else sig.ret
                extra = from_python(sized_value(tangent_type(t), n, rng, tangent=True), tangent_type(t))
                ops, secs = run_deep(partial(_timed, code, (x, extra)))
            curve.ops.append(max(ops, 1))
            curve.seconds.append(secs)
    return report


def table(report: CostReport) -> str:
    head = f"{'n':>8} {'primal ops':>12}" + "".join(f" {c.derivation + ' ops':>14} {'ratio':>7}"
                                                     for c in report.derived)
    head += f" {'primal ms':>10}" + "".join(f" {c.derivation + ' ms':>10}" for c in report.derived)
    lines = [head]
    for k, n in enumerate(report.sizes):
        p = report.primal.ops[k]
        row = f"{n:>8} {p:>12}" + "".join(f" {c.ops[k]:>14} {c.ops[k] / p:>7.2f}" for c in report.derived)
        row += f" {report.primal.seconds[k] * 1e3:>10.2f}" + "".join(f" {c.seconds[k] * 1e3:>10.2f}"
                                                                     for c in report.derived)
        lines.append(row)
    for c in report.derived:
        slope = "" if len(set(report.primal.ops)) == 1 else f"log-log slope against the primal {report.slope(c):.3f} — "
        lines.append(f"{c.derivation}: {slope}{report.verdict(c)}")
    return "\n".join(lines)


def plot(report: CostReport, path: str) -> None:
    """Op counts against n, log-log, one line per derivation (matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise LabrysError("--plot needs matplotlib: pip install 'labrys[plot]'") from None
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = ["-", "--", ":", "-."]
    for k, curve in enumerate([report.primal, *report.derived]):
        ax.loglog(report.sizes, curve.ops, marker="os^dv"[k % 5], linestyle=styles[k % 4], label=curve.derivation)
    ax.set_xlabel("n")
    ax.set_ylabel("operations (op-count meter)")
    ax.set_title(f"cost of {report.function} and its derivatives")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
