"""Split reverse mode's two styles (Note [Two styles] in ad/split.py): Fig. 24's
bindings and Fig. 25's continuations (ad/bog_cps.py, with the figure's bugs fixed:
the if's σ bound once as a join point, Σ before σ in build).  They must agree
with each other, with finite differences and with fwd."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrys
from labrys.cli.main import main
from labrys.errors import LabrysError
from labrys.ir import nodes as ir
from labrys.types.tangent import is_constant_tangent, tangent_type
from labrys.values import to_python
from labrys.verify import random_value
from strategies import NONSMOOTH, programs
from test_knossos_ad import _check_random_program

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "examples").glob("*.ks")) + sorted((ROOT / "tests" / "corpus").glob("*/*.ks"))
STYLE = "LABRYS_SPLIT_STYLE"

F = """
(def pick Float ((x : Float) (y : Float)) (if (gt x y) (mul x x) (exp y)))
(def poly Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (mul (add x 1.0) (poly x (sub n 1)))))
(def clipped Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer) (let (x (index i v)) (if (gt x 0.0) (mul x x) (sin x))))))
"""


def nested_ifs(depth: int) -> str:
    body = "x"
    for k in range(depth):   # each if nested in the previous one's condition-free branch
        body = f"(if (gt x {float(k)}) (mul {body} y) (add x y))"
    return f"(def f Float ((x : Float) (y : Float)) {body})"


def _flat(v) -> np.ndarray:
    if isinstance(v, (tuple, list)):
        parts = [_flat(x) for x in v]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.ravel(np.asarray(v, dtype=float))


def test_show_stages_names_the_style(tmp_path, capsys, monkeypatch):
    path = tmp_path / "f.ks"
    path.write_text(F)
    assert main(["show", str(path), "pick", "--deriv", "sufrev", "--stages"]) == 0
    assert "BOG reverse pass [sufrevpass f] (Fig. 24, bindings style)" in capsys.readouterr().out
    monkeypatch.setenv(STYLE, "continuations")
    assert main(["show", str(path), "pick", "--deriv", "sufrev", "--stages"]) == 0
    out = capsys.readouterr().out
    assert "BOG reverse pass [sufrevpass f] (Fig. 25, continuation style)" in out
    assert "(join$" in out and "(lam (dv$" in out   # σ bound once, as a join point


def test_styles_by_strategy_agree_by_hand():
    m = labrys.load(F, backend="interp")
    for style in ("bindings", "continuations"):
        # pick: x > y gives x², d/dx = 2x; else e^y, d/dy = e^y
        assert m.derive("sufrev", "pick", strategy=style)((2.0, 1.0), 1.0) == pytest.approx((4.0, 0.0))
        assert m.derive("sufrev", "pick", strategy=style)((0.0, 1.0), 1.0) == pytest.approx((0.0, np.e))
        assert m.derive("sufrev", "poly", strategy=style)((0.5, 3), 1.0)[0] == pytest.approx(3 * 1.5 ** 2)
        g = m.derive("sufrev", "clipped", strategy=style)(np.array([-1.0, 2.0]), 1.0)
        np.testing.assert_allclose(g, [np.cos(-1.0), 4.0])
    cps = m.derive("sufrevpass", "pick", strategy="continuations").source
    assert cps.count("(join$") == 3   # σ bound once, one jump per branch


def test_join_points_keep_nested_ifs_linear():
    sizes = {}
    for depth in (8, 16):
        m = labrys.load(nested_ifs(depth), backend="interp")
        sizes[depth] = len(m.derive("sufrevpass", "f", strategy="continuations").source)
        g = m.derive("sufrev", "f", strategy="continuations")((0.5, 2.0), 1.0)
        assert g == pytest.approx(m.derive("rev", "f")((0.5, 2.0), 1.0))
    assert sizes[16] < 2.5 * sizes[8], sizes   # copying σ into both branches would square it


def test_a_bad_style_is_an_error(monkeypatch):
    monkeypatch.setenv(STYLE, "cps")
    m = labrys.load(F, backend="interp")
    with pytest.raises(LabrysError, match="LABRYS_SPLIT_STYLE='cps': choose one of bindings, continuations"):
        m.derive("sufrev", "pick")
    with pytest.raises(LabrysError, match="unknown strategy"):
        m.derive("sufrev", "pick", strategy="cps")


def _gradients(path: Path, style: str, monkeypatch) -> dict:
    """[sufrev f] of every differentiable function of the program, at two random points,
    every derived function generated in ``style``."""
    monkeypatch.setenv(STYLE, style)
    try:
        m = labrys.load(path, backend="interp")
    except LabrysError:
        return {}
    out = {}
    for d in m.program.decls:
        if not isinstance(d, ir.Def) or is_constant_tangent(d.arg_type) or is_constant_tangent(d.ret):
            continue
        sig = m.checked.functions.resolve(d.name, d.arg_type)
        rng = np.random.default_rng(1)
        try:
            back = m.derive("sufrev", sig.name if len(m.function(sig.name).sigs) == 1 else f"[{sig.name} "
                            f"{sig.arg}]")
        except LabrysError as err:
            out[str(d.name)] = ("refused", err.message)
            continue
        values = []
        for _ in range(2):
            x, dt = random_value(sig.arg, rng), random_value(tangent_type(sig.ret), rng)
            try:
                values.append(_flat(to_python(back(x, dt))))
            except LabrysError as err:
                values.append(("error", err.message.split(":")[0]))
        out[str(d.name)] = values
    return out


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_the_styles_agree_on_examples_and_corpus(path, monkeypatch):
    a = _gradients(path, "bindings", monkeypatch)
    b = _gradients(path, "continuations", monkeypatch)
    assert a.keys() == b.keys()
    for name, got in a.items():
        if isinstance(got, tuple):
            assert b[name] == got, name   # refused alike
            continue
        for x, y in zip(got, b[name]):
            if isinstance(x, tuple):
                assert x == y, name
            else:
                np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-300, equal_nan=True, err_msg=name)


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 15)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(gen=programs({"core", "vectors", "recursion"}, exclude=NONSMOOTH | {"map"}, result="float"),
       data=st.data())
def test_continuation_style_random_programs(gen, data, monkeypatch):
    """The continuation style vs finite differences and fwd on random first-order programs."""
    monkeypatch.setenv(STYLE, "continuations")
    _check_random_program(gen, data, revs=("sufrev",))
