"""Per-node costs of the passes every program goes through, pinned by counts, not time:
the reader's fast path reads exactly what the general reader reads, the checker visits
each node once and rebuilds nothing that is already typed, CHAD's simplifier checks once
per sweep and measures sizes only after its last sweep, and a stage's linear view is
printed only when shown."""
from __future__ import annotations

from pathlib import Path

import pytest

import labrys
from labrys.ad import chad_simplify
from labrys.errors import LabrysError, Source
from labrys.ir import nodes as ir
from labrys.ir.traverse import nodes, size
from labrys.syntax import sexpr
from labrys.types import checker

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted(ROOT.glob("examples/*.ks")) + sorted(ROOT.glob("tests/corpus/**/*.ks"))


def _general(text: str):
    """What the general reader makes of text (a trailing comment forces it; spans are unchanged)."""
    return sexpr.read(Source("<t>", text + "\n; end"))


def _lets(n: int) -> str:
    return "(def f Float (x0 : Float)\n" + "".join(f"(let (x{k + 1} (mul x{k} 1.0001))\n" for k in range(n)) \
        + f"x{n}" + ")" * n + ")\n"


def _without_comments(path: Path) -> str:
    return "\n".join(line.split(";")[0] for line in path.read_text().splitlines())


SIMPLE = [p for p in TEXTS if not any(c in _without_comments(p) for c in '"#')][:40]  # no strings, no #


def test_there_are_simple_texts():
    assert len(SIMPLE) >= 10


@pytest.mark.parametrize("path", SIMPLE, ids=lambda p: p.name)
def test_the_simple_reader_reads_what_the_general_reader_reads(path):
    text = _without_comments(path)
    simple = sexpr._read_simple(Source("<t>", text))
    assert simple is not None
    assert _flat(simple) == _flat(_general(text))


def _flat(items) -> list:
    """Every s-expression (pre-order) as (kind or bracket, value or length, start, end)."""
    out, stack = [], list(reversed(items))
    while stack:
        x = stack.pop()
        if isinstance(x, sexpr.SList):
            out.append((x.bracket, len(x.items), x.span.start, x.span.end))
            stack.extend(reversed(x.items))
        else:
            out.append((x.kind, x.value, x.span.start, x.span.end))
    return out


@pytest.mark.parametrize("text", ["(def f Float (x : Float) (add x 1.0)", "(a b))", "(a b]", "[a b)", ")",
                                  "(f 99999999999999999999)"])
def test_irregular_text_gets_the_general_readers_error(text):
    with pytest.raises(LabrysError) as fast:
        sexpr.read(Source("<t>", text))
    with pytest.raises(LabrysError) as general:
        _general(text)
    assert (fast.value.message, fast.value.span.start) == (general.value.message, general.value.span.start)


def test_the_checker_visits_each_node_once_and_reuses_typed_nodes(monkeypatch):
    m = labrys.load(_lets(200), backend="interp")
    typed = m.derivations.checked.typed(m.function("f").sigs[0].decl)
    untyped = labrys.parse_program(_lets(200)).decls[0]
    visits = [0]
    expr = checker._Checker.expr

    def counting(self, e, where):
        visits[0] += 1
        return expr(self, e, where)
    monkeypatch.setattr(checker._Checker, "expr", counting)
    again = checker.check_expr(typed.body, m.derivations.functions, {"x0": typed.params[0].type})
    assert visits[0] == size(typed.body)  # once per node
    assert again is typed.body  # nothing rebuilt: every node already had its type
    visits[0] = 0
    fresh = checker.check_expr(untyped.body, m.derivations.functions, {"x0": typed.params[0].type})
    assert visits[0] == size(untyped.body)
    assert all(x.type is not None for x in nodes(fresh)) and fresh == typed.body
    assert all(a is not b for a, b in zip(nodes(fresh), nodes(untyped.body)) if b.type is None)  # rebuilt


def test_checking_the_def_just_checked_is_free(monkeypatch):
    m = labrys.load(_lets(20), backend="interp")
    d = labrys.parse_program(_lets(20)).decls[0]
    fns = m.derivations.functions
    typed = checker.check_def(d, fns)
    calls = [0]
    decl = checker._check_decl

    def counting(c, x):
        calls[0] += 1
        return decl(c, x)
    monkeypatch.setattr(checker, "_check_decl", counting)
    assert checker.check_def(typed, fns) is typed
    assert calls[0] == 0
    other = ir.Def(d.name, d.ret, d.params, typed.body, span=d.span)  # another def: checked (typed nodes reused)
    assert checker.check_def(other, fns) is other and calls[0] == 1


def test_chads_simplifier_checks_once_per_sweep_and_measures_only_the_last(monkeypatch):
    m = labrys.load(_lets(50), backend="interp")
    counts = {"check": 0, "size": 0, "sweeps": 0}
    check, measure, sweep_init = chad_simplify.check_def, chad_simplify.size, chad_simplify._Sweep.__init__

    def counted(name, fn):
        def run(*args):
            counts[name] += 1
            return fn(*args)
        return run
    monkeypatch.setattr(chad_simplify, "check_def", counted("check", check))
    monkeypatch.setattr(chad_simplify, "size", counted("size", measure))
    monkeypatch.setattr(chad_simplify._Sweep, "__init__", counted("sweeps", sweep_init))
    derived = m.derivations.derive("chadR", m.function("f").sigs[0])
    assert counts["sweeps"] >= 2  # the chain needs a sweep that changes it and one that confirms
    assert counts["check"] == counts["sweeps"] + 1  # before each sweep, and the result
    assert counts["size"] == 2  # the last sweep's result and its input: no size walk per sweep
    assert size(derived.stage("simplify").body) < size(derived.stage("translate").body)
    assert labrys.grad(m.f, method="chadrev")(1.0) == pytest.approx(1.0001 ** 50)


def test_the_linear_view_is_printed_only_when_shown():
    m = labrys.load(_lets(5), backend="interp")
    derived = m.derivations.derive("chadR", m.function("f").sigs[0])
    stage = next(s for s in derived.stages if s.name == "simplify")
    assert callable(stage.shown)  # not printed yet
    text = stage.text
    assert isinstance(text, str) and "x5" in text.replace("$", "") or "lin" in text
    assert stage.shown == text and stage.text is text  # printed once


def test_the_checker_notes_spans_and_lambdas_and_the_backends_skip_those_walks(monkeypatch):
    """Note [Facts the checker collects]: a def the user wrote has a span on every node
    and (here) no lambda, so neither backend walks it to fill spans or to tabulate its
    lambdas' free variables; a def with a spanless node is still filled."""
    from labrys.backends import interp as interp_backend
    from labrys.ir import traverse
    walks = {"fill": 0, "lambdas": 0}
    fill, lambdas = traverse._fill_spans, interp_backend.lambda_free_vars

    def counted(name, fn):
        def run(*args):
            walks[name] += 1
            return fn(*args)
        return run
    monkeypatch.setattr(traverse, "_fill_spans", counted("fill", fill))
    monkeypatch.setattr(interp_backend, "lambda_free_vars", counted("lambdas", lambdas))
    for backend in ("interp", "python"):
        m = labrys.load(_lets(30), backend=backend)
        facts = m.backend.facts(m.backend.definition(m.function("f").sigs[0]))
        assert facts.spanned and not facts.lambdas
        assert m.f(1.0) == pytest.approx(1.0001 ** 30)
    assert walks == {"fill": 0, "lambdas": 0}
    m = labrys.load("(def g Float (x : Float) (let (h (lam (y : Float) (mul y y))) (h x)))", backend="interp")
    assert m.g(3.0) == 9.0 and walks["lambdas"] == 1 and walks["fill"] == 0
    checked = m.checked
    d = checked.program.decls[0]
    assert checked.facts[id(d.body)].lambdas and checked.facts[id(d.body)].spanned
    bare = ir.Def(d.name, d.ret, d.params, ir.Call("mul", ir.Tuple((ir.Var("x"), ir.Var("x")))), span=d.span)
    rechecked = checker.check_program(ir.Program((bare,)))
    typed = rechecked.program.decls[0]
    assert not rechecked.facts[id(typed.body)].spanned
    spanned = interp_backend.with_spans(typed)
    assert all(x.span == d.span for x in nodes(spanned.body)) and walks["fill"] > 0


def test_call_types_are_resolved_once_per_function_and_argument_types(monkeypatch):
    """Note [Call types by identity]: n calls of (mul x 1.0001) resolve once in the
    checker and once in the python backend's generator."""
    from labrys.types.functions import Functions
    resolves = [0]
    real = Functions.resolve

    def counting(self, name, arg):
        resolves[0] += 1
        return real(self, name, arg)
    monkeypatch.setattr(Functions, "resolve", counting)
    m = labrys.load(_lets(200), backend="python")
    after_check = resolves[0]
    assert m.f(1.0) == pytest.approx(1.0001 ** 200)
    assert after_check <= 3 and resolves[0] - after_check <= 3
