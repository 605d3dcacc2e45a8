"""The domain of a loss expression *as written* (docs/theory.md section 5.1).

sympy simplifies while it builds an expression: ``u/u`` becomes 1, ``0*log(u)`` becomes 0,
``exp(log(u))`` becomes u. Each of these is an identity only where the written expression is
defined, so the loss check parses the text without evaluation (`theorems.loss_parse.parse_written`)
and this module examines that tree:

* `conditions`: every node that is not defined on all of R contributes a condition on its argument
  (a logarithm's argument > 0, an even or fractional root's base >= 0, a divisor or a negative
  integer power's base != 0, tan's cosine != 0, asin/acos/acosh/atanh arguments in range, a power
  with a variable exponent needs a positive base, Piecewise conditions that cover R), constant
  subtrees included (``0*log(-1)`` is not 0: it is not defined);
* `domain_check`: each condition proved on R (sympy's assumptions on the simplified argument, or an
  empty violation set from ``solveset``) or refuted by an exact point where the tree, evaluated as
  written (`value_at`), is undefined or not real; UNDECIDED when neither;
* `value_at`: the value at an exact point, node by node, each node's value exact (sympy) and its
  realness and sign certified in ball arithmetic (python-flint ``acb``) where sympy cannot tell.

When every condition is proved, the written expression and its simplified form agree at every real
u, so the rest of the check may work on the simplified form.
"""

from __future__ import annotations


from theorems.realfun import SAMPLE_POINTS, condition_relationals
from theorems.signs import not_real, real_ball, sign_at
from theorems.domain_types import Condition, DomainReport, Kind, PointValue, short_text

__all__ = [
    "Kind",
    "Condition",
    "PointValue",
    "DomainReport",
    "evaluated",
    "rebuild",
    "freeze",
    "thaw",
    "conditions",
    "value_at",
    "sign_at",
    "domain_check",
    "set_points",
]


def _sp():
    import sympy as sp

    return sp


def rebuild(node, args, *, evaluate: bool):
    """``node`` with new arguments, with or without sympy's automatic evaluation."""
    sp = _sp()
    if isinstance(node, (sp.Piecewise, sp.Max, sp.Min)):
        return node.func(*args, evaluate=evaluate)
    with sp.evaluate(evaluate):
        return node.func(*args)


def evaluated(expr):
    """The simplified form sympy builds from the written tree (bottom-up, automatic evaluation)."""
    if not expr.args:
        return expr
    return rebuild(expr, [evaluated(a) for a in expr.args], evaluate=True)


def freeze(expr) -> tuple:
    """A plain nested tuple for the written tree: unpickling a sympy tree rebuilds it *with* automatic
    evaluation (``u*(u/u)`` comes back as ``u**2/u``), so a tree crosses a process boundary frozen."""
    sp = _sp()
    if expr.is_Symbol:
        return ("u", expr.name)
    if expr.is_Rational:
        return ("q", int(expr.p), int(expr.q))
    if not expr.args:
        name = {sp.pi: "pi", sp.E: "E", sp.true: "true", sp.false: "false"}.get(expr)
        if name is None:
            raise ValueError(f"cannot freeze the atom {expr!r}")
        return ("c", name)
    return ("f", type(expr).__name__, tuple(freeze(a) for a in expr.args))


def thaw(frozen: tuple):
    """The written tree back from `freeze` (no automatic evaluation)."""
    sp = _sp()
    from sympy.functions.elementary.piecewise import ExprCondPair

    kind = frozen[0]
    if kind == "u":
        return sp.Symbol(frozen[1], real=True)
    if kind == "q":
        return sp.Rational(frozen[1], frozen[2])
    if kind == "c":
        return {"pi": sp.pi, "E": sp.E, "true": sp.true, "false": sp.false}[frozen[1]]
    cls = ExprCondPair if frozen[1] == "ExprCondPair" else getattr(sp, frozen[1])
    args = [thaw(a) for a in frozen[2]]
    if cls in (sp.Piecewise, sp.Max, sp.Min):
        return cls(*args, evaluate=False)
    with sp.evaluate(False):
        return cls(*args)


# ---------------------------------------------------------------------------------------- conditions
def _as_set(cond, u):
    """The set of reals where a Piecewise condition holds (None when sympy cannot say)."""
    sp = _sp()
    try:
        s = evaluated(cond).as_set()
    except Exception:  # as_set raises NotImplementedError and others on transcendental conditions
        return None
    return sp.S.Reals if s == sp.S.UniversalSet else s.intersect(sp.S.Reals)


def conditions(expr, u, region=None) -> list[Condition]:
    """Every domain condition of the written tree ``expr`` (its regions: where that node is evaluated)."""
    sp = _sp()
    region = sp.S.Reals if region is None else region
    out: list[Condition] = []

    def rec(node, reg) -> None:
        if not node.args:  # u, a number, pi, E
            return
        if isinstance(node, sp.Piecewise):
            _piecewise(node, reg)
            return
        for a in node.args:
            rec(a, reg)
        if isinstance(node, sp.Pow):
            b, e = node.args[0], evaluated(node.args[1])
            if e.has(u):
                out.append(Condition(Kind.POSITIVE, b, node, reg))
            elif e.is_integer is True:
                if e.is_negative is True:
                    out.append(Condition(Kind.NONZERO, b, node, reg))
            elif e.is_positive is True:
                out.append(Condition(Kind.NONNEGATIVE, b, node, reg))
            else:
                out.append(Condition(Kind.POSITIVE, b, node, reg))
        elif isinstance(node, sp.log):
            out.append(Condition(Kind.POSITIVE, node.args[0], node, reg))
            for base in node.args[1:]:
                out.append(Condition(Kind.POSITIVE, base, node, reg))
                out.append(Condition(Kind.NONZERO, sp.log(base), node, reg))
        elif isinstance(node, sp.tan):
            out.append(Condition(Kind.NONZERO, sp.cos(node.args[0], evaluate=False), node, reg))
        elif isinstance(node, (sp.asin, sp.acos)):
            x = node.args[0]
            out.append(Condition(Kind.NONNEGATIVE, sp.Add(1, -x, evaluate=False), node, reg))
            out.append(Condition(Kind.NONNEGATIVE, sp.Add(1, x, evaluate=False), node, reg))
        elif isinstance(node, sp.acosh):
            out.append(
                Condition(Kind.NONNEGATIVE, sp.Add(node.args[0], -1, evaluate=False), node, reg)
            )
        elif isinstance(node, sp.atanh):
            x = node.args[0]
            out.append(Condition(Kind.POSITIVE, sp.Add(1, -x, evaluate=False), node, reg))
            out.append(Condition(Kind.POSITIVE, sp.Add(1, x, evaluate=False), node, reg))

    def _piecewise(node, reg) -> None:
        out.append(Condition(Kind.COVERED, node, node, reg))
        before = sp.S.EmptySet
        for pair in node.args:
            e, c = pair.args
            for r in condition_relationals(c) or []:
                for side in (r.lhs, r.rhs):
                    rec(side, reg)
            where = _as_set(c, u)
            piece = reg if where is None or before is None else reg.intersect(where) - before
            rec(e, piece)
            before = None if where is None or before is None else before.union(where)

    rec(expr, region)
    return out


# ------------------------------------------------------------------------------ evaluation as written
class _Stop(Exception):
    def __init__(self, status: str, why: str, value=None):
        super().__init__(why)
        self.status, self.why, self.value = status, why, value


def value_at(expr, u, c) -> PointValue:
    """The written tree at the exact point ``u = c``, node by node (a Piecewise picks its first piece
    whose condition holds). Undefined: a division by an exact zero, a log of 0, tan at a pole, no
    piece applies; not real: a certified non-real node value (then the value is still computed)."""
    sp = _sp()
    first_bad: list = []

    def check(v, node):
        if v.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or v.is_finite is False:
            raise _Stop("undefined", f"{short_text(node)} = {short_text(v, 30)} at u = {c}", v)
        if v.is_real is not True:
            if not_real(v):
                if not first_bad:
                    first_bad.append(f"{short_text(node)} = {short_text(v, 30)} at u = {c}")
            elif real_ball(v) is None:
                raise _Stop("unknown", f"could not certify {short_text(node)} real at u = {c}")
        return v

    def truth(cond) -> bool:
        if cond in (sp.true, sp.false):
            return bool(cond)
        if isinstance(cond, sp.core.relational.Relational):
            d = ev(cond.lhs) - ev(cond.rhs)
            s = sign_at(d)
            if s is None or first_bad:
                raise _Stop("unknown", f"could not decide {short_text(cond)} at u = {c}")
            return {"<": s < 0, "<=": s <= 0, ">": s > 0, ">=": s >= 0}[cond.rel_op]
        if isinstance(cond, sp.And):
            return all(truth(a) for a in cond.args)
        if isinstance(cond, sp.Or):
            return any(truth(a) for a in cond.args)
        if isinstance(cond, sp.Not):
            return not truth(cond.args[0])
        raise _Stop("unknown", f"unsupported condition {short_text(cond)}")

    def ev(node):
        if node == u:
            return c
        if not node.args:
            return check(node, node)
        if isinstance(node, sp.Piecewise):
            for pair in node.args:
                if truth(pair.args[1]):
                    return ev(pair.args[0])
            raise _Stop("undefined", f"no piece of {short_text(node)} applies at u = {c}")
        vals = [ev(a) for a in node.args]
        if isinstance(node, sp.Pow):
            b, e = vals
            if b.is_zero is True and e.is_negative is True:
                raise _Stop("undefined", f"{short_text(node)} divides by zero at u = {c}", sp.zoo)
        v = rebuild(node, vals, evaluate=True)
        return check(v, node)

    try:
        value = ev(expr)
    except _Stop as stop:
        return PointValue(c, stop.status, stop.value, stop.why)
    except (
        ValueError,
        TypeError,
        ArithmeticError,
        NotImplementedError,
        AttributeError,
        RecursionError,
    ) as exc:
        return PointValue(c, "unknown", None, f"sympy failed at u = {c}: {type(exc).__name__}")
    if first_bad:
        return PointValue(c, "not real", value, first_bad[0])
    return PointValue(c, "defined", value)


# ------------------------------------------------------------------------------------- proving
def set_points(s) -> list:
    """A few exact points inside a sympy set of reals (end points first, then interior points)."""
    sp = _sp()
    out = []
    if s == sp.S.Reals:
        return [sp.Integer(0), sp.Integer(1), sp.Integer(-1)]
    parts = s.args if isinstance(s, sp.Union) else (s,)
    for part in parts[:6]:
        if isinstance(part, sp.FiniteSet):
            out.extend(list(part)[:3])
        elif isinstance(part, sp.Interval):
            lo, hi = part.inf, part.sup
            if lo.is_finite and hi.is_finite:
                out += [lo, hi, (lo + hi) / 2]
            elif hi.is_finite:
                out += [hi, hi - 1]
            elif lo.is_finite:
                out += [lo, lo + 1]
        elif isinstance(part, sp.ImageSet) and part.base_sets == (sp.S.Integers,):
            out += [part.lamda(0), part.lamda(1)]
        elif isinstance(part, sp.Complement):
            out += set_points(part.args[0])
        elif isinstance(part, sp.Intersection):
            for a in part.args:
                if a != sp.S.Reals:
                    out += set_points(a)
    return [x for x in out if x.is_real is True and x.is_finite is True]


def _prove(cond: Condition, u) -> tuple[bool, list]:
    """(proved, candidate points for a refutation)."""
    sp = _sp()
    if cond.kind is Kind.COVERED:
        covered = sp.S.EmptySet
        for pair in cond.node.args:
            s = _as_set(pair.args[1], u)
            if s is None:
                return False, []
            covered = covered.union(s)
        missing = cond.region - covered
        return missing == sp.S.EmptySet, set_points(missing) if missing != sp.S.EmptySet else []
    g = evaluated(cond.g)
    fact = {
        Kind.POSITIVE: g.is_positive,
        Kind.NONNEGATIVE: g.is_nonnegative,
        Kind.NONZERO: (g.is_zero is False and g.is_finite is True) or None,
    }[cond.kind]
    if fact is True:
        return True, []
    bad = {Kind.POSITIVE: g <= 0, Kind.NONNEGATIVE: g < 0, Kind.NONZERO: sp.Eq(g, 0)}[cond.kind]
    if bad in (sp.false, False):
        return True, []
    try:
        s = sp.solveset(bad, u, cond.region)
    except Exception:  # solveset raises NotImplementedError, ValueError, TypeError on many inputs
        return False, []
    if s == sp.S.EmptySet:
        return True, []
    try:
        return False, set_points(s)
    except Exception:  # an unusual set type: no candidate points from it
        return False, []


def _describe(pv: PointValue, whole) -> str:
    c = pv.point
    if pv.status == "undefined":
        if pv.value is None:
            return f"l({c}) is not defined ({pv.why})"
        return f"l({c}) = {short_text(pv.value, 30)} is not defined ({pv.why})"
    total = whole if whole is not None else pv.value
    if total is not None and total.is_real is not True:
        return f"l({c}) = {short_text(total, 40)} is not real ({pv.why})"
    return f"l({c}) is not defined: {pv.why} is not real"


def domain_check(expr, u, *, extra_points=()) -> DomainReport:
    """Prove every domain condition of the written tree on R, or refute one at an exact point."""
    sp = _sp()
    conds = conditions(expr, u)
    unproved, cands = [], []
    for cond in conds:
        ok, pts = _prove(cond, u)
        if not ok:
            unproved.append(cond)
            cands += pts
    if not unproved:
        return DomainReport(
            "holds",
            f"every domain condition of the expression as written proved on R "
            f"({len(conds)} condition{'s' * (len(conds) != 1)})",
            None,
            len(conds),
        )
    cands += list(extra_points) + [sp.nsimplify(x) for x in SAMPLE_POINTS]
    seen = set()
    for c in cands:
        if c in seen or len(seen) >= 40:
            continue
        seen.add(c)
        pv = value_at(expr, u, c)
        if pv.status in ("undefined", "not real"):
            return DomainReport("fails", _describe(pv, pv.value), c, len(conds))
    return DomainReport(
        "undecided",
        "could not prove "
        + "; ".join(x.text() for x in unproved[:3])
        + " on R, nor find a point where it fails",
        None,
        len(conds),
    )
