"""The long fuzz run: mutants of examples/*.ks and random well-typed programs
through parse -> check -> run on every backend -> every registered derivation,
each input in its own process (a hang is a finding), for as long as asked.
Every bug is shrunk to a minimal `.ks` file in the output folder.

    python tests/fuzz/run.py --seconds 3600 --out fuzz-findings
    python tests/fuzz/run.py --seconds 300 --backends interp,python --seed 7

The suite's bounded run is tests/fuzz/test_fuzz_pipeline.py.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

import harness  # noqa: E402


def random_programs(seed: int):
    """Random well-typed programs from tests/strategies.py, drawn with a seed."""
    from hypothesis import HealthCheck, given, settings

    from strategies import text_programs

    found: list[str] = []

    @settings(max_examples=50, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(text_programs())
    def draw(prog):
        found.append(prog[0])
    draw()
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", default="interp,python,compiled")
    ap.add_argument("--timeout", type=float, default=30.0, help="CPU seconds one input may take (default 30)")
    ap.add_argument("--out", default="fuzz-findings", help="folder for shrunk bugs (default fuzz-findings)")
    args = ap.parse_args()
    backends = tuple(args.backends.split(","))
    # a compile cache of the run's own: the cache's lock serialises compiles across processes
    # (Note [Compile cache]), and a child waiting minutes for another program's compile on a
    # loaded machine neither runs nor waits for a CPU: the hang backstop called it stalled
    os.environ.setdefault("LABRYS_CACHE_DIR", str(Path(args.out).resolve() / "compile-cache"))
    rnd = random.Random(args.seed)
    out = Path(args.out)
    seen: dict[tuple[str, str], Path] = {}
    counts: dict[str, int] = {}
    end = time.monotonic() + args.seconds
    print(f"fuzz run: seed {args.seed}, backends {','.join(backends)} (again: --seed {args.seed})", flush=True)

    def inputs():  # rounds of one mutant of every example and corpus file and 50 random programs, mixed
        while True:
            batch = [m for path in harness.EXAMPLES + harness.CORPUS
                     for m in harness.mutants(path.read_text(encoding="utf-8"), rnd, 1)]
            batch += random_programs(rnd.randrange(1 << 30))
            rnd.shuffle(batch)
            yield from batch

    def runner(text: str) -> harness.Outcome:
        return harness.run_isolated(text, timeout=args.timeout, backends=backends)

    for text in inputs():
        if time.monotonic() > end:
            break
        o = runner(text)
        counts[o.kind] = counts.get(o.kind, 0) + 1
        if sum(counts.values()) % 10 == 0:
            print(f"... {sum(counts.values())} inputs ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})",
                  flush=True)
        if o.is_bug and o.signature() not in seen:
            small = harness.shrink(text, harness.same_bug(o, runner), budget=150)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"bug{len(seen) + 1}.ks"
            path.write_text(f"; {o.kind} at {o.stage}: {o.detail[:200]}\n{small}", encoding="utf-8")
            seen[o.signature()] = path
            print(f"{path}: {o.kind} at {o.stage}: {o.detail[:200]}", flush=True)
    print(f"inputs: {sum(counts.values())} ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); "
          f"distinct bugs: {len(seen)}")
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())
