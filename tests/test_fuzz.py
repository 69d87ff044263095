"""Robustness: whatever text comes in, the only exception is LabrysError.

(a) random bytes and text go to ``parse_program`` and ``labrys.load``;
(b) mutations of a valid program that uses most constructs go to ``load``.
Every LabrysError must also format without failing, and its position must
lie inside the text.
"""
from __future__ import annotations

import re
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrys
from labrys import LabrysError

FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def check_error(err: LabrysError, text: str) -> None:
    """The error formats, and a position it reports is inside the text."""
    shown = str(err)
    assert "error:" in shown
    assert isinstance(err.message, str) and err.message
    if err.span is not None:
        lines = text.split("\n")
        assert 1 <= err.span.line <= len(lines), shown
        assert 1 <= err.span.col <= len(lines[err.span.line - 1]) + 1, shown
        assert shown.startswith(f"{err.span.source.name}:{err.span.line}:{err.span.col}: error: ")


def try_parse(text: str) -> None:
    try:
        labrys.parse_program(text, "fuzz.ks")
    except LabrysError as err:
        check_error(err, text)


def try_load(text: str) -> None:
    try:
        labrys.load(text)
    except LabrysError as err:
        if err.span is not None:
            check_error(err, text)
        else:
            str(err)


# --- (a) random input -----------------------------------------------------------

# characters that matter to the reader, plus some that do not
KS_CHARS = st.sampled_from(list('()[]()"\\;#| \n\t:$-.0123456789eE') + list("abxyfTFloatIntegrVc") + ["\x00", "é"])
KS_WORDS = st.sampled_from([
    "(", ")", "[", "]", " ", "\n", "def", "edef", "gdef", "rule", "let", "if", "lam", "tuple",
    "build", "sumbuild", "fold", "map", "index", "size", "case", "inl", "inr", "fn", "assert",
    "get$1$2", "get$2$2", "get$0$1", "Float", "Integer", "Bool", "String", "Vec", "Tensor",
    "Tuple", "Lam", "LM", "Sum", "x", "y", "f", "g", ":", "1", "2.0", "-3", "1e3", "true",
    '"s"', '"\\n"', "#|", "|#", ";", "add", "mul", "rev", "fwd", "D", "print", "main",
])


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_parse(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try_parse(text)
    try_parse(data.decode("latin-1"))


@FUZZ
@given(st.text(max_size=300))
def test_random_text_parse(text: str) -> None:
    try_parse(text)


@FUZZ
@given(st.text(KS_CHARS, max_size=300))
def test_random_ks_characters_parse_and_load(text: str) -> None:
    try_parse(text)
    try_load(text)


@FUZZ
@given(st.lists(KS_WORDS, max_size=80).map(" ".join))
def test_random_ks_tokens_parse_and_load(text: str) -> None:
    try_parse(text)
    try_load(text)


@FUZZ
@given(st.text(max_size=200))
def test_random_text_load(text: str) -> None:
    # load may take a string for a file name; either way, only LabrysError
    try_load(text)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_load(data: bytes) -> None:
    try_load("(" + data.decode("utf-8", errors="replace"))
    try_load(data.decode("latin-1"))


def test_load_of_text_with_a_nul_byte() -> None:
    """Found by test_random_text_load: no '(' means 'a path', and a NUL is not a valid path."""
    try_load("\x00")
    try_load("x\x00y")


@FUZZ
@given(st.integers(min_value=1, max_value=400), st.sampled_from(["(", "[", "(let (x 1) "]))
def test_deep_nesting(depth: int, opener: str) -> None:
    closer = {"(": ")", "[": "]", "(let (x 1) ": ")"}[opener]
    for text in (opener * depth, opener * depth + "x" + closer * depth,
                 "(def f Float (x : Float) " + opener * depth + "x" + closer * depth + ")"):
        try_parse(text)
        try_load(text)


def test_deep_program_after_the_host_lowers_the_recursion_limit() -> None:
    """Deep programs must not depend on the host's recursion limit.

    Hypothesis (around every @given test), pytest or any application may set
    ``sys.setrecursionlimit`` after labrys started its deep-stack worker.
    """
    labrys.load("(def g Float (x : Float) x)")  # the worker exists now
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        depth = 3000
        text = "(def f Integer (y : Float) " + "(let (x 1) " * depth + "x" + ")" * depth + ")"
        module = labrys.load(text)
        assert module.f(2.0) == 1
        try_parse("(" * depth)
    finally:
        sys.setrecursionlimit(old)


# --- (b) mutations of a valid program -------------------------------------------------

VALID = """\
; a program that uses most constructs of the language
#| block comment #| nested |# still comment |#
(edef ext Float (Float))
(edef [D ext] (LM Float Float) (Float))

(def sq Float (x : Float) (mul x x))
(def sq Integer (n : Integer) (mul n n))

(def f Float ((x : Float) (y : Float))
  (let ((a (mul x y))
        (b (sin x))
        ((p q) (tuple a b)))
    (if (gt p 0.0)
        (add (mul p q) (div x y))
        (neg (get$2$2 (tuple 1 q))))))

(def norm Float (v : Vec Float)
  (sqrt (sumbuild (size v) (lam (i : Integer) ([sq Float] (index i v))))))

(def total Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float)
          (let ((acc x) acc_x) (add acc x)))
        0.0
        v))

(def pick Float (s : Sum Float Integer)
  (case s
    ((inl a) a)
    ((inr k) (to_float k))))

(def twice (Lam Float Float) (g : Lam Float Float)
  (lam (t : Float) (g (g t))))

(def use Float (x : Float)
  (let (h (twice (fn [sq Float])))
    (assert (gte x 0.0)
      (add (h x) (pick (inl (Sum Float Integer) x))))))

(def grid (Tensor 2 Float) (n : Integer)
  (build (tuple n n) (lam (ij : Tuple Integer Integer)
    (to_float (add (get$1$2 ij) (get$2$2 ij))))))

(def fact Integer (n : Integer)
  (if (lte n 1) 1 (mul n (fact (sub n 1)))))

(gdef fwd [f (Tuple Float Float)])
(gdef rev [norm (Vec Float)])

(rule "mul2" (x : Float) (mul x 2.0) (add x x))

(def main Integer ()
  (let (v (build 4 (lam (i : Integer) (to_float (add i 1)))))
    (print "f = " (f 1.5 2.0) "\\n"
           "norm " v " = " (norm v) "\\t" (total v) "\\n"
           (use 2.0) " " (pick (inr (Sum Float Integer) 3)) " " (fact 5) "\\n")))
"""

TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[()\[\]]|[^\s()\[\]";]+|;[^\n]*|\s+')
TOKENS = TOKEN_RE.findall(VALID)
assert "".join(TOKENS) == VALID
SOLID = [i for i, t in enumerate(TOKENS) if not t.isspace()]
EXTRA_TOKENS = ["(", ")", "[", "]", "Float", "Integer", "(Vec Float)", "1", "1.0", "x", "v",
                "(tuple)", "let", "lam", "if", "#|", '"', ";", "get$3$3", "[rev f]", "(fn f)"]


def test_the_valid_program_is_valid() -> None:
    m = labrys.load(VALID)
    assert m.f(1.5, 2.0) > 0
    assert m.fact(5) == 120


def token_mutation(tokens: list[str], draw) -> list[str]:
    out = list(tokens)
    solid = [i for i, t in enumerate(out) if not t.isspace()]
    if not solid:
        return out
    kind = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert", "insert-paren"]))
    i = draw(st.sampled_from(solid))
    if kind == "delete":
        out[i] = ""
    elif kind == "duplicate":
        out[i] = out[i] + " " + out[i]
    elif kind == "swap":
        j = draw(st.sampled_from(solid))
        out[i], out[j] = out[j], out[i]
    elif kind == "replace":
        out[i] = draw(st.sampled_from(EXTRA_TOKENS + [TOKENS[k] for k in SOLID]))
    elif kind == "insert":
        out[i] = draw(st.sampled_from(EXTRA_TOKENS)) + " " + out[i]
    else:
        out[i] = draw(st.sampled_from(["(", ")", "[", "]", "()", ")("])) + out[i]
    return out


@st.composite
def token_mutants(draw) -> str:
    tokens = list(TOKENS)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        tokens = token_mutation(tokens, draw)
    return "".join(tokens)


@st.composite
def char_mutants(draw) -> str:
    text = VALID
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        i = draw(st.integers(min_value=0, max_value=len(text) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "insert", "swap"]))
        if kind == "delete":
            text = text[:i] + text[i + 1:]
        elif kind == "duplicate":
            text = text[:i] + text[i] + text[i:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(list('()[]" \\;#|:$0.-eT'))) + text[i:]
        else:
            j = draw(st.integers(min_value=0, max_value=len(text) - 1))
            a, b = sorted((i, j))
            if a != b:
                text = text[:a] + text[b] + text[a + 1:b] + text[a] + text[b + 1:]
    return text


def load_mutant(text: str) -> None:
    try:
        module = labrys.load(text)
    except LabrysError as err:
        assert err.span is not None, f"a mistake in the program should have a position: {err}"
        check_error(err, text)
        return
    # it loaded: its printed form must load too, and read back as the same program
    printed = str(module)
    again = labrys.load(printed)
    assert again.program == module.program, printed


@FUZZ
@given(token_mutants())
def test_token_mutants_load_or_raise_labrys_error(text: str) -> None:
    load_mutant(text)


@FUZZ
@given(char_mutants())
def test_character_mutants_load_or_raise_labrys_error(text: str) -> None:
    load_mutant(text)


@FUZZ
@given(st.integers(min_value=0, max_value=len(VALID)))
def test_every_prefix_loads_or_raises_labrys_error(n: int) -> None:
    load_mutant(VALID[:n])
