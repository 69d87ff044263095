"""Run workloads: every implementation of each, timed in this one process,
and every result compared with a reference.

Note [Bounded time]
~~~~~~~~~~~~~~~~~~~
What made a full run long: every (derivation, backend) cell compiling its
own code, and the interpreter's minutes-long calls.  So by default only the
compiled backend and the final reverse algorithms run
(``labrys_side.FINAL``; ``--backend``/``--deriv`` add the others); a
module is loaded once per (program, backend) for all its cells, and a
derived function once per (module, derivation), reused by the probe runs
and the full-size run (the compiled backend's disk cache keeps the machine
code between runs).  Compiling is timed on its own and reported, never
counted against a cell's budget.  A labrys cell is first run at the
workload's smaller sizes and skipped, with the estimate shown, if the
full-size call would exceed the budget; sampling stops before the budget
is overrun (Note [Timing]).  Nothing is interrupted asynchronously (Note [No
asynchronous interruption]); instead the whole run has a deadline
(``Options.deadline``): cells not started by then are marked "not run"
with the reason, so the table is complete, and the run ends.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from ..context import fast_math_for, set_threads
from ..errors import LabrysError
from . import labrys_side
from .suite import Impl, Instance, Unavailable, Workload, data_folder, relative_difference
from .timing import Timing, seconds, time_calls
from .timing import probe as probe_call

TOLERANCE = 1e-6  # a larger relative difference from the reference marks the row as wrong


@dataclass
class Options:
    repeat: int = 5
    budget: float = 10.0                 # seconds per cell (one implementation's objective, or gradient)
    quick: bool = False
    backends: list[str] | None = None    # None: the compiled backend (["all"]: every available one)
    peers: list[str] | None = None       # None: every peer of the workload
    derivations: list[str] | None = None  # None: the final reverse algorithms (["all"]: every one)
    data: Path | None = None
    threads: int = 1                     # threads for the peers (0: each framework's default)
    labrys: bool = True                  # False: the peers only
    fast_math: bool = True               # labrys's code may reassociate sums (Note [Reassociation on one thread])
    current: str = ""                    # the cell being timed, for a run stopped at its time limit
    deadline: float | None = None        # time.monotonic() after which no cell starts (Note [Bounded time])
    progress: Callable[[str], None] = logging.getLogger("labrys.bench").info  # the CLI shows a progress line


@dataclass
class Row:
    name: str                    # "NumPy", "JAX (jit)", "labrys rev (interp)"
    labrys: bool = False
    backend: str = ""            # labrys rows: the backend (the objective's owner)
    objective: Timing | None = None
    gradient: Timing | None = None
    compile: float | None = None  # setup (derive, trace) + the first calls' overhead
    setup: float | None = None    # labrys: the objective's compile (load, type-check, first calls), shared by its rows
    diff: float | None = None     # max relative difference from the reference (objective and gradient)
    reference: bool = False
    status: str = ""             # why there are no numbers: "not installed", "does not accept …", "error: …"
    threads: str = "1"           # the threads it ran on: "1", or "2 (default)" (labrys.bench.threads)
    note: str = ""
    values: list[Any] = field(default_factory=lambda: [None, None], repr=False)  # objective, gradient

    @property
    def ratio(self) -> float | None:
        if self.objective and self.gradient and self.objective.median > 0:
            return self.gradient.median / self.objective.median
        return None

    @property
    def wrong(self) -> bool:
        return self.diff is not None and not self.diff <= TOLERANCE


@dataclass
class Result:
    workload: Workload
    instance: Instance | None
    rows: list[Row]
    skipped: str = ""                       # why the workload did not run at all
    references: tuple[str, str] = ("", "")  # the rows the objective and the gradient are compared with
    finished: bool = False                   # every row done (else the run stopped at its time limit)


def run(workloads: list[Workload], options: Options, sink: list[Result] | None = None) -> list[Result]:
    """Run the workloads in turn; each Result joins ``sink`` (when given) as soon as it starts,
    so that a run stopped at its time limit can still report what it has (``labrys.bench.bench``)."""
    limit_threads(options.threads)
    set_threads(1)  # the main rows' labrys; every core in the child's (labrys.bench.threads)
    with fast_math_for(options.fast_math):  # the fastest safe setting by default: it never assumes no NaN/Inf
        return [run_workload(w, options, sink) for w in workloads]


def limit_threads(threads: int) -> None:
    """Ask the peers for ``threads`` threads (labrys uses one: ``run``).  PyTorch reads
    $LABRYS_BENCH_THREADS (frameworks.py); XLA takes flags before JAX is imported."""
    if threads <= 0:
        return
    os.environ["LABRYS_BENCH_THREADS"] = str(threads)
    if threads == 1 and "jax" not in sys.modules and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def run_workload(workload: Workload, options: Options, sink: list[Result] | None = None) -> Result:
    data = data_folder(options.data)
    try:
        instance = workload.make(data, "quick" if options.quick else "full")
        smaller = ("probe", "probe") if options.quick else ("probe", "quick")
        probes = (workload.make(data, smaller[0]), workload.make(data, smaller[1]))
    except Unavailable as exc:
        options.progress(f"{workload.name}: skipped: {exc}")
        result = Result(workload, None, [], skipped=str(exc))
        if sink is not None:
            sink.append(result)
        return result
    options.progress(f"{workload.name} ({instance.size})")
    result = Result(workload, instance, [])
    if sink is not None:
        sink.append(result)
    for name, factory in instance.peers.items():
        if options.peers is None or name in options.peers:
            options.current = f"{name} on {workload.name}"
            result.rows.append(_peer(name, factory, options))
    if options.labrys:
        _labrys(instance, probes, options, result.rows)
    options.current = ""
    result.references = _compare(result.rows)
    result.finished = True
    return result


def stop_here(results: list[Result], workloads: list[Workload], options: Options, why: str) -> None:
    """Complete the tables of a run stopped at its time limit: every row not measured, and
    every workload not started, says ``why``."""
    for result in results:
        if result.instance is None or result.finished:
            continue
        have = {row.name for row in result.rows}
        result.rows += [Row(name, labrys=name.startswith("labrys"), status=why)
                        for name in expected_rows(result.instance, options) if name not in have]
        for row in result.rows:  # a peer's row joins when it is done; a labrys row before its gradient is timed
            if not row.status and row.labrys and row.gradient is None:
                row.status = why
    started = {r.workload.name for r in results}
    results += [Result(w, None, [], skipped=why) for w in workloads if w.name not in started]


def expected_rows(instance: Instance, options: Options) -> list[str]:
    """The names of the rows a workload's table will have (for a run stopped before it finished)."""
    names = [name for name in instance.peers if options.peers is None or name in options.peers]
    if options.labrys:
        names += [f"labrys {d} ({b})" for b in backends(options) for d, _ in derivations(options)]
    return names


def _peer(name: str, factory: Callable[[], Impl], options: Options) -> Row:
    row = Row(name)
    start = time.perf_counter()
    try:
        impl = factory()
    except ImportError as exc:
        row.status = "not installed"
        options.progress(f"  {name}: not installed ({exc})")
        return row
    except Exception as exc:  # a broken peer is reported, never fatal
        row.status = f"error: {_message(exc)}"
        return row
    row.compile = time.perf_counter() - start
    if _late(row, options):
        return row
    objective = _time(row, "objective", impl.objective, options)
    if objective is not None and impl.gradient is not None:
        if objective.runs == 0:  # the objective alone used up the budget: its gradient costs more
            row.note = "; ".join(filter(None, [row.note, "gradient not run: the objective alone exceeded the budget"]))
        else:
            _time(row, "gradient", impl.gradient, options)
    return row


def backends(options: Options) -> list[str]:
    chosen = options.backends or ["compiled"]
    return labrys_side.available_backends() if chosen == ["all"] else chosen


def derivations(options: Options) -> list[tuple[str, Callable[[Any], Any]]]:
    every = labrys_side.reverse_derivations()
    if options.derivations == ["all"]:
        return every
    chosen = options.derivations or list(labrys_side.FINAL)
    known = {name for name, _ in every}
    unknown = [d for d in options.derivations or () if d not in known]  # the defaults: those registered
    if unknown:
        raise LabrysError(f"no reverse derivation {', '.join(unknown)}; known: {', '.join(sorted(known))} (or all)")
    return [(d, pick) for d, pick in every if d in chosen]


def _labrys(instance: Instance, probes: tuple[Instance, Instance] | None, options: Options, rows: list[Row]) -> None:
    """One row per (derivation, backend), added to ``rows``; a backend's objective is timed
    once, for all its rows."""
    for backend in backends(options):
        shared = Row(f"labrys ({backend})", labrys=True, backend=backend)
        start = time.perf_counter()
        try:
            module = labrys_side.load_module(instance.labrys, backend)
        except Exception as exc:  # an unknown backend, or one that cannot take this program
            shared.status = f"error: {_message(exc)}"
            rows.append(shared)
            continue
        shared.compile = time.perf_counter() - start
        options.current = f"labrys's objective ({backend})"
        _labrys_cell(shared, "objective", partial(labrys_side.objective, module), instance, probes, options)
        for derivation, pick in derivations(options):
            row = Row(f"labrys {derivation} ({backend})", labrys=True, backend=backend, objective=shared.objective,
                      compile=0.0, setup=shared.compile, status=shared.status, note=shared.note,
                      values=[shared.values[0], None])
            rows.append(row)
            if row.status:
                continue
            options.current = f"the gradient of {row.name}"
            try:
                gradient = partial(_gradient_of, module, derivation, pick)
                _labrys_cell(row, "gradient", gradient, instance, probes, options)
            except LabrysError as exc:  # deriving failed: this algorithm does not take the program
                row.status = f"does not accept the program: {_message(exc)}"
                options.progress(f"  {row.name}: {row.status}")


def _late(row: Row, options: Options) -> bool:
    """Past the run's deadline: mark the row "not run" (Note [Bounded time])."""
    if options.deadline is None or time.monotonic() < options.deadline:
        return False
    row.status = row.status or "not run: the run's time limit (--time-limit) was reached before this cell"
    return True


def _labrys_cell(row: Row, what: str, prepare: Callable[[Any], Callable[[], Any]], instance: Instance,
                 probes: tuple[Instance, Instance] | None, options: Options) -> None:
    """Prepare (load, derive: compile time), estimate the call from the probes, then time it
    unless the estimate exceeds the budget (the cell then shows the estimate)."""
    if _late(row, options):
        return
    options.progress(f"  {row.name} {what}: deriving, compiling, timing …")
    start = time.perf_counter()
    fn = prepare(instance.labrys)
    row.compile = (row.compile or 0.0) + time.perf_counter() - start
    if probes is not None:
        try:
            estimate, overhead = _estimate(prepare, instance, probes, options.budget)
        except Exception as exc:
            row.status = f"error in the {what} (at a smaller size): {_message(exc)}"
            return
        row.compile += overhead
        if estimate > options.budget:
            setattr(row, what, Timing(estimate, 0, 0.0, estimated=True))
            sizes = " and ".join(dict.fromkeys(f"{p.work:g}" for p in probes)) + f" {instance.work_unit}"
            why = f"{what} not run: about {seconds(estimate)} a call, estimated from runs on {sizes} " \
                  f"(budget {options.budget:g} s)"
            row.note = "; ".join(filter(None, [row.note, why]))
            options.progress(f"  {row.name} {what}: not run, estimated {seconds(estimate)}")
            return
    _time(row, what, fn, options)


def _estimate(prepare: Callable[[Any], Callable[[], Any]], instance: Instance, probes: tuple[Instance, Instance],
              budget: float) -> tuple[float, float]:
    """(seconds a full-size call will take, one-off overhead seen): the call at the small
    probe size, scaled by work; if that says "too slow", a line through both probe sizes
    (fixed costs weigh too much at the smallest size)."""
    small, medium = probes
    seconds, overhead = probe_call(prepare(small.labrys), budget)
    estimate = seconds * instance.work / small.work
    if estimate > budget and small.work < medium.work < instance.work:
        fn = prepare(medium.labrys)
        start = time.perf_counter()
        fn()
        more = time.perf_counter() - start
        slope = max(0.0, (more - seconds) / (medium.work - small.work))
        estimate = more + slope * (instance.work - medium.work)
    return estimate, overhead


def _time(row: Row, what: str, fn: Callable[[], Any], options: Options) -> Timing | None:
    """Time ``fn`` into ``row`` (objective or gradient); None, with the row's status set, if it fails."""
    try:
        timing, value = time_calls(fn, options.repeat, options.budget)
    except Exception as exc:  # e.g. a LabrysError at run time, or a peer's numerical failure
        row.status = f"error in the {what}: {_message(exc)}"
        options.progress(f"  {row.name} {what}: {row.status}")
        return None
    setattr(row, what, timing)
    row.values[0 if what == "objective" else 1] = value
    row.compile = (row.compile or 0.0) + timing.overhead
    if timing.note:
        row.note = "; ".join(filter(None, [row.note, f"{what}: {timing.note}"]))
    options.progress(f"  {row.name} {what}: {seconds(timing.median)} (first call {seconds(timing.first)})")
    return timing


def _compare(rows: list[Row]) -> tuple[str, str]:
    """Compare every row's objective and gradient with the first row that has one
    (rows come peers first: NumPy, JAX, PyTorch, autograd, then labrys)."""
    names = []
    for k in (0, 1):
        ref = next((r for r in rows if r.values[k] is not None and not r.status), None)
        names.append(ref.name if ref else "")
        if ref is None:
            continue
        ref.reference = True
        for r in rows:
            if r.values[k] is not None and not r.status:
                d = relative_difference(r.values[k], ref.values[k])
                r.diff = d if r.diff is None else max(r.diff, d)
    return names[0], names[1]


def _message(exc: BaseException) -> str:
    if isinstance(exc, LabrysError):
        return exc.message.splitlines()[0]
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _gradient_of(module, derivation: str, pick, p):
    return labrys_side.gradient(module, p, derivation, pick)
