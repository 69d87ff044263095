"""User (rule ...) declarations rewrite derivative code (issue 3, optimiser)."""
from __future__ import annotations

import labrys
from labrys.ir import nodes as ir
from labrys.opt.rules import RewriteRule, apply_rules, match, program_rules
from labrys.syntax.printer import show_expr


def rules_of(text: str) -> list[RewriteRule]:
    return program_rules(labrys.check_program(labrys.parse_program(text)).program)


def test_pattern_variables_match_any_expression_consistently():
    (rule,) = rules_of('(rule "twice" (x : Float) (add x x) (mul 2.0 x))')
    same = labrys.parse_expr("(add (sin y) (sin y))", scope=("y",))
    different = labrys.parse_expr("(add (sin y) (cos y))", scope=("y",))
    assert match(rule, same) == {"x": labrys.parse_expr("(sin y)", scope=("y",))}
    assert match(rule, different) is None
    assert show_expr(apply_rules(same, [rule])) == "(mul 2.0 (sin y))"


def test_binders_match_up_to_renaming():
    (rule,) = rules_of('(rule "let.elim" ((e : Float) (a : Float)) (let (a e) a) e)')
    term = labrys.parse_expr("(let (t (mul y 3.0)) t)", scope=("y",))
    assert show_expr(apply_rules(term, [rule])) == "(mul y 3.0)"
    assert match(rule, labrys.parse_expr("(let (t 1.0) y)", scope=("y",))) is None


def test_rules_rewrite_generated_derivatives_and_keep_them_correct():
    src = '''
(rule "cos.as.sin" (x : Float) (cos x) (sin (sub (div (pi) 2.0) x)))
(def f Float (x : Float) (mul (sin x) x))
'''
    m = labrys.load(src)
    rev = m.derive("rev", "f")
    assert "(cos " not in rev.source and "(pi)" in rev.source  # the user's law fired
    import math
    x = 0.7
    assert math.isclose(rev(x, 1.0), math.sin(x) + x * math.cos(x), rel_tol=1e-12)


def test_rules_do_not_loop():
    (rule,) = rules_of('(rule "comm" ((a : Float) (b : Float)) (mul a b) (mul b a))')
    term = labrys.parse_expr("(mul y 2.0)", scope=("y",))
    assert show_expr(apply_rules(term, [rule])) == "(mul 2.0 y)"
    assert isinstance(apply_rules(term, [rule]), ir.Call)
