"""The claims of an OPTIMAL certificate re-derived from the data (`certify.check.checker`; docs/theory.md
section 4.6): the exact rows of the program, exact KKT conditions, the support classification and the
row tests behind the distance and direction bounds."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from certify.certificate import Certificate
from certify.check.rows import attention_rows, classification_rows
from certify.check.kron import KronGram, digit_bits, float_digits, int_digits, row_dots, to_ints
from certify.check.verified import inverse_diagonal_upper
from certify.classification import ClassificationProblem
from certify.exact import format_sci
from certify.limits import TIGHT_GROUPS

__all__ = ["Rows", "check_optimal"]

_ROWS = 8192  # rows of the exact products formed at once (bounds the transient Python integers)


class Rows:
    """Exact rows ``a_r = vec(l_r r_r^T) * 2**exp`` (attention) or ``l_r * 2**exp`` (decoder, and the
    max-margin rows of a classification problem, from `certify.check.rows`).

    Row order: example i, then token t, for every valid token ``t != alpha_i`` (padding tokens
    ``t >= lengths[i]`` give no row); ``r_r = z_i`` for every row of example i."""

    def __init__(self, problem, svm: str, alpha: tuple[int, ...]) -> None:
        if isinstance(problem, ClassificationProblem):  # plain rows (docs/theory.md section 7)
            index, self.L, self.exp = classification_rows(problem)
            ii = np.array([r[0] for r in index], dtype=np.int64)
            self.R, self.d, self._src = None, self.L.shape[1], None
        else:
            index, ii, self.L, self.R, self.exp, self._src = attention_rows(problem, svm, alpha)
            self.d = problem.d
        self.index, self._l2 = index, None  # _l2: every row's ||l_r||^2, once `Aw` ran on digits
        self.example = ii
        new = np.r_[True, ii[1:] != ii[:-1]] if len(ii) else np.zeros(0, dtype=bool)
        self.starts, self.group = (
            np.flatnonzero(new),
            np.cumsum(new) - 1,
        )  # per example: first row; per row: example
        self.N = len(self.index)
        self.L = self.L.reshape(self.N, self.d)
        self.m = self.d * self.d if self.R is not None else self.d

    def _fm(self, F):  # rows of d exact integers as a python-flint matrix
        import flint

        return flint.fmpz_mat(len(F), self.d, F.ravel().tolist())

    def Aw(self, w) -> list[int]:
        """``A w`` exactly: ``l_r^T w`` (decoder) or ``l_r^T (W z_i)`` with ``W z_i`` once per example."""
        import flint

        if self.R is None:
            return [
                int(x) for x in (self._fm(self.L) * flint.fmpz_mat(self.d, 1, list(w))).entries()
            ]
        V = (
            self._fm(self.R[self.starts]) * flint.fmpz_mat(self.d, self.d, list(w)).transpose()
        ).tolist()
        V = np.array(V, dtype=object).reshape(-1, self.d)
        if self._src is not None:  # digits of the rows from the float data (`certify.check.kron`)
            try:
                return self._digit_products(V)
            except ValueError:  # data of huge range: Python integers below
                self._l2 = None
        out: list[int] = []
        for r0 in range(0, self.N, _ROWS):  # a block of rows at a time: no N x d product array
            blk = slice(r0, r0 + _ROWS)
            out += [int(x) for x in (self.L[blk] * V[self.group[blk]]).sum(axis=1)]
        return out

    def _digit_products(self, V) -> list[int]:
        """``l_r . V[example]`` exactly for every row, and ``||l_r||^2`` (kept for `norms2`), from
        the rows' float digits (no Python integer per entry; docs/theory.md section 4.6)."""
        X, ta, tb, e = self._src
        B = digit_bits(self.d)
        Vd = np.stack(int_digits(V, B), axis=-1)
        out: list[int] = []
        self._l2 = []
        for r0 in range(0, self.N, _ROWS):
            blk = slice(r0, r0 + _ROWS)
            ii = self.example[blk]
            with np.errstate(over="ignore"):  # an Inf: float_digits refuses, the fallback runs
                a, b = np.ldexp(X[ii, ta[blk]], -e), np.ldexp(X[ii, tb[blk]], -e)
            Ld = float_digits(a, b, B)
            out += to_ints(row_dots(Ld, Vd[self.group[blk]], B), B)
            self._l2 += to_ints(row_dots(Ld, Ld, B), B)
        return out

    def norms2(self, rows) -> list[int]:
        """Exact ``||l_r||^2`` of ``rows`` (from `Aw`'s pass when it ran on digits)."""
        if self._l2 is not None:
            return [self._l2[i] for i in rows]
        return [
            int(v)
            for k0 in range(0, len(rows), _ROWS)
            for v in (self.L[rows[k0 : k0 + _ROWS]] ** 2).sum(axis=1)
        ]

    def ATlam(self, lam) -> list[int]:
        """``A^T lam`` exactly: ``sum_r lam_r l_r`` (decoder), or ``vec(sum_i S_i z_i^T)`` with
        ``S_i = sum_{r of example i} lam_r l_r`` (attention: every row of example i has ``r_r = z_i``)."""
        lam = np.array([int(k) for k in lam], dtype=object)
        if self.R is None:
            return [int(x) for x in (self.L * lam[:, None]).sum(axis=0)] if self.N else [0] * self.d
        # a block of examples at a time (about _ROWS rows): no N x d array of products
        st, per = self.starts, max(1, _ROWS * len(self.starts) // max(1, self.N))
        parts = [np.zeros((0, self.d), dtype=object)]
        for e0 in range(0, len(st), per):
            r0, r1 = int(st[e0]), (int(st[e0 + per]) if e0 + per < len(st) else self.N)
            weighted = self.L[r0:r1] * lam[r0:r1, None]
            parts.append(np.add.reduceat(weighted, st[e0 : e0 + per] - r0, axis=0))
        S = self._fm(np.concatenate(parts, axis=0))
        return [int(x) for x in (S.transpose() * self._fm(self.R[self.starts])).entries()]

    def key(self, r: int) -> tuple:
        """Exact identity of row r: primitive parts of l (and z) and the product of their contents."""

        def prim(v):
            v = [int(k) for k in v]
            g = math.gcd(*v)
            g = -g if g and next(k for k in v if k) < 0 else g
            return (tuple(k // g for k in v), g) if g else (tuple(v), 0)

        kl = prim(self.L[r])
        if self.R is None:
            return kl
        kz = prim(self.R[r])
        return kl[0], kz[0], kl[1] * kz[1]

    def gram(self, rows: list[int]) -> tuple:
        """The exact Gram matrix of ``rows`` as the arguments of `inverse_diagonal_upper`: ``L L^T``
        (decoder, an array of exact integers) or ``(L L^T) o (Z Z^T)`` (attention, a `KronGram`
        formed a block of rows at a time from its factors)."""

        def gram(F):
            Fm = self._fm(F)
            return np.array((Fm * Fm.transpose()).tolist(), dtype=object).reshape(len(F), len(F))

        if self.R is None:
            return (gram(self.L[rows]),)
        ex, inv = np.unique(self.example[rows], return_inverse=True)  # the z Gram once per example
        return (KronGram(self.L[rows], self.R[np.searchsorted(self.example, ex)], inv.ravel()),)


def _q(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _powsum(ints, e: int, a: Fraction):
    """Ball of ``sum |k 2**e|^a`` over nonzero integers k (``x^(r/s)`` as the s-th root of ``x^r``:
    at 10^5 bits 10-100 times faster than arb's exp-log power, and as rigorous)."""
    from flint import arb

    nz = [abs(int(k)) for k in ints if k]
    if not nz:
        return arb(0)
    big = max(k.bit_length() for k in nz)
    r, t, aa = a.numerator, a.denominator, _q(a)
    power = (lambda x: (x**r).root(t)) if r <= 4096 and t <= 4096 else (lambda x: x**aa)
    s = sum((power(arb(k) * arb(2) ** (-big)) for k in nz), arb(0))
    return s * arb(2) ** ((big + e) * aa)


def _top(x):
    """Exact ball at the upper endpoint of x, clipped at 0 (for monotone upper bounds); +inf when
    x has no finite upper end (nan, e.g. a power of a ball straddling 0): never a silent 0."""
    from flint import arb

    u = arb(x.upper())
    if not u.is_finite():
        return arb("inf")
    return u if u > 0 else arb(0)


def check_optimal(rows: Rows, c: Certificate, add) -> None:
    from flint import arb

    p, w, lam = c.p, c.w, c.lam
    q = p / (p - 1)
    if w is None or lam is None or len(w) != rows.m or len(lam) != rows.N:
        add("vectors", False, f"need w of length {rows.m} and lam of length {rows.N}")
        return
    for name in (
        "opt_lower",
        "opt_upper",
        "distance_upper",
        "direction_error_upper",
        "bregman_upper",
    ):
        if getattr(c, name) is None:
            add(name, False, "missing")
            return
    Aw = rows.Aw(w.ints)  # A w = Aw * 2**(exp + w.exp) / w.den
    scale_w = Fraction(2) ** (rows.exp + w.exp) / w.den
    amin = min(Aw) * scale_w
    add("w_feasible", amin >= 1, f"min A w = {format_sci(amin, 17)}")
    lam_ok = all(k >= 0 for k in lam.ints) and any(lam.ints)
    add(
        "lam_nonnegative",
        lam_ok,
        "lam >= 0 and lam != 0" if lam_ok else "a multiplier is negative or all are zero",
    )
    if amin < 1 or not lam_ok:
        return
    U = rows.ATlam(lam.ints)  # A^T lam = U * 2**(exp + lam.exp) / lam.den
    pa, qa, two = _q(p), _q(q), arb(2)
    ub = _powsum(w.ints, w.exp, p) ** (1 / pa) / w.den
    uq = _powsum(U, rows.exp + lam.exp, q) / arb(lam.den) ** qa  # ||A^T lam||q^q
    a = arb(sum(lam.ints)) * two**lam.exp / lam.den
    if c.exact_kkt:
        kkt = _exact_kkt(rows, c, Aw, U)
        add(
            "exact_kkt",
            kkt is None,
            kkt or "w = A^T lam, lam >= 0, complementary slackness (exact)",
        )
        if kkt is not None:
            return
        lb, dist = ub, arb(0)  # w is the optimum: OPT = ||w||_p exactly
    else:
        if not any(U):
            add("opt_lower", False, "A^T lam = 0")
            return
        lb = a / uq ** (1 / qa)
        if p <= 2:  # constants from exact rationals: pa - 1 may straddle 0 for p near 1
            dist = (_top(ub * ub - lb * lb) / _q(p - 1)).sqrt()
        else:
            dist = (_top(ub**pa - lb**pa) * (two ** _q(p - 1) - 1)) ** (1 / pa)
        dist = _top(dist)
    add("opt_upper", _q(c.opt_upper) >= ub, "claimed upper bound >= ||w||_p")
    add("opt_lower", _q(c.opt_lower) <= lb, "claimed lower bound <= 1^T lam / ||A^T lam||q")
    add("distance_upper", _q(c.distance_upper) >= dist, "claimed >= recomputed ||w - w*||_p bound")
    lb_low = arb(lb.lower())  # a lower end <= 0 (or nan) proves nothing about the direction
    direction = arb(0) if dist == 0 else _top(2 * dist / lb_low) if lb_low > 0 else arb("inf")
    add("direction_error_upper", _q(c.direction_error_upper) >= direction, "claimed >= 2 dist / LB")
    if direction == 0:
        breg = arb(0)
    elif p <= 2:
        breg = two ** _q(2 - p) / pa * direction**pa
    else:
        breg = _q((p - 1) / 2) * two ** _q((p - 2) / p) * direction * direction
    add(
        "bregman_upper",
        _q(c.bregman_upper) >= breg,
        "claimed >= Bregman bound of the direction error",
    )
    _check_support(rows, c, Aw, scale_w, lam, dist, ub, lb, a, uq, add)


def _exact_kkt(rows: Rows, c: Certificate, Aw, U) -> str | None:
    """None if w = A^T lam exactly and lam_i > 0 only where a_i^T w = 1 (exactly); else the reason."""
    if c.p != 2:
        return "exact_kkt is only defined for p = 2"
    w, lam = c.w, c.lam
    # w_j * 2**w.exp / w.den == U_j * 2**(exp + lam.exp) / lam.den, compared as integers
    e1, e2 = w.exp, rows.exp + lam.exp
    lo = min(e1, e2)
    for wj, uj in zip(w.ints, U):
        if (wj << (e1 - lo)) * lam.den != (uj << (e2 - lo)) * w.den:
            return "w != A^T lam"
    scale = Fraction(2) ** (rows.exp + w.exp) / w.den
    if any(k > 0 and Aw[i] * scale != 1 for i, k in enumerate(lam.ints)):
        return "complementary slackness fails"
    return None


def _check_support(rows: Rows, c: Certificate, Aw, scale_w, lam, dist, ub, lb, a, uq, add) -> None:
    import flint
    from flint import arb

    sup = c.support
    if sup is None:
        return
    pos = {r: k for k, r in enumerate(rows.index)}
    claimed = [tuple(r) for part in sup for r in part]
    ok = sorted(claimed) == sorted(rows.index)
    add(
        "support_partition",
        ok,
        "tight, inactive, undecided partition the constraint rows"
        if ok
        else "support lists are not a partition of the constraint rows",
    )
    if not ok:
        return
    p, q = c.p, c.p / (c.p - 1)
    pa, qa, two = _q(p), _q(q), arb(2)
    inactive = [pos[tuple(r)] for r in sup.inactive]
    tight = [pos[tuple(r)] for r in sup.tight]
    if c.exact_kkt:
        bad = [rows.index[i] for i in inactive if not Aw[i] * scale_w > 1]
        bad += [rows.index[i] for i in tight if Aw[i] * scale_w != 1]
        add(
            "support",
            not bad,
            f"rows misclassified: {bad[:3]}" if bad else "exact a_i^T w* = 1 / > 1",
        )
        return
    # dual error eps of the multipliers (needs the full precision: UB and LB nearly cancel)
    mfac = arb(rows.m) ** _q(1 / p - Fraction(1, 2)) if p < 2 else arb(1)
    if p <= 2:
        gap = _top(_top(ub**pa - lb**pa) / pa)
        eps = (qa * gap * (two ** _q(q - 1) - 1)) ** (1 / qa) if gap > 0 else arb(0)
        t = (a / uq) ** _q(p - 1)
    else:
        eps = _top((_top(ub * ub - lb * lb) / _q(q - 1)).sqrt())
        t = a / uq ** (2 / qa)
    with flint.ctx.workprec(128):  # the per-row tests need no more than this
        _rows_tests(rows, c, Aw, scale_w, lam, dist, inactive, tight, mfac, eps, t, add)


def _rows_tests(rows, c, Aw, scale_w, lam, dist, inactive, tight, mfac, eps, t, add) -> None:
    from flint import arb

    q = c.p / (c.p - 1)
    qa, two = _q(q), arb(2)
    bad = []
    # exact pre-test: ||a_i||q <= c ||l_i||_2 ||z_i||_2 (c = 1 if q >= 2, else m^(1/q - 1/2)), each norm at
    # most isqrt(sum of squares) + 1; a row it leaves open gets the ball test below
    d_up = _top(
        arb(1 if q >= 2 else rows.m) ** _q(max(1 / q - Fraction(1, 2), Fraction(0)))
        * dist
        * two**rows.exp
    )
    d_up = (
        Fraction(int(d_up.mid().man_exp()[0])) * Fraction(2) ** int(d_up.mid().man_exp()[1])
        if d_up.is_finite()
        else None
    )
    sq = [[math.isqrt(v) + 1 for v in rows.norms2(inactive)] if inactive else None, None]
    if rows.R is not None and inactive:  # every row of example i has r = z_i: once per example
        zn = [math.isqrt(int(v)) + 1 for v in (rows.R[rows.starts] ** 2).sum(axis=1)]
        sq[1] = [zn[int(rows.group[i])] for i in inactive]
    p1, q1 = scale_w.numerator, scale_w.denominator  # scale_w = p1/q1, d_up = p2/(q1 q2)
    q2, p2 = (d_up.denominator, d_up.numerator * q1) if d_up is not None else (1, 0)
    for k, i in enumerate(inactive):
        if d_up is not None and (Aw[i] * p1 - q1) * q2 > sq[0][k] * (sq[1][k] if sq[1] else 1) * p2:
            continue  # a_i^T w - 1 > ||l_i|| ||z_i|| d_up, in integers: (Aw p1/q1 - 1) > S p2/q2
        l_q = _powsum(rows.L[i], 0, q) ** (1 / qa) if any(rows.L[i]) else arb(0)
        if rows.R is not None:
            l_q = l_q * (_powsum(rows.R[i], 0, q) ** (1 / qa) if any(rows.R[i]) else arb(0))
        norm = l_q * two**rows.exp
        if not (_q(Aw[i] * scale_w - 1) - norm * dist).lower() > 0:
            bad.append(rows.index[i])
            if len(bad) == 3:  # enough to reject: a false claim costs no more ball tests
                break
    add(
        "support_inactive",
        not bad,
        f"not certainly inactive: {bad[:3]}"
        if bad
        else f"{len(inactive)} rows: a_i^T w - 1 > ||a_i||q dist",
    )
    if not tight:
        return
    if any(lam.ints[i] for i in inactive):
        add("support_tight", False, "lam is nonzero on a row claimed inactive")
        return
    claimed, cap = set(inactive), min(rows.m, TIGHT_GROUPS)
    groups: dict = {}  # exactly coinciding rows share one multiplier (their sum is unique)
    for i in (i for i in range(rows.N) if i not in claimed):
        groups.setdefault(rows.key(i), []).append(i)
        if (
            len(groups) > cap
        ):  # beyond m rows M is singular; beyond TIGHT_GROUPS: the checker's limit
            add(
                "support_tight",
                False,
                f"more than {cap} distinct rows are not claimed inactive; tight rows are "
                f"proven over at most min(m, {TIGHT_GROUPS}) = {cap} (m = {rows.m} variables)",
            )
            return
    diag = inverse_diagonal_upper(*rows.gram([g[0] for g in groups.values()]))  # exact, verified
    if diag is None:
        add("support_tight", False, "A_S' A_S'^T (distinct rows) not provably invertible")
        return
    proven = set()
    for k, grp in enumerate(groups.values()):
        rnorm = _q(diag[k]).sqrt() * two ** (-rows.exp) * mfac
        mult = t * arb(sum(lam.ints[i] for i in grp)) * two**lam.exp / lam.den - rnorm * eps
        if diag[k] > 0 and mult.lower() > 0:
            proven.update(grp)
    bad = [rows.index[i] for i in tight if i not in proven]
    add(
        "support_tight",
        not bad,
        f"multiplier not provably positive: {bad[:3]}"
        if bad
        else f"{len(tight)} rows with a provably positive unique (group) multiplier",
    )
