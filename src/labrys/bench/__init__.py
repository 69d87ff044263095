"""``labrys bench``: labrys beside JAX, PyTorch, autograd and NumPy on the
workloads of issue 6, in one process; writes ``results.md`` and charts.

The harness lives here; the workloads and the peers' programs are the
``benchmarks/`` folder of the clone (:mod:`labrys.bench.suite`).  The peers
are the optional extra ``pip install -e '.[bench]'``; one that is missing is
reported as "not installed".
"""
from __future__ import annotations

from pathlib import Path

from .report import charts, markdown
from .run import Options, Result, run
from .suite import find_suite, load_suite, select

__all__ = ["Options", "Result", "bench"]
DEFAULT_OUT = "labrys-bench"


def bench(names: list[str], options: Options, out: str | Path | None = None, suite: str | Path | None = None,
          command: str = "labrys bench") -> tuple[list[Result], list[Path]]:
    """Run the named workloads (all when empty) and write the results into ``out``
    (default: ``labrys-bench/`` in the current folder; the committed results are
    ``benchmarks/results``, refreshed only when named); the results and the files written."""
    folder = find_suite(suite)
    workloads = select(load_suite(folder), names)
    results = run(workloads, options)
    out = Path(out) if out else Path.cwd() / DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    table = out / "results.md"
    table.write_text(markdown(results, options, command) + "\n", encoding="utf-8")
    return results, [table] + charts(results, out)
