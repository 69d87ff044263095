"""`labrys fmt` loses nothing (Note [Formatting s-expressions]): comments stay,
attached to the construct they were next to; formatting is idempotent; the
program is unchanged (``parse(fmt(p)) == parse(p)``) on every example, corpus
file, generated and mutated program; literals keep their spelling; Float
literals printed from the IR read back to the same double (Note [Non-finite
literals]); ``--write`` replaces files atomically."""
from __future__ import annotations

import math
import os
import random
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrys
from labrys.errors import Source
from labrys.ir import nodes as ir
from labrys.syntax.fmt import format_source, format_text
from labrys.syntax.printer import show_expr, show_program
from labrys.syntax.sexpr import Comment, SList, read
from strategies import text_programs
from test_cli import labrys_cli, write

ROOT = Path(__file__).resolve().parent.parent
KS_FILES = sorted([*ROOT.glob("examples/**/*.ks"), *ROOT.glob("tests/corpus/**/*.ks"),
                   *ROOT.glob("src/labrys/**/*.ks"), *ROOT.glob("tests/fmt_cases/*.ks")])


def comments(text: str) -> list[str]:
    """Every comment's text, in order."""
    found: list[str] = []
    stack = list(reversed(read(Source("c", text), comments=True)))
    while stack:
        x = stack.pop()
        if isinstance(x, Comment):
            found.append(x.text)
        elif isinstance(x, SList):
            stack.extend(reversed(x.items))
    return found


def assert_lossless(text: str) -> str:
    out = format_source(text, "in.ks")
    assert labrys.parse_program(out) == labrys.parse_program(text)
    assert comments(out) == comments(text)
    assert format_source(out, "in.ks") == out  # idempotent
    return out


@pytest.mark.parametrize("path", KS_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_formats_losslessly(path):
    assert_lossless(path.read_text(encoding="utf-8"))


COMMENTED = """\
; header comment
;; second line

#| a block
   comment |#
(edef ext Float (Float)) ; trailing on edef
(def f Float ((x : Float) (y : Float)) ; after params
      (let ((a (mul x y)) ; a is the product
            ; own-line before b
            (b (sin x)) ((p q) (tuple a b)))
   (if (gt p 0.0) (add (mul p #| inline |# q) (div x 1e400)) (neg (get$2$2 (tuple 1 q))))
   ; before close
   ))
; footer
"""

# laid out by hand from the rules in Note [Formatting s-expressions]
COMMENTED_FORMATTED = """\
; header comment
;; second line

#| a block
   comment |#
(edef ext Float (Float)) ; trailing on edef
(def f Float ((x : Float) (y : Float)) ; after params
  (let
    ((a (mul x y)) ; a is the product
     ; own-line before b
     (b (sin x))
     ((p q) (tuple a b)))
    (if (gt p 0.0)
        (add (mul p #| inline |# q) (div x 1e400))
        (neg (get$2$2 (tuple 1 q))))
    ; before close
  ))
; footer
"""


def test_comments_stay_where_they_were():
    assert assert_lossless(COMMENTED) == COMMENTED_FORMATTED


def test_comment_free_layout_is_the_printers():
    text = "(def f Float (x : Float) (add x 1.0))\n(def g Float (y : Float) (f y))\n"
    assert format_source(text) == text.replace("\n(def g", "\n\n(def g")  # forms: one blank line apart
    assert format_source("(def   f Float (x : Float)\n\n (add x\n 1.0))") == "(def f Float (x : Float) (add x 1.0))\n"


def test_comment_before_a_form_keeps_its_blank_line_or_not():
    text = "; about f\n(def f Float (x : Float) x)\n\n; about nothing\n\n(def g Float (x : Float) x)\n"
    assert assert_lossless(text) == text


def test_literals_keep_their_spelling():
    text = "(def f Float (x : Float) (add x (add 1e400 (add 1E-3 -0.0))))\n"
    assert assert_lossless(text) == text


def test_empty_and_comment_only_files():
    assert format_source("") == ""
    assert assert_lossless("; nothing here\n") == "; nothing here\n"
    assert assert_lossless("#| only |#") == "#| only |#\n"


# --- Float literals from the IR (Note [Non-finite literals]) ---------------------------

@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, -0.0, 5e-324, 1.7976931348623157e308, 0.1])
def test_float_constants_print_as_literals(value):
    e = ir.call("add", ir.const(value), ir.const(1.0))
    shown = show_expr(e)
    assert "div" not in shown
    back = labrys.parse_expr(shown)
    assert back == e
    got = back.arg.elems[0].value
    same = got == value and math.copysign(1, got) == math.copysign(1, value)
    assert (math.isnan(got) and math.isnan(value)) or same


def test_non_finite_literals_read():
    assert labrys.load("(def f Float () +inf.0)").f() == math.inf
    assert labrys.load("(def f Float () -inf.0)").f() == -math.inf
    assert math.isnan(labrys.load("(def f Float () +nan.0)").f())
    assert labrys.load("(def f Float () 1e400)").f() == math.inf


@pytest.mark.parametrize("text", ["(def f Float () 1e400)", "(def f Float () (sub 0.0 1e999))"])
def test_show_program_round_trips_huge_literals(text):
    p = labrys.parse_program(text)
    assert labrys.parse_program(show_program(p)) == p


# --- generated and mutated programs ----------------------------------------------------

@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text_programs(), st.randoms(use_true_random=False))
def test_generated_programs_with_comments(prog, rnd):
    text = prog[0]
    # put comments after random tokens: own-line and trailing, line and block
    lines = text.split("\n")
    for _ in range(rnd.randint(1, 6)):
        k = rnd.randrange(len(lines))
        lines[k] += rnd.choice([" ; trailing", " #| block |#", "\n; own line", "\n#| two\nlines |#"])
    assert_lossless("\n".join(lines))


def _mutants(text: str, n: int, seed: int) -> list[str]:
    """Token-level mutants: delete, duplicate or swap whitespace-separated tokens."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        toks = text.replace("(", " ( ").replace(")", " ) ").split(" ")
        for _ in range(rnd.randint(1, 3)):
            i, j = rnd.randrange(len(toks)), rnd.randrange(len(toks))
            op = rnd.randrange(3)
            if op == 0:
                del toks[i]
            elif op == 1:
                toks.insert(i, toks[j])
            else:
                toks[i], toks[j] = toks[j], toks[i]
        out.append(" ".join(toks))
    return out


def test_mutants_of_the_examples():
    checked = 0
    for path in sorted(ROOT.glob("examples/*.ks")):
        for m in _mutants(path.read_text(encoding="utf-8"), 8, hash(path.name) & 0xFFFF):
            try:
                labrys.parse_program(m)
            except labrys.LabrysError:
                continue
            assert_lossless(m)
            checked += 1
    assert checked > 20


def test_deep_program_with_comments():
    n = 10_000
    body = "".join(f"(let (x{i} (add x{i - 1} 1.0)) ; step {i}\n" for i in range(1, n + 1)) + f"x{n}" + ")" * n
    assert_lossless(f"(def f Float (x0 : Float)\n{body})\n")


# --- the command line ------------------------------------------------------------------

def test_cli_write_replaces_atomically(tmp_path):
    write(tmp_path, "a.ks", COMMENTED)
    write(tmp_path, "b.ks", COMMENTED_FORMATTED)
    os.chmod(tmp_path / "a.ks", 0o640)
    proc = labrys_cli("fmt", "--write", "a.ks", "b.ks", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    assert (tmp_path / "a.ks").read_text() == COMMENTED_FORMATTED
    assert stat.S_IMODE((tmp_path / "a.ks").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.ks", "b.ks"]  # no temporary left
    assert labrys_cli("fmt", "--check", "a.ks", "b.ks", cwd=tmp_path).returncode == 0


def test_cli_check_names_every_file(tmp_path):
    write(tmp_path, "a.ks", COMMENTED)
    write(tmp_path, "b.ks", COMMENTED)
    proc = labrys_cli("fmt", "--check", "a.ks", "b.ks", cwd=tmp_path)
    assert proc.returncode == 1
    assert "a.ks: not in canonical form" in proc.stderr and "b.ks: not in canonical form" in proc.stderr


def test_cli_write_leaves_a_bad_file_alone(tmp_path):
    bad = "(def f Float (x : Float) ; oops\n  (add x \"unterminated))\n"
    write(tmp_path, "bad.ks", bad)
    proc = labrys_cli("fmt", "--write", "bad.ks", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("bad.ks:2:10: error: unterminated string")
    assert (tmp_path / "bad.ks").read_text() == bad


def test_format_text_is_pure_layout():
    # only whitespace moves: the token sequence is the same
    squash = lambda s: "".join(s.split())  # noqa: E731
    assert squash(format_text(COMMENTED)) == squash(COMMENTED)
