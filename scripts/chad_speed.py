"""Compiled ``chadrev`` against compiled Knossos ``rev`` (docs/chad.md, "Measured"): CPU time
of one call, median of 7 after a warm-up, one process, one thread, on ADBench GMM (d10 K25,
d64 K10), LSTM (l2 c1024) and Table 1's dot (n = 10⁴) and sum_mat_vec (100 × 100).

    python scripts/chad_speed.py [gmm_d10_K25 gmm_d64_K10 lstm dot sum_mat_vec]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

import labrys
from labrys.adbench import program, read_gmm, read_lstm

ROOT = Path(__file__).resolve().parent.parent


def cpu(f, *args, reps: int = 7) -> float:
    f(*args)
    times = []
    for _ in range(reps):
        t = time.process_time()
        f(*args)
        times.append(time.process_time() - t)
    return statistics.median(times)


def row(name: str, m, fn: str, args: tuple) -> None:
    objective = cpu(getattr(m, fn), *args)
    out = {d: cpu(m.derive(d, fn), args if len(args) > 1 else args[0], 1.0) for d in ("rev", "chadrev")}
    print(f"{name:14} objective {objective * 1e3:9.3f} ms   rev {out['rev'] * 1e3:9.3f} ms   "
          f"chadrev {out['chadrev'] * 1e3:9.3f} ms   chadrev / rev {out['chadrev'] / out['rev']:6.2f}", flush=True)


def main(which: list[str]) -> None:
    labrys.set_threads(1)
    for name in which:
        if name.startswith("gmm"):
            data = read_gmm(ROOT / "data/adbench/gmm/1k" / f"{name}.txt")
            row(name, program("gmm", "compiled"), "gmm_objective", data.arguments())
        elif name == "lstm":
            data = read_lstm(ROOT / "data/adbench/lstm/lstm_l2_c1024.txt")
            row("lstm_l2_c1024", program("lstm", "compiled"), "lstm_objective", data.arguments())
        else:
            m = labrys.load((ROOT / "benchmarks/table1.ks").read_text(), backend="compiled")
            if name == "dot":
                n = 10_000
                row("dot", m, "dot", (np.arange(1.0, n + 1), np.arange(3.0, 2 * n + 3, 2)))
            else:
                k = 100
                row("sum_mat_vec", m, "sum_mat_vec",
                    (list(np.arange(1.0, k * k + 1).reshape(k, k)), np.arange(3.0, 2 * k + 3, 2)))


if __name__ == "__main__":
    main(sys.argv[1:] or ["gmm_d10_K25", "gmm_d64_K10", "lstm", "dot", "sum_mat_vec"])
