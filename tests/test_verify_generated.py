"""NaN never passes, on generated programs (issue 18: "programs not in the
repository with NaN-producing derivatives, hand-written and generated").

A random smooth program's entry f becomes ``g(x) = f(x) + sqrt(p − p)`` for a
Float parameter p: the same values wherever f is finite (sqrt 0 = 0), and a
derivative that is NaN at every point (∂ sqrt at 0 is ∞, times ∂(p − p) = 0).
Every forward- and reverse-like derivation of g must fail verify with the NaN
as the reason, and verify as a whole must fail (the CLI's exit code,
``passed``).  The hand-written cases are in tests/test_verify.py.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, given, settings

import labrys
from labrys.ir.types import FLOAT, show_type
from labrys.verify import passed, translations, verify
from strategies import NONSMOOTH, programs

SAME_TYPE = {d.name for d in translations()}  # CL, proc: programs of the same type, compared by value, not derivatives


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 4)), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(gen=programs({"core", "vectors"}, exclude=NONSMOOTH | {"map"}, result="float"))
def test_a_generated_program_with_a_nan_derivative_fails(gen):
    d = gen.entry_def
    floats = [p.name for p in d.params if p.type == FLOAT]
    assume(floats)
    params = " ".join(f"({p.name} : {show_type(p.type)})" for p in d.params)
    args = " ".join(p.name for p in d.params)
    p = floats[0]
    text = gen.text + f"\n(def nan_g Float ({params}) (add ({d.name} {args}) (sqrt (sub {p} {p}))))\n"
    rows = verify(labrys.load(text, backend="interp"), "nan_g", points=2, edges=False)
    assert not passed(rows)
    (row,) = rows
    derivations = {name: c for name, c in row.cells.items() if name != "agree" and name not in SAME_TYPE}
    assert derivations, row.cells
    for name, c in derivations.items():
        assert c.ok is False and ("nan" in c.detail or "nothing checked" in c.detail), (name, c.detail, text)
    assert any("nan" in c.detail for c in derivations.values()), text
