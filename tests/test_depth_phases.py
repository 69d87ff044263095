"""Deep programs, phase by phase (scripts/depth_phases.py, docs/reliability.md):
the python backend compiles its generated module in chunks (Note [Compiling in
chunks]) so CPython's compiler never holds the whole module, with run-time
error positions intact; every pass's node visits grow linearly with depth for
every shape; generated functions stay short (Note [Long functions]); and
every shape runs at 10^4 on ``python`` and ``compiled`` too (test_depth_costs
runs them all on ``interp``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import labrys
from labrys.backends import python as python_backend
from labrys.ir import traverse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import depth_curve  # noqa: E402


def test_source_chunks_cut_only_before_top_level_defs():
    text = "".join(f"def _f{i}(_arg):\n    def _lam{i}(x):\n        return x\n    return _arg\n\n"
                   for i in range(50))
    chunks = python_backend.source_chunks(text, limit=100)
    assert len(chunks) > 10
    assert "".join(c for _, c in chunks) == text
    for offset, chunk in chunks:
        assert chunk.startswith("def _f")  # never inside a function
        assert offset == text[:text.index(chunk.splitlines()[0] + "\n")].count("\n")
    assert python_backend.source_chunks("", limit=100) == []


def _arg_ifs_failing(n: int) -> str:
    """n ifs in argument position around an index out of range, on line 3."""
    body = "(add 1.0 (if (lt x 0.0) 0.0 " * n + "\n(index 5 v)" + "))" * n
    return f"(def f Float ((x : Float) (v : Vec Float))\n  {body})\n"


@pytest.fixture
def compiled_sizes(monkeypatch):
    """The length of every text the python backend hands to ``compile``, with
    chunks of about 4,000 characters."""
    sizes: list[int] = []
    real = compile

    def recording(text, *args, **kwargs):
        sizes.append(len(text))
        return real(text, *args, **kwargs)
    monkeypatch.setattr(python_backend, "compile", recording, raising=False)
    monkeypatch.setattr(python_backend, "CHUNK_CHARS", 4000)
    return sizes


def test_chunked_module_keeps_error_positions(compiled_sizes):
    text = _arg_ifs_failing(300)
    with pytest.raises(labrys.LabrysError) as on_python:
        labrys.load(text, backend="python").f(1.0, [1.0, 2.0])
    assert len(compiled_sizes) > 10  # really compiled in many pieces
    with pytest.raises(labrys.LabrysError) as on_interp:
        labrys.load(text, backend="interp").f(1.0, [1.0, 2.0])
    span = on_python.value.span
    assert (span.line, span.col) == (3, 1) == (on_interp.value.span.line, on_interp.value.span.col)
    assert "index" in on_python.value.message


def test_no_compile_call_holds_the_whole_module(compiled_sizes):
    """The memory of CPython's compile is that of its input: with the module cut
    into chunks, the largest input stays the same when the program grows 4x."""
    for n in (1000, 4000):
        text, arg, want = depth_curve.SHAPES["arg_ifs"](n)
        assert labrys.load(text, backend="python").f(arg) == want
    small_run, large_run = compiled_sizes[:len(compiled_sizes) // 5], compiled_sizes
    assert max(large_run) < 3 * 4000 and max(large_run) <= 1.5 * max(small_run)
    assert sum(large_run) > 100 * 4000  # the whole module went through compile, in pieces


def _children_calls(monkeypatch, shape: str, n: int, backend: str) -> int:
    calls = [0]
    real = traverse.children

    def counting(e):
        calls[0] += 1
        return real(e)
    monkeypatch.setattr(traverse, "children", counting)
    text, arg, want = depth_curve.SHAPES[shape](n)
    assert labrys.load(text, backend=backend).f(arg) == want
    monkeypatch.setattr(traverse, "children", real)
    return calls[0]


@pytest.mark.parametrize("shape", list(depth_curve.SHAPES))
def test_node_visits_are_linear_in_depth(monkeypatch, shape):
    """Every pass that walks the IR (checking, span filling, free-variable tables,
    code generation) visits each node a bounded number of times: 4x the depth,
    4x the visits (quadratic would be 16x)."""
    small = _children_calls(monkeypatch, shape, 300, "python")
    large = _children_calls(monkeypatch, shape, 1200, "python")
    assert small > 300 and large < 4.5 * small


@pytest.mark.parametrize("backend", ["python", "compiled"])
@pytest.mark.parametrize("shape", ["lets", "calls", "ifs", "tuples", "adds"])
def test_remaining_shapes_on_python_and_compiled(shape, backend):
    text, arg, want = depth_curve.SHAPES[shape](10_000)
    assert labrys.load(text, backend=backend).f(arg) == want


@pytest.fixture
def short_functions(monkeypatch):
    """Note [Long functions] with small bounds, so small programs cross them."""
    from labrys.backends import pysource
    monkeypatch.setattr(pysource, "MAX_LINES", 40)
    monkeypatch.setattr(pysource, "MAX_NESTING", 15)


def _longest_function(source: str) -> int:
    """Lines of the longest top-level function of a generated module."""
    starts = [i for i, line in enumerate(source.splitlines()) if line.startswith("def ")]
    ends = starts[1:] + [len(source.splitlines())]
    return max(b - a for a, b in zip(starts, ends))


@pytest.mark.parametrize("shape", list(depth_curve.SHAPES))
def test_every_generated_function_is_short(short_functions, shape):
    text, arg, want = depth_curve.SHAPES[shape](400)
    m = labrys.load(text, backend="python")
    assert m.f(arg) == want
    for name, source in m.backend.sources.items():
        assert _longest_function(source) < 150, name  # 40 lines, then one statement's worth


def test_outlined_calls_keep_error_positions(short_functions):
    text = ("(def inc Float (x : Float) (add x 1.0))\n"
            "(def f Float ((x : Float) (v : Vec Float))\n  "
            + "(inc " * 200 + "\n(index 5 v)" + ")" * 200 + ")\n")
    with pytest.raises(labrys.LabrysError) as info:
        labrys.load(text, backend="python").f(1.0, [1.0])
    assert (info.value.span.line, info.value.span.col) == (4, 1) and "index" in info.value.message
    ok = text.replace("(index 5 v)", "(index 0 v)")
    assert labrys.load(ok, backend="python").f(1.0, [1.0]) == 201.0
