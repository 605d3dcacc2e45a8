"""Certified sign and realness of exact sympy numbers (docs/theory.md section 5.1).

An exact number (rationals, pi, E, I, sums, products, powers and the loss functions at exact
arguments) is enclosed in a python-flint ``acb`` ball, outward rounded, at 128 and then 512 bits.
Its sign is certified when the ball excludes 0 (an exact zero comes from sympy); it is certified
non-real when the ball's imaginary part excludes 0. Anything else is unknown (None / False).
"""

from __future__ import annotations

import flint

__all__ = ["exact_acb", "real_ball", "not_real", "sign_at"]


def exact_acb(x, prec: int):
    """An ``acb`` ball containing the exact sympy number ``x`` (None when x is not supported)."""
    import sympy as sp
    from flint import acb, arb, fmpq

    if x.is_Rational:
        return acb(arb(fmpq(int(x.p), int(x.q))))
    if x is sp.pi:
        return acb.pi()
    if x is sp.E:
        return acb(1).exp()
    if x is sp.I:
        return acb(0, 1)
    args = [exact_acb(a, prec) for a in x.args]
    if any(a is None for a in args):
        return None
    if isinstance(x, sp.Add):
        s = args[0]
        for a in args[1:]:
            s = s + a
        return s
    if isinstance(x, sp.Mul):
        s = args[0]
        for a in args[1:]:
            s = s * a
        return s
    if isinstance(x, sp.Pow):
        b, e = args
        if x.args[1].is_Integer:
            return b ** int(x.args[1])
        return b**e
    simple = {
        sp.exp: "exp",
        sp.log: "log",
        sp.sin: "sin",
        sp.cos: "cos",
        sp.tan: "tan",
        sp.sinh: "sinh",
        sp.cosh: "cosh",
        sp.tanh: "tanh",
        sp.atan: "atan",
        sp.asin: "asin",
        sp.acos: "acos",
        sp.asinh: "asinh",
        sp.acosh: "acosh",
        sp.atanh: "atanh",
        sp.erf: "erf",
        sp.erfc: "erfc",
    }
    name = simple.get(x.func)
    if name is not None and len(args) == 1:
        return getattr(args[0], name)()
    if isinstance(x, sp.Abs):
        return acb(args[0].abs())
    return None


def real_ball(x):
    """An ``arb`` containing the real number x, or None when x is not certified real."""
    for prec in (128, 512):
        with flint.ctx.workprec(prec):
            try:
                z = exact_acb(x, prec)
            except (ValueError, ZeroDivisionError, ArithmeticError):
                return None
            if z is None:
                return None
            if x.is_real is True or (z.imag == 0 and z.imag.is_exact()):
                return z.real
            if not z.imag.contains(0):
                return None
    return None


def not_real(x) -> bool:
    """Certified: the exact number x is not real (its imaginary part's ball excludes 0)."""
    if x.is_real is True:
        return False
    for prec in (128, 512):
        with flint.ctx.workprec(prec):
            try:
                z = exact_acb(x, prec)
            except (ValueError, ZeroDivisionError, ArithmeticError):
                return False
            if z is None:
                return False
            if not z.imag.contains(0):
                return True
    return False


def sign_at(x) -> int | None:
    """The certified sign of an exact real number: exact zero from sympy, else from an ``arb`` ball."""
    ball = real_ball(x)
    if ball is not None and ball > 0:
        return 1
    if ball is not None and ball < 0:
        return -1
    return 0 if x.is_zero is True else None
