"""``labrys demo``: the bundled program, its values, and (as AD lands) its derivatives."""
from __future__ import annotations

import sys

from ..ad import REGISTRY
from ..api import load
from ..transforms import grad
from ..values import format_value
from .show import highlight


def _rule(title: str) -> None:
    print(f"\n── {title} " + "─" * max(0, 68 - len(title)))


def run_demo(source: str, backend: str | None = None) -> int:
    module = load(source, name="demo.ks", backend=backend)
    _rule("the program (demo.ks)")
    sys.stdout.write(source)
    _rule("running main")
    module.main()
    sys.stdout.flush()
    _rule("calling functions from Python")
    print(f"module.f(1.5, 0.5)              = {format_value(module.f(1.5, 0.5))}")
    print(f"module.sqnorm([1.0, 2.0, 3.0])  = {format_value(module.sqnorm([1.0, 2.0, 3.0]))}")
    _rule("gradients (Knossos reverse mode, [rev f])")
    print(f"labrys.grad(module.f)(1.5, 0.5)        = {format_value(grad(module.f)(1.5, 0.5))}")
    print(f"labrys.grad(module.sqnorm)([1, 2, 3])  = {format_value(grad(module.sqnorm)([1.0, 2.0, 3.0]))}")
    print(f"labrys.grad(module.dot)([1, 2], [3, 4]) = {format_value(grad(module.dot)([1.0, 2.0], [3.0, 4.0]))}")
    _rule("the derivative program [rev sqnorm], generated and optimised")
    highlight(module.derive("rev", "sqnorm").source)
    # Compiling fifteen derivations of one scalar function took 34 s with a cold
    # cache, for calls of microseconds; unless a backend was asked for, this part runs on `python`.
    every = module if backend else load(source, name="demo.ks", backend="python")
    _rule(f"the same gradient by every reverse algorithm, on {every.backend.name} (labrys algorithms lists them)")
    for method in REGISTRY.names("reverse"):
        entry = REGISTRY.get(method)
        print(f"labrys.grad(module.f, method={method!r:12}) = {format_value(grad(every.f, method=method)(1.5, 0.5))}"
              f"   {entry.paper.short()}")
    _rule("Krawiec et al.'s monadic translation [delta sqnorm] (labrys show FILE sqnorm --deriv deltarev)")
    highlight(module.derive("delta", "sqnorm").source)
    _rule("f through Ellis et al.'s categorical combinators CL and back (labrys show FILE f --deriv CL)")
    cl = module.derive("CL", "f")
    print(next(s.text for s in module.derivations.derive("CL", cl.sig).stages if s.text))
    print(f"[CL f](1.5, 0.5) = {format_value(cl(1.5, 0.5))}   (f itself: {format_value(module.f(1.5, 0.5))})")
    print("\nNext: labrys show FILE FN --stages   (every stage of the AD pipeline)")
    return 0
