"""Rigorous bounds from exact vectors (docs/theory.md section 4, docs/theory.md section 4.1).

Given a feasible dyadic point ``w`` (``min A w >= 1`` checked exactly) and a dual vector
``lam >= 0``: ``OPT <= UB = ||w||_p`` and ``OPT >= LB = 1^T lam / ||A^T lam||_q``. Products are
exact integers; powers and roots are python-flint ``arb`` balls; every certified number is the
outward endpoint of a ball, returned as a `Fraction`. Then the distance, direction and Bregman
bounds and the support classification (certainly inactive / certainly tight via a unique
multiplier on the rows not certified inactive). For p = 2 the exact rational KKT certificate.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple, Sequence

import flint
import numpy as np

from certify.certificate import ExactVector, SupportClass
from certify.limits import TIGHT_GROUPS
from certify.ops import ExactOps

__all__ = [
    "Bounds",
    "ball_bounds",
    "make_feasible",
    "exact_kkt_p2",
    "arb_lower",
    "arb_upper",
    "norm_pow",
]


class Bounds(NamedTuple):
    opt_lower: Fraction
    opt_upper: Fraction
    distance_upper: Fraction
    direction_error_upper: Fraction
    bregman_upper: Fraction
    support: SupportClass
    w: ExactVector
    lam: ExactVector
    exact_kkt: bool
    singular: bool = False  # A_S' A_S'^T not provably invertible: more precision will not help
    # log2 of the factor by which the dual error must shrink for every undecided row with a
    # multiplier to be proven tight (float, a solver hint only; None when no such row)
    short_log2: float | None = None


def _fr(man_exp) -> Fraction:
    man, ex = man_exp
    man, ex = int(man), int(ex)
    return Fraction(man << ex) if ex >= 0 else Fraction(man, 1 << (-ex))


def arb_upper(x) -> Fraction | None:
    return _fr(x.upper().man_exp()) if x.is_finite() else None


def arb_lower(x) -> Fraction | None:
    return _fr(x.lower().man_exp()) if x.is_finite() else None


def _ab(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _up(x):
    """The exact upper endpoint of ball x as an exact ball (for monotone functions)."""
    from flint import arb

    return arb(x.upper())


def _nonneg_up(x):
    """Upper end of x clipped at 0; +inf when x has no finite upper end (nan), never a silent 0."""
    from flint import arb

    u = arb(x.upper())
    if not u.is_finite():
        return arb("inf")
    return u if u > 0 else arb(0)


def norm_pow(ints: Sequence[int], e: int, a):
    """Ball of ``sum_j |ints_j 2**e|^a`` (a an arb exponent > 0), scaled so large integers keep precision."""
    from flint import arb

    nz = [abs(int(k)) for k in ints if k]
    if not nz:
        return arb(0)
    big = max(k.bit_length() for k in nz)
    two = arb(2) ** (-big)
    s = arb(0)
    for k in nz:
        s += (arb(k) * two) ** a
    return s * arb(2) ** ((big + e) * a)


def make_feasible(ops: ExactOps, W: Sequence[int], w_exp: int, *, bits: int) -> ExactVector | None:
    """Scale ``w`` by a dyadic factor so that ``min A w >= 1`` exactly (None if ``min A w <= 0``)."""
    s = min(ops.matvec(W))
    if s <= 0:
        return None
    k2 = s.bit_length() + bits
    c = -(-(1 << k2) // s)  # ceil
    e = ops.exp + w_exp
    return ExactVector(tuple(int(k) * c for k in W), w_exp - k2 - e, 1)


def ball_bounds(
    ops: ExactOps,
    p: Fraction,
    w: ExactVector,
    lam: ExactVector,
    *,
    bits: int,
    classify: bool = True,
) -> Bounds | None:
    """All bounds of docs/theory.md section 4 for a feasible dyadic ``w`` and a dyadic ``lam >= 0``."""
    from flint import arb

    q = p / (p - 1)
    with flint.ctx.workprec(bits + 64):
        pa, qa = _ab(p), _ab(q)
        Aw = ops.matvec(w.ints)
        e_aw = ops.exp + w.exp
        one = Fraction(2) ** (-e_aw)
        if any(Fraction(k) < one for k in Aw) or w.den != 1 or lam.den != 1:
            return None
        if any(k < 0 for k in lam.ints) or not any(lam.ints):
            return None
        ub = norm_pow(w.ints, w.exp, pa) ** (1 / pa)
        U = ops.rmatvec(lam.ints)
        if not any(U):
            return None
        uq = norm_pow(U, ops.exp + lam.exp, qa)  # ||A^T lam||_q^q
        a = arb(sum(lam.ints)) * arb(2) ** lam.exp
        lb = a / uq ** (1 / qa)
        two = arb(2)
        if p <= 2:  # constants from exact rationals (pa - 1 may straddle 0 for p near 1)
            dist = (_nonneg_up(ub * ub - lb * lb) / _ab(p - 1)).sqrt()
        else:
            dist = (_nonneg_up(ub**pa - lb**pa) * (two ** _ab(p - 1) - 1)) ** (1 / pa)
        dist = _nonneg_up(dist)
        lb_low = arb(lb.lower())
        if not lb_low > 0:  # no positive lower bound of OPT: nothing to certify
            return None
        direction = _nonneg_up(2 * dist / lb_low)
        if p <= 2:
            breg = (two ** _ab(2 - p) / pa) * direction**pa if direction > 0 else arb(0)
        else:
            breg = _ab((p - 1) / 2) * two ** _ab((p - 2) / p) * direction * direction
        support, singular = SupportClass((), (), tuple(ops.cs.index[i] for i in ops.rows)), False
        short = None
        if classify:
            support, singular, short = _classify(ops, p, q, Aw, e_aw, lam, ub, lb, a, uq, dist)
        res = Bounds(
            arb_lower(lb),
            arb_upper(ub),
            arb_upper(dist),
            arb_upper(direction),
            arb_upper(_up(breg)),
            support,
            w,
            lam,
            False,
            singular,
            short,
        )
    if any(v is None for v in res[:5]):
        return None
    return res


def _classify(
    ops, p, q, Aw, e_aw, lam, ub, lb, a, uq, dist
) -> tuple[SupportClass, bool, float | None]:
    """Certainly inactive / certainly tight rows (docs/theory.md section 4, "Support classification")."""
    from flint import arb

    pa, qa = _ab(p), _ab(q)
    two = arb(2)
    # dual error eps and psi/F2 scaling t at full precision (UB and LB nearly cancel)
    if p <= 2:
        gap = _nonneg_up(_nonneg_up(ub**pa - lb**pa) / pa)
        eps = (qa * gap * (two ** _ab(q - 1) - 1)) ** (1 / qa) if gap > 0 else arb(0)
        t = (a / uq) ** _ab(p - 1)
    else:
        eps = _nonneg_up((_nonneg_up(ub * ub - lb * lb) / _ab(q - 1)).sqrt())
        t = a / uq ** (2 / qa)
    with flint.ctx.workprec(128):
        return _classify_rows(ops, p, q, Aw, e_aw, lam, dist, eps, t)


#: largest set of rows not certified inactive whose multipliers are bounded (an n x n exact Gram
#: matrix and its verified inverse diagonal); beyond it those rows stay undecided. The checker's own
#: limit: it refuses tight claims over more rows (docs/formats.md "Limits the checker enforces")
TIGHT_LIMIT = TIGHT_GROUPS


def _classify_rows(ops, p, q, Aw, e_aw, lam, dist, eps, t):
    """(tight / inactive / undecided rows, singular, short_log2 of `Bounds`)."""
    from flint import arb

    from certify.classify import inactive_mask
    from certify.check.verified import inverse_diagonal_upper

    two = arb(2)
    index = [ops.cs.index[i] for i in ops.rows]
    qfac = (
        arb_upper(arb(ops.m) ** _ab(1 / q - Fraction(1, 2))) if q < 2 else Fraction(1)
    )  # ||a||_q / ||a||_2
    dist_up = arb_upper(dist)
    if dist_up is None or qfac is None:
        inactive_rows = np.zeros(ops.N, dtype=bool)
    else:  # twice the distance: the checker's own balls may come out a little wider
        inactive_rows = inactive_mask(ops, Aw, e_aw, lam.ints, 2 * dist_up, qfac)
    inactive = set(np.flatnonzero(inactive_rows).tolist())
    rest = [i for i in range(ops.N) if i not in inactive]
    tight = set()
    short: float | None = None
    # coinciding rows form one group; the group's total multiplier is the unique quantity
    rep = ops.representatives()
    groups: dict[int, list[int]] = {}
    for i in rest:
        groups.setdefault(int(rep[i]), []).append(i)
    heads = [g[0] for g in groups.values()]
    diag = None
    if heads and len(heads) <= TIGHT_LIMIT:
        diag = inverse_diagonal_upper(*ops.subset(heads).gram_factors())
        if diag is not None:
            mfac = arb(ops.m) ** _ab(1 / p - Fraction(1, 2)) if p < 2 else arb(1)
            scale = two ** (-ops.exp)
            for k, rows in enumerate(groups.values()):
                rnorm = _nonneg_up(_ab(diag[k])).sqrt() * scale * mfac
                held = t * arb(sum(lam.ints[i] for i in rows)) * two**lam.exp
                if (held - rnorm * eps).lower() > 0:
                    tight.update(rows)
                elif held > 0:
                    gap = _log2_ratio(rnorm * eps, held)
                    short = gap if short is None else max(short, gap)
    undecided = [i for i in range(ops.N) if i not in inactive and i not in tight]
    singular = bool(heads) and diag is None  # more precision will not decide the undecided rows
    return (
        SupportClass(
            tuple(index[i] for i in sorted(tight)),
            tuple(index[i] for i in sorted(inactive)),
            tuple(index[i] for i in undecided),
        ),
        singular,
        (short if undecided and short is not None and math.isfinite(short) else None),
    )


def _log2_ratio(x, y) -> float:
    """log2(x / y) of two positive arb balls, from their midpoints (a float hint, never evidence;
    -inf or inf when a midpoint is 0 or not finite)."""
    from flint import arb

    try:
        r = (x / y).mid()
        return float((arb(r).log() / arb(2).log()).mid()) if r > 0 else -math.inf
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.inf


def exact_kkt_p2(
    ops: ExactOps, support: Sequence[int], *, bits: int, weights=None
) -> Bounds | None:
    """p = 2: ``lam_S = (A_S A_S^T)^{-1} 1``, ``w* = A_S^T lam_S`` in exact rationals; None if not KKT.

    Dependent rows in S are thinned to an exactly independent subset (largest ``weights`` first,
    e.g. the float multipliers); rows left out are then classified by their exact slack."""
    from flint import fmpq_mat

    S = sorted(int(i) for i in support)
    if not S:
        return None
    sub = ops.subset(S)
    if sub.gram().rank() < len(S):  # dependent active rows: keep an exactly independent subset
        keep: list[int] = []
        for i in sorted(S, key=lambda r: -weights[r] if weights is not None else r):
            if ops.subset(keep + [i]).gram().rank() == len(keep) + 1:
                keep.append(i)
        S = sorted(keep)
        sub = ops.subset(S)
    try:
        x = fmpq_mat(sub.gram()).solve(fmpq_mat(len(S), 1, [1] * len(S)))
    except ZeroDivisionError:
        return None
    vals = [Fraction(int(v.p), int(v.q)) for v in x.entries()]
    if any(v <= 0 for v in vals):
        return None
    den = math.lcm(*[v.denominator for v in vals])
    X = [int(v * den) for v in vals]
    Wint = sub.rmatvec(X)  # w* = Wint * 2**(-exp) / den
    Aw = ops.matvec(Wint)  # A w* = Aw / den
    if any(k < den for k in Aw):
        return None
    if any(Aw[i] != den for i in S):
        return None
    lam_full = [0] * ops.N
    for i, v in zip(S, X):
        lam_full[i] = v
    opt2 = Fraction(sum(k * k for k in Wint)) / (Fraction(2) ** (2 * ops.exp) * den * den)
    with flint.ctx.workprec(bits + 64):
        r = _ab(opt2).sqrt()
        lo, hi = arb_lower(r), arb_upper(r)
    index = [ops.cs.index[i] for i in ops.rows]
    tight = tuple(index[i] for i in range(ops.N) if Aw[i] == den)
    inactive = tuple(index[i] for i in range(ops.N) if Aw[i] > den)
    w = ExactVector(tuple(Wint), -ops.exp, den)
    lam = ExactVector(tuple(lam_full), -2 * ops.exp, den)
    return Bounds(
        lo,
        hi,
        Fraction(0),
        Fraction(0),
        Fraction(0),
        SupportClass(tight, inactive, ()),
        w,
        lam,
        True,
    )
