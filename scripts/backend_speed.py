"""Wall time of a few programs on each backend (numbers for docs/backends.md).

    python scripts/backend_speed.py [--repeat 5]

Median of --repeat calls after one warm-up call; compile time (code generation
and Numba) is reported separately: run twice with the same $LABRYS_CACHE_DIR
for cold and warm-cache compile times.  Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import labrys
from labrys.adbench import read_gmm

ROOT = Path(__file__).resolve().parents[1]
GMM = ROOT / "data" / "adbench" / "gmm" / "1k" / "gmm_d10_K25.txt"
VECTORS = """
(def sumsq Float (v : Vec Float) (sum (build (size v) (lam (i : Integer) (let (x (index i v)) (mul x x))))))
(def dot Float ((a : Vec Float) (b : Vec Float)) (sumbuild (size a) (lam (i : Integer) (mul (index i a) (index i b)))))
(def fold_product Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float) (mul (get$1$2 acc_x) (get$2$2 acc_x))) 1.0 v))
"""


def cases(n: int):
    rng = np.random.default_rng(0)
    v, w = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    g = read_gmm(GMM)
    gmm_src = (ROOT / "src" / "labrys" / "adbench" / "gmm.ks").read_text()
    return [
        (f"sumsq, n = {n}", VECTORS, "sumsq", None, (v,)),
        (f"[rev sumsq], n = {n}", VECTORS, "sumsq", "rev", (v, 1.0)),
        (f"dot (sumbuild), n = {n}", VECTORS, "dot", None, (v, w)),
        (f"[rev dot], n = {n}", VECTORS, "dot", "rev", ((v, w), 1.0)),
        (f"fold product, n = {n}", VECTORS, "fold_product", None, (v,)),
        ("GMM objective d10 K25 n1000", gmm_src, "gmm_objective", None, g.arguments()),
        ("[rev gmm_objective] d10 K25 n1000", gmm_src, "gmm_objective", "rev", (g.arguments(), 1.0)),
    ]


def run(src, fn, deriv, args, backend, repeat):
    start = time.perf_counter()
    m = labrys.load(src, backend=backend)
    f = m.derive(deriv, fn) if deriv else m.function(fn)
    f(*args)
    first = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times), m.compile_seconds, first


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--backends", default="interp,python,compiled")
    ap.add_argument("--only", help="run the programs whose name contains this")
    opts = ap.parse_args()
    os.environ.setdefault("LABRYS_CACHE_DIR", tempfile.mkdtemp(prefix="labrys-speed-"))
    backends = opts.backends.split(",")
    print(f"cache: {os.environ['LABRYS_CACHE_DIR']}")
    print("| program | " + " | ".join(backends) + " | compiled: compile time |")
    print("| --- |" + " --- |" * (len(backends) + 1))
    for name, src, fn, deriv, args in cases(opts.n):
        if opts.only and opts.only not in name:
            continue
        cells, compile_note = [], ""
        for b in backends:
            median, compile_s, _ = run(src, fn, deriv, args, b, opts.repeat)
            cells.append(f"{median * 1e3:.3g} ms")
            if b == "compiled":
                compile_note = f"{compile_s:.2f} s"
        print(f"| {name} | " + " | ".join(cells) + f" | {compile_note} |", flush=True)


if __name__ == "__main__":
    main()
