"""Structural proofs about a sympy expression in the real variable ``u`` (docs/theory.md section 5.1).

`real_continuous` proves that an expression is real-valued and continuous at *every* real u by
recursion over its tree: every node must be a real continuous operation of real continuous
arguments, with the side conditions (a logarithm's argument positive, a fractional power's base
non-negative, a divisor never zero, ...) proved by sympy's assumption system. Anything it cannot
prove answers False (unknown), never a guess: ``Abs(sqrt(u - 1))`` is real but its argument is not,
so it is not accepted. `witness` and `jump` look for exact refutations: a point where the loss is
undefined or not real, a point where the one-sided limits differ.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

__all__ = [
    "real_continuous",
    "smooth_fragment",
    "breakpoints",
    "witness",
    "jump",
    "jump_candidates",
    "SAMPLE_POINTS",
    "condition_relationals",
]

#: exact points tried first when looking for a refutation
SAMPLE_POINTS = ("0", "1/2", "-1/2", "1", "-1", "2", "-2", "3", "-3", "10", "-10", "100", "-100")


def _sp():
    import sympy as sp

    return sp


@lru_cache(maxsize=1)
def _tables():
    sp = _sp()
    entire = (sp.exp, sp.sin, sp.cos, sp.sinh, sp.cosh, sp.tanh, sp.atan, sp.asinh, sp.erf, sp.erfc)
    kinks = (sp.Abs, sp.Max, sp.Min)
    jumps = (sp.sign, sp.Heaviside)
    steps = (sp.floor, sp.ceiling, sp.frac)
    return entire, kinks, jumps, steps


def _true(value) -> bool:
    return value is True


def _finite_zeros(g, u) -> bool:
    sp = _sp()
    if not g.has(u):
        return True
    try:
        return isinstance(sp.solveset(sp.Eq(g, 0), u, sp.S.Reals), sp.FiniteSet)
    except Exception:  # sympy raises many types; unknown means not proved
        return False


def real_continuous(expr, u, *, jumps_ok: bool = False) -> bool:
    """Proved: ``expr`` is real-valued and continuous at every real u (False: not proved).

    With ``jumps_ok`` (for derivatives of kinked losses), ``sign``, ``Heaviside`` and ``Piecewise``
    are accepted when their jumps lie in a finite set of points (then "continuous except at finitely
    many points" is what is proved).
    """
    sp = _sp()
    entire, kinks, jumps, steps = _tables()

    def rec(node) -> bool:
        if not node.has(u):
            return _true(node.is_real) and _true(node.is_finite)
        if node == u:
            return True
        if isinstance(node, (sp.Add, sp.Mul)):
            return all(rec(a) for a in node.args)
        if isinstance(node, sp.Pow):
            b, e = node.args
            if not e.has(u):
                if not (_true(e.is_real) and rec(b)):
                    return False
                if _true(e.is_integer):
                    return _true(e.is_nonnegative) or _true(b.is_positive) or _true(b.is_negative)
                return _true(b.is_nonnegative) if _true(e.is_positive) else _true(b.is_positive)
            return rec(b) and rec(e) and _true(b.is_positive)
        if isinstance(node, entire) or isinstance(node, kinks):
            return all(rec(a) for a in node.args)
        if len(node.args) == 1 and isinstance(node, sp.Function):
            x = node.args[0]
            if isinstance(node, sp.log):
                return rec(x) and _true(x.is_positive)
            if isinstance(node, (sp.asin, sp.acos)):
                return rec(x) and _true((1 - x).is_nonnegative) and _true((1 + x).is_nonnegative)
            if isinstance(node, sp.acosh):
                return rec(x) and _true((x - 1).is_nonnegative)
            if isinstance(node, sp.atanh):
                return rec(x) and _true((1 - x).is_positive) and _true((1 + x).is_positive)
        if isinstance(node, jumps):
            return (
                jumps_ok
                and rec(node.args[0])
                and _finite_zeros(node.args[0], u)
                and all(not a.has(u) and _true(a.is_real) for a in node.args[1:])
            )
        if isinstance(node, sp.Piecewise):
            return _piecewise(node, rec, u, jumps_ok)
        return False  # tan, floor, frac, unknown functions, derivatives, ...: not proved

    try:
        return rec(expr)
    except (RecursionError, TypeError, ValueError, AttributeError, NotImplementedError):
        return False


def condition_relationals(cond) -> list | None:
    """The relationals of a Piecewise condition (None if it is not a boolean combination of them)."""
    sp = _sp()
    if cond in (sp.true, sp.false):
        return []
    if isinstance(cond, sp.core.relational.Relational):
        return [cond]
    if isinstance(cond, (sp.And, sp.Or, sp.Not)):
        out = []
        for a in cond.args:
            sub = condition_relationals(a)
            if sub is None:
                return None
            out += sub
        return out
    return None


def _piecewise(node, rec, u, jumps_ok: bool) -> bool:
    """Every branch real continuous on R, every condition a combination of relationals of real
    continuous functions with finitely many boundary points, the conditions covering R (proved with
    sympy's ``as_set``); strictly continuous also needs all
    branches to agree at every boundary point."""
    sp = _sp()
    rels, exprs = [], []
    for pair in node.args:
        e, c = pair.args
        sub = condition_relationals(c)
        if sub is None or not rec(e):
            return False
        rels += sub
        exprs.append(e)
    points = []
    for r in rels:
        g = r.lhs - r.rhs
        if not rec(g) or not _finite_zeros(g, u):
            return False
        if g.has(u):
            points.extend(sp.solveset(sp.Eq(g, 0), u, sp.S.Reals))
    try:  # the pieces must cover R (a point no condition selects is a point where l is undefined)
        if sp.S.Reals.is_subset(sp.Or(*[pair.args[1] for pair in node.args]).as_set()) is not True:
            return False
    except Exception:  # as_set raises NotImplementedError and others on conditions it cannot solve
        return False
    if jumps_ok:
        return True
    for c in points:
        values = [e.subs(u, c) for e in exprs]
        if not all(_true((v - values[0]).is_zero) for v in values[1:]):
            return False
    return True


def smooth_fragment(expr) -> bool:
    """No function with kinks or jumps (Abs, Max, Min, sign, Heaviside, floor, ceiling, frac,
    Piecewise): where such an expression is real and continuous its formal derivatives are its
    derivatives."""
    sp = _sp()
    _, kinks, jumps, steps = _tables()
    return not expr.has(*kinks, *jumps, *steps, sp.Piecewise)


def breakpoints(expr, u) -> list | None:
    """Candidate non-smooth points, exact and sorted: zeros of the arguments of Abs/sign/Heaviside,
    Max/Min switches, Piecewise condition boundaries. None when unknown (floor/ceiling/frac, or an
    infinite or unsolved zero set)."""
    sp = _sp()
    _, _, _, steps = _tables()
    cands = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, (sp.Abs, sp.sign, sp.Heaviside)):
            cands.append(node.args[0])
        elif isinstance(node, (sp.Max, sp.Min)):
            args = node.args
            cands.extend(a - b for i, a in enumerate(args) for b in args[i + 1 :])
        elif isinstance(node, sp.Piecewise):
            for _, cond in node.args:
                rels = condition_relationals(cond)
                if rels is None:
                    return None
                cands.extend(r.lhs - r.rhs for r in rels)
        elif isinstance(node, steps):
            return None
    points = set()
    for g in cands:
        if not g.has(u):
            continue
        sol = sp.solveset(sp.Eq(g, 0), u, sp.S.Reals)
        if not isinstance(sol, sp.FiniteSet) or not all(_true(x.is_real) for x in sol):
            return None
        points.update(sol)
    try:
        return sorted(points, key=lambda x: float(x))
    except (TypeError, ValueError, OverflowError):
        return None


def _not_real(v) -> bool:
    """Proved non-real: sympy says so and a 30-digit evaluation of the imaginary part agrees."""
    sp = _sp()
    if v.is_real is not False or v.is_finite is not True:
        return False
    im = sp.im(v)
    if im.is_zero is not False:
        return False
    try:
        return abs(complex(im.evalf(30))) > 1e-20
    except (TypeError, ValueError):
        return False


def witness(expr, u, points: Iterable) -> tuple[object, object, str] | None:
    """An exact point where the loss is undefined (division by zero, log 0, ...) or not real:
    ``(point, value, what)``, or None."""
    sp = _sp()
    for c in points:
        c = sp.nsimplify(c) if isinstance(c, str) else c
        try:
            v = expr.subs(u, c)
        except Exception:  # sympy raises many types at singular points
            continue
        if v.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or v.is_finite is False:
            return c, v, "not defined"
        if _not_real(v):
            return c, v, "not real"
    return None


def jump_candidates(expr, u) -> list:
    """Points where a step function or a Piecewise condition may jump (exact, a few per node)."""
    sp = _sp()
    _, _, jumps, steps = _tables()
    out = []
    for node in sp.preorder_traversal(expr):
        targets = []
        if isinstance(node, jumps):
            targets = [(node.args[0], 0)]
        elif isinstance(node, steps):
            targets = [(node.args[0], k) for k in (0, 1, -1)]
        elif isinstance(node, sp.Piecewise):
            rels = condition_relationals(node.args[0].args[1]) or []
            for pair in node.args:
                rels += condition_relationals(pair.args[1]) or []
            targets = [(r.lhs - r.rhs, 0) for r in rels]
        for g, k in targets:
            if not g.has(u):
                continue
            try:
                sol = sp.solveset(sp.Eq(g, k), u, sp.S.Reals)
            except Exception:
                continue
            if isinstance(sol, sp.FiniteSet):
                out.extend(x for x in sol if _true(x.is_real))
    return out[:12]


def jump(expr, u, points: Iterable) -> tuple[object, object, object, object] | None:
    """An exact point c where ``expr`` is not continuous: real finite one-sided limits that differ
    from each other or from the value, proved by sympy. ``(c, left, value, right)`` or None."""
    sp = _sp()
    for c in points:
        try:
            value = expr.subs(u, c)
            left = sp.limit(expr, u, c, "-")
            right = sp.limit(expr, u, c, "+")
        except Exception:  # sympy's limit raises many types; no refutation from it
            continue
        trio = (left, value, right)
        if not all(_true(x.is_real) and _true(x.is_finite) for x in trio):
            continue
        if (
            (left - right).is_zero is False
            or (left - value).is_zero is False
            or (right - value).is_zero is False
        ):
            return c, left, value, right
    return None
