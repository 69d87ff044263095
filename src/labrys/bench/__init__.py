"""``labrys bench``: labrys beside JAX, PyTorch, autograd and NumPy on the
benchmark workloads, in one process (plus one child for the frameworks'
default threads); writes ``results.md``, ``summary.md`` and charts.

The harness lives here; the workloads and the peers' programs are the
``benchmarks/`` folder of the clone (:mod:`labrys.bench.suite`).  The peers
are the optional extra ``pip install -e '.[bench]'``; one that is missing is
reported as "not installed".

Note [The run's time limit]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
``time_limit`` bounds the whole run.  Cells stop starting at ``MAIN_SHARE``
of it (Note [Bounded time] in labrys.bench.run), the default-threads child
gets what is left, and if a single call is still running at the limit (an
estimate from small sizes can be wrong), a watchdog thread completes the
tables (rows not measured say why), writes the files and ends the process
with ``os._exit``: nothing is raised into the running call, so no foreign
code sees an exception (Note [No asynchronous interruption]).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from .report import charts, markdown, summary_markdown
from .run import Options, Result, backends, derivations, run, stop_here
from .suite import find_suite, load_suite, select
from .summary import update_readme
from .threads import default_threads, stop_child

__all__ = ["Options", "Result", "bench", "find_suite", "update_readme"]
DEFAULT_OUT = "labrys-bench"
MAIN_SHARE = 0.8  # of the time limit, for starting cells of the single-threaded run


def bench(names: list[str], options: Options, out: str | Path | None = None, suite: str | Path | None = None,
          command: str = "labrys bench", time_limit: float | None = None, threads_rows: bool = True,
          written: Callable[[list[Path]], None] = lambda paths: None) -> tuple[list[Result], list[Path]]:
    """Run the named workloads (all when empty) and write the results into ``out``
    (default: ``labrys-bench/`` in the current folder; the committed results are
    ``benchmarks/results``, refreshed only when named); the results and the files written
    (also given to ``written``, which is all a run stopped at its time limit returns,
    Note [The run's time limit]).  ``threads_rows`` adds the frameworks' default-threads
    rows (labrys.bench.threads)."""
    start = time.monotonic()
    folder = find_suite(suite)
    workloads = select(load_suite(folder), names)
    if options.labrys:  # an unknown --deriv is an error now, not after the first workload's peers
        backends(options), derivations(options)
    out = Path(out) if out else Path.cwd() / DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    lock, state = threading.Lock(), {"done": False}

    def write(cut: str = "") -> list[Path]:
        table, short = out / "results.md", out / "summary.md"
        table.write_text(markdown(results, options, command, cut) + "\n", encoding="utf-8")
        short.write_text(summary_markdown(results, options, command, cut), encoding="utf-8")
        paths = [table, short] + charts(results, out)
        written(paths)
        return paths

    def stop() -> None:
        with lock:
            if state["done"]:
                return
            state["done"] = True
        stop_child()
        why = f"not run: the run's time limit ({time_limit:g} s) was reached"
        stop_here(results, workloads, options, why)
        write(f"The run reached its time limit ({time_limit:g} s) while timing {options.current or 'a cell'} "
              f"and stopped there: rows not measured say so.")
        os._exit(0)

    timer = None
    if time_limit is not None:
        options.deadline = start + MAIN_SHARE * time_limit
        timer = threading.Timer(time_limit, stop)
        timer.daemon = True
        timer.start()
    run(workloads, options, results)
    if threads_rows:
        left = None if time_limit is None else max(1.0, start + time_limit - time.monotonic())
        default_threads(results, options, folder, left)
    with lock:
        while state["done"]:  # the watchdog is writing the files and will end the process
            lock.release()
            time.sleep(60)
            lock.acquire()
        state["done"] = True
    if timer is not None:
        timer.cancel()
    return results, write()
