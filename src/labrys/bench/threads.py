"""The multi-threaded rows of ``labrys bench``: the peers at their frameworks'
default threads, and labrys on every core, run
in one child process after the single-threaded run.

Note [Threads in a child process]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
XLA sizes its thread pool once, when JAX is imported, and the main run has
imported it on one thread (``run.limit_threads``); so the default-threads
rows cannot be timed in the same process.  One child (``python -m
labrys.bench.threads``) runs every selected workload with the threaded
peers (JAX, PyTorch) at their defaults and labrys's compiled rows with
``$LABRYS_THREADS`` set to the number of cores.  The child prints one JSON line per workload as it finishes; the
parent reads them into rows named ``… · default threads`` (values are not
sent back: the code is the single-threaded rows', which are compared).  The
child gets the time left before the run's deadline; past it, it is killed
whole (never interrupted from inside, Note [No asynchronous interruption]),
and workloads it had not finished get a row saying so.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .run import Options, Result, Row
from .timing import Timing

THREADED = ("JAX (jit)", "PyTorch")  # the peers with a thread pool of their own
SUFFIX = " · default threads"
_RUNNING: list[subprocess.Popen] = []  # the child, while it runs (stop_child)


def stop_child() -> None:
    """Kill the child process if one is running (the run reached its time limit)."""
    for child in _RUNNING:
        child.kill()


def cores() -> int:
    return os.cpu_count() or 1


def threads_note() -> str:
    """How labrys's rows are threaded, for the report."""
    return (f"labrys runs on 1 thread in the main rows and on {cores()} (all cores, `LABRYS_THREADS={cores()}`) "
            f"in the rows marked *· default threads*.")


def default_threads(results: list[Result], options: Options, suite: Path, timeout: float | None,
                    peers: tuple[str, ...] = THREADED) -> None:
    """Add the default-threads rows to ``results`` (in place), from one child process."""
    chosen = [p for p in peers if options.peers is None or p in options.peers]
    todo = [r for r in results if r.instance is not None]
    with_labrys = options.labrys  # on every core: parallel reverse sums (labrys.backends.numba_parallel)
    if not todo or not (chosen or with_labrys):
        return
    config = {"workloads": [r.workload.name for r in todo], "peers": chosen, "labrys": with_labrys,
              "repeat": options.repeat, "budget": options.budget, "quick": options.quick,
              "derivations": options.derivations, "data": str(options.data) if options.data else None,
              "suite": str(suite)}
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "LABRYS_BENCH_THREADS")}
    env["LABRYS_THREADS"] = str(cores())
    env["LABRYS_FAST_MATH"] = "1" if options.fast_math else "0"  # as the main rows' labrys (run.run)
    options.progress(f"default threads: {', '.join(chosen + ['labrys'] * with_labrys)} in a child process")
    child = subprocess.Popen([sys.executable, "-m", "labrys.bench.threads", json.dumps(config)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _RUNNING.append(child)
    try:
        out, err = child.communicate(timeout=timeout)
        stopped = ""
        if child.returncode:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {child.returncode}"
            stopped = f"not run: the default-threads process failed ({last})"
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        stopped = "not run: the run's time limit (--time-limit) was reached in the default-threads process"
    finally:
        _RUNNING.remove(child)
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            got[record["workload"]] = [_row(r) for r in record["rows"]]
    for result in todo:
        rows = got.get(result.workload.name)
        if rows is None:
            names = [p + SUFFIX for p in chosen] + ([f"labrys ({cores()} threads)"] if with_labrys else [])
            rows = [Row(n, status=stopped or "not run", threads="default") for n in names]
        result.rows += rows


def _row(record: dict[str, Any]) -> Row:
    timings = {k: Timing(**record[k]) if record[k] else None for k in ("objective", "gradient")}
    return Row(record["name"] + SUFFIX, labrys=record["labrys"], backend=record["backend"], compile=record["compile"],
               setup=record["setup"], status=record["status"], note=record["note"], threads=record["threads"],
               **timings)


def _child(config: dict[str, Any]) -> None:
    """The child's side: run the workloads, print a JSON line per workload."""
    from . import find_suite, load_suite, select
    from .run import run_workload

    workloads = select(load_suite(find_suite(config["suite"])), config["workloads"])
    options = Options(repeat=config["repeat"], budget=config["budget"], quick=config["quick"],
                      peers=config["peers"], derivations=config["derivations"], threads=0,
                      data=Path(config["data"]) if config["data"] else None, labrys=config["labrys"],
                      progress=lambda line: None)
    threads = f"{cores()} (default)"
    for workload in workloads:
        result = run_workload(workload, options)
        rows = []
        for row in result.rows:
            record = {f.name: getattr(row, f.name) for f in dataclasses.fields(Row)
                      if f.name not in ("values", "diff", "reference")}
            for k in ("objective", "gradient"):
                record[k] = dataclasses.asdict(record[k]) if record[k] else None
            record["threads"] = threads
            rows.append(record)
        print(json.dumps({"workload": workload.name, "rows": rows}), flush=True)


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]))
