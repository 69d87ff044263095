"""The script a user would write: the gradient of ADBench's GMM objective by
``labrys.grad`` against ``jax.jit(jax.grad)``, in one process, warm, median.

    python scripts/gmm_vs_jax.py [DATAFILE] [--repeat 15] [--jax-threads 1|0] [--threads N] [--fast-math]

DATAFILE defaults to the clone's ``data/adbench/gmm/1k/gmm_d10_K25.txt``.  The
gradient is with respect to (alphas, means, icf), as ADBench asks.  Each row is
the median wall and CPU time (``time.process_time``, all threads of the
process) of ``--repeat`` calls after two warm-up calls; the last line is the
largest difference between the two gradients.  XLA fixes its threads when JAX
is imported: ``--jax-threads 1`` (the default) sets ``XLA_FLAGS`` first;
``--jax-threads 0`` leaves JAX its default thread pool.  ``--threads N`` is
``labrys.grad(..., threads=N)`` (1: serial; default every core; rows for
several counts with ``--threads 1,2``).  ``--fast-math`` adds rows with
``labrys.grad(..., fast_math=True)`` (reassociation allowed: vectorised sums).
Needs the ``bench`` extra (``pip install -e '.[bench]'``).  Not a test:
nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "data" / "adbench" / "gmm" / "1k" / "gmm_d10_K25.txt"


def timed(f, args: tuple, repeat: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of f(*args)."""
    f(*args)
    f(*args)
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        f(*args)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--jax-threads", type=int, default=1, help="1: one XLA thread; 0: JAX's default")
    ap.add_argument("--threads", default="", help="labrys's threads, e.g. 1 or 1,2 (default: every core)")
    ap.add_argument("--fast-math", action="store_true", help="also labrys.grad(..., fast_math=True)")
    opts = ap.parse_args()
    if opts.jax_threads == 1:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

    import labrys
    from labrys.adbench import read_gmm

    g = read_gmm(opts.data)
    m = labrys.load(str(resources.files("labrys.adbench").joinpath("gmm.ks")), backend="compiled")
    args = (g.x, g.alphas, g.means, g.icf, (g.gamma, g.m))
    counts = [int(n) for n in opts.threads.split(",") if n] or [None]
    grads = {(n, fm): labrys.grad(m.gmm_objective, argnums=(1, 2, 3), threads=n, fast_math=fm or None)
             for n in counts for fm in ((False, True) if opts.fast_math else (False,))}
    rows = [("labrys objective", m.gmm_objective, args)]
    rows += [(f"labrys.grad, {'default' if n is None else n} thread{'s' if n != 1 else ''}"
              f"{', fast math' if fm else ''}", g_, args) for (n, fm), g_ in grads.items()]

    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, str(ROOT))
    from benchmarks.gmm import objective

    jgrad = jax.jit(jax.grad(lambda a, mu, icf, x: objective(jnp, a, mu, icf, x, g.gamma, g.m), argnums=(0, 1, 2)))
    jargs = tuple(jnp.asarray(v) for v in (g.alphas, g.means, g.icf, g.x))
    rows.append((f"jax.jit(jax.grad), {'1 thread' if opts.jax_threads == 1 else 'default threads'}",
                 lambda *a: jax.block_until_ready(jgrad(*a)), jargs))
    k, d = g.means.shape
    print(f"{Path(opts.data).name}: d = {d}, K = {k}, n = {len(g.x)}; median of {opts.repeat}")
    for name, f, a in rows:
        wall, cpu = timed(f, a, opts.repeat)
        print(f"{name:36s} wall {wall:8.2f} ms   cpu {cpu:8.2f} ms")
    theirs = jgrad(*jargs)
    for (n, fm), g_ in grads.items():
        print(f"largest difference of the gradients ({'default' if n is None else n} threads"
              f"{', fast math' if fm else ''}):",
              max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(g_(*args), theirs)))


if __name__ == "__main__":
    main()
