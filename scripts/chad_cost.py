"""Where CHAD's cost goes (docs/chad.md, "Cost"): the op-count meter on the cost
sources B1–B6 of Vákár & Smeding's CHAD as the project's analysis names them,
``chadrev`` as the translation makes it (raw, ``LABRYS_CHAD_RAW=1``) against
after App. B's simplifier, each divided by the primal's operations.

    B1 context plumbing: a chain of L lets, each using the parameter     (size: L)
    B2 map whose body captures an array (one-hot context cotangents)      (size: n)
    B3 gather, build n (\\i -> index (n-1-i) xs)                           (size: n)
    B4 a closure called once per element (a copower of n entries)        (size: n)
    B5 closures nested d deep, each calling the next                     (size: d)
    B6 a fold of n steps                                                 (size: n)

    python scripts/chad_cost.py                          # the table
    python scripts/chad_cost.py --plot docs/img/chad-cost.png
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import labrys
from labrys import METER

SIZES = (100, 1000, 10000)


def chain(length: int) -> str:
    body = "".join(f"(let (x{k + 1} (mul x{k} (add x0 1.0)))\n" for k in range(length))
    return f"(def f Float (x0 : Float)\n{body}x{length}" + ")" * length + ")\n"


def nested(depth: int) -> str:
    e = "(mul x y1)"
    for k in range(1, depth + 1):
        e = f"(let (h{k} (lam (y{k} : Float) {e})) (h{k} (sin y{k + 1})))"
    return f"(def f Float (x : Float) {e.replace(f'y{depth + 1}', 'x')})\n"


LOOPS = """
(def b2_map Float ((a : Vec Float) (v : Vec Float))
  (sum (map (lam (x : Float) (mul x (index 0 a))) v)))
(def b3_gather Float (xs : Vec Float)
  (sum (build (size xs) (lam (i : Integer) (index (sub (sub (size xs) i) 1) xs)))))
(def b4_closure Float ((a : Float) (v : Vec Float))
  (let (f (lam (x : Float) (mul a (sin x)))) (sum (map (lam (x : Float) (f x)) v))))
(def b6_fold Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float) (add (get$1$2 acc_x) (mul (get$2$2 acc_x) (get$2$2 acc_x)))) 0.0 v))
"""


def _ops(fn, *args) -> int:
    before = METER.ops
    fn(*args)
    return max(METER.ops - before, 1)


def _derivative_ops(text: str, name: str, args: tuple, dt, raw: bool) -> int:
    os.environ["LABRYS_CHAD_RAW"] = "1" if raw else "0"
    try:
        m = labrys.load(text, backend="interp")
        back = m.derive("chadrev", name)
        return _ops(back, args if len(args) > 1 else args[0], dt)
    finally:
        os.environ.pop("LABRYS_CHAD_RAW", None)


def _primal_ops(text: str, name: str, args: tuple) -> int:
    m = labrys.load(text, backend="interp")
    return _ops(getattr(m, name), *args)


def curve(source: str) -> tuple[str, list[int], list[float], list[float]]:
    """(what the size is, sizes, raw ratios, simplified ratios)."""
    rng = np.random.default_rng(0)
    if source == "B1":
        sizes, what = [100, 300, 1000], "lets L"
        cases = [(chain(n), "f", (0.5,), 1.0) for n in sizes]
    elif source == "B5":
        sizes, what = [1, 2, 3, 4, 6], "nesting depth d"
        cases = [(nested(d), "f", (0.5,), 1.0) for d in sizes]
    else:
        sizes, what = list(SIZES), "n"
        make = {"B2": ("b2_map", lambda n: (rng.normal(size=n), rng.normal(size=n))),
                "B3": ("b3_gather", lambda n: (rng.normal(size=n),)),
                "B4": ("b4_closure", lambda n: (0.7, rng.normal(size=n))),
                "B6": ("b6_fold", lambda n: (rng.normal(size=n),))}[source]
        cases = [(LOOPS, make[0], make[1](n), 1.0) for n in sizes]
    raw, simple = [], []
    for text, name, args, dt in cases:
        p = _primal_ops(text, name, args)
        raw.append(_derivative_ops(text, name, args, dt, True) / p)
        simple.append(_derivative_ops(text, name, args, dt, False) / p)
    return what, sizes, raw, simple


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plot", metavar="PNG")
    parser.add_argument("--sources", default="B1,B2,B3,B4,B5,B6")
    args = parser.parse_args()
    results = {}
    for source in args.sources.split(","):
        what, sizes, raw, simple = results[source] = curve(source)
        print(f"{source} ({what}): " + "  ".join(f"{n}: raw {r:.1f} simplified {s:.1f}"
                                                  for n, r, s in zip(sizes, raw, simple)), flush=True)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, 3, figsize=(11, 6.5))
        for ax, (source, (what, sizes, raw, simple)) in zip(axes.flat, results.items()):
            ax.semilogx(sizes, raw, marker="o", linestyle="--", label="chadrev raw")
            ax.semilogx(sizes, simple, marker="s", label="chadrev simplified")
            ax.set_title(source)
            ax.set_xlabel(what)
            ax.set_ylabel("derivative ops / primal ops")
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
        fig.suptitle("CHAD's cost sources: chadrev against the primal (op-count meter)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
