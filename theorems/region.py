"""The initialization hypothesis ``init_in_region(W0, mu, R, p)`` (docs/theory.md section 5, Theorems 8-11).

Requires ``D_psi(Wbar_mm, Wbar(0)) <= mu`` and ``||W(0)||_p >= R`` with ``Wbar = W / ||W||_p``.
Both are enclosed rigorously:

* For unit vectors A, B (``||A||_p = ||B||_p = 1``) the Bregman divergence simplifies exactly to
  ``D_psi(A, B) = 1 - <grad psi(B), A>`` (since ``psi(A) = psi(B) = 1/p`` and
  ``<grad psi(B), B> = 1``). With ``u = w/||w||_p`` the certificate's exact feasible point and
  ``delta`` its ``direction_error_upper``, Hoelder and ``||grad psi(B)||_q = ||B||_p^{p-1} = 1`` give
  ``|D_psi(Wbar_mm, B) - D_psi(u, B)| <= delta``. ``D_psi(u, B)`` is evaluated in arb balls on the
  exact data (W0's float64 entries are dyadic, w is rational).
* ``||W0||_p`` is enclosed in arb.

mu and R are inputs (the theorem's admissible values are data dependent and not invented here);
the report also encloses the data quantities they depend on (docs/theory.md section 5): OPT = ||W_mm||_p,
the margin gap between support and non-support logits under W_mm, the score gap between alpha and
its support tokens, and ``max ||x_it||_2 ||z_i||_2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from flint import arb

from certify.errors import MdcertError
from certify.exact import conjugate, format_exact, format_sci, parse_nonnegative, parse_p
from theorems.balls import abs_pow, arb_dyadic, arb_fraction, arb_of_float, enclosure
from theorems.context import CheckContext, Predicate, as_context
from theorems.verdict import Evidence, HypothesisReport, Method, Verdict

__all__ = ["InitInRegion", "init_in_region", "data_quantities", "check_matrix"]

_PREC = 256


def check_matrix(W: Any, d: int, name: str = "W0") -> np.ndarray:
    """Validate a (d, d) finite float64 matrix (MdcertError otherwise)."""
    try:
        arr = np.asarray(W)
        if arr.dtype.kind not in "biuf":
            raise TypeError
        arr = np.array(arr, dtype=np.float64)
    except (TypeError, ValueError):
        got = f"dtype {W.dtype}" if hasattr(W, "dtype") else type(W).__name__
        raise MdcertError(
            f"{name} must be a real numeric (d, d) array, got {got}; save float64 values"
        ) from None
    if arr.shape != (d, d):
        raise MdcertError(
            f"{name} must have shape ({d}, {d}) to match the problem, got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise MdcertError(f"{name} contains NaN or Inf; give a finite matrix")
    return arr


def _ball_norm_p(values: list[arb], p: arb) -> tuple[arb, list[arb]]:
    """``(||v||_p, [|v_j|^(p-1)])`` in balls."""
    pm1 = p - 1
    powers = [abs_pow(v, pm1) for v in values]
    total = sum((abs(v) * pw for v, pw in zip(values, powers)), arb(0))
    return total ** (1 / p), powers


def data_quantities(ctx: CheckContext, cert, alpha: tuple[int, ...]) -> list[Evidence]:
    """Enclosures of the data quantities of docs/theory.md section 5 (informational evidence)."""
    out: list[Evidence] = []
    prob = ctx.problem
    p = cert.p
    if cert.opt_lower is not None:
        out.append(
            Evidence(
                "OPT = ||W_mm||_p",
                cert.opt_lower,
                cert.opt_upper,
                Method.INTERVAL,
                detail="certified SVM bounds",
            )
        )
    # max ||x_it||_2 ||z_i||_2
    X, z = prob.exact("X"), prob.exact("z")
    xs = (X.as_object() ** 2).sum(axis=2)  # (n, T) exact ints, scale 2^(2 eX)
    zs = (z.as_object() ** 2).sum(axis=1)  # (n,)
    prod = max(int(xs[i, t]) * int(zs[i]) for i in range(prob.n) for t in range(prob.T))
    with flint.ctx.workprec(_PREC):
        val = arb_dyadic(prod, 2 * (X.exp + z.exp)).sqrt()
        out.append(
            Evidence(
                "max_it ||x_it||_2 ||z_i||_2",
                *enclosure(val),
                Method.INTERVAL,
                detail="exact squared norms, one sqrt in arb",
            )
        )
    support = cert.support
    if support is None:
        return out
    gamma, gexp = prob.token_scores_exact()
    scale = Fraction(2) ** gexp

    def gap(r):
        return Fraction(int(gamma[r[0], alpha[r[0]]] - gamma[r[0], r[1]])) * scale

    tight, und = list(support.tight), list(support.undecided)
    if tight or und:
        lo = min(gap(r) for r in tight + und)
        hi = min(gap(r) for r in tight) if tight else max(gap(r) for r in und)
        out.append(
            Evidence(
                "score gap min_{t in T_i} (gamma_{i,alpha_i} - gamma_it)",
                lo,
                hi,
                Method.INTERVAL,
                detail="exact scores over the certified support set",
            )
        )
    # margin gap of non-support rows under W_mm: min over inactive rows of a_r^T w* - 1
    if support.inactive and cert.w is not None and cert.distance_upper is not None:
        system = ctx.constraints(svm="attention", alpha=alpha)
        pos = {tuple(r): k for k, r in enumerate(system.index)}
        rows, rexp = system.exact_rows()
        w = cert.w
        q = conjugate(p)
        with flint.ctx.workprec(_PREC):
            qa = arb_fraction(q)
            dist = arb_fraction(cert.distance_upper)
            L, Rt = system.left.as_object(), system.right.as_object()
            los, his = [], []
            for r in support.inactive:
                k = pos[tuple(r)]
                aw = (
                    Fraction(int(rows[k].dot(np.array(w.ints, dtype=object))))
                    * Fraction(2) ** (rexp + w.exp)
                    / w.den
                )
                # ||vec(l r^T)||_q = ||l||_q ||r||_q
                nl = sum((abs_pow(arb(int(c)), qa) for c in L[k]), arb(0)) ** (1 / qa)
                nr = sum((abs_pow(arb(int(c)), qa) for c in Rt[k]), arb(0)) ** (1 / qa)
                norm = nl * nr * arb_dyadic(1, system.left.exp + system.right.exp)
                centre = arb_fraction(aw - 1)
                los.append(enclosure(centre - norm * dist)[0])
                his.append(enclosure(centre + norm * dist)[1])
            out.append(
                Evidence(
                    "margin gap min_{t not in T_i} (x_{i,alpha_i} - x_it)^T W_mm z_i - 1",
                    min(los),
                    min(his),
                    Method.INTERVAL,
                    detail="a_r^T w - 1 +/- ||a_r||_q ||w - W_mm||_p over certified inactive rows",
                )
            )
    return out


@dataclass(frozen=True, eq=False)
class InitInRegion(Predicate):
    """``D_psi(Wbar_mm, Wbar(0)) <= mu`` and ``||W(0)||_p >= R`` (docs/theory.md section 5.4).

    Attributes:
        W0: the initialization (d, d) float64.
        mu: admissible Bregman radius (input; None: only the enclosures are reported).
        R: admissible norm (input; None: only the enclosures are reported).
        p: exact exponent.
        alpha: token indices of W_mm.
    """

    W0: Any
    mu: Any = None
    R: Any = None
    p: Any = 2
    alpha: Any = None
    name = "init_in_region"

    def enclose(self, ctx: CheckContext) -> tuple[Evidence, Evidence, Any]:
        """Enclosures of D_psi(Wbar_mm, Wbar(0)) and ||W(0)||_p (informational evidence) and the certificate."""
        p = parse_p(self.p)
        prob = ctx.problem
        W0 = check_matrix(self.W0, prob.d)
        alpha = ctx.alpha(self.alpha)
        cert = ctx.certificate(p, svm="attention", alpha=alpha)
        if not np.any(W0):  # ||W(0)||_p = 0 exactly; the direction W(0)/||W(0)||_p does not exist
            return (
                Evidence(
                    "D_psi(Wbar_mm, Wbar(0))",
                    None,
                    None,
                    Method.EXACT,
                    detail="W(0) = 0: its direction W(0)/||W(0)||_p is undefined",
                ),
                Evidence.point("||W(0)||_p", 0, method=Method.EXACT, detail="W(0) = 0"),
                cert,
            )
        with flint.ctx.workprec(_PREC):
            pa = arb_fraction(p)
            b = [arb_of_float(float(x)) for x in W0.ravel()]
            n0, powers = _ball_norm_p(b, pa)
            norm_ev = Evidence(
                "||W(0)||_p",
                *enclosure(n0),
                Method.INTERVAL,
                detail="arb on the exact float64 entries",
            )
            status = getattr(cert.status, "value", cert.status)
            if status == "optimal" and not ctx.checked(cert, p=p, svm="attention", alpha=alpha):
                status = "optimal, but rejected by the independent checker"
            if status != "optimal" or cert.w is None or cert.direction_error_upper is None:
                d_ev = Evidence(
                    "D_psi(Wbar_mm, Wbar(0))",
                    None,
                    None,
                    Method.SOLVER,
                    detail=f"no certified W_mm (status {status})",
                )
                return d_ev, norm_ev, cert
            u = [arb(int(k)) for k in cert.w.ints]  # direction of w does not depend on 2^exp / den
            nu, _ = _ball_norm_p(u, pa)
            signed = [pw if x > 0 else -pw for x, pw in zip(W0.ravel(), powers)]
            inner = sum((s * uj for s, uj in zip(signed, u) if not uj.is_zero()), arb(0))
            d_u = 1 - inner / (n0 ** (pa - 1) * nu)
            delta = cert.direction_error_upper
            lo, hi = enclosure(d_u)
            lo = max(Fraction(0), lo - delta) if lo is not None else Fraction(0)
            hi = None if hi is None else hi + delta
            d_ev = Evidence(
                "D_psi(Wbar_mm, Wbar(0))",
                lo,
                hi,
                Method.INTERVAL,
                detail=f"1 - <grad psi(Wbar(0)), u> in arb at the certified direction u, "
                f"+/- direction error {format_sci(delta, 3)}",
            )
        return d_ev, norm_ev, cert

    def check(self, problem) -> HypothesisReport:
        ctx = as_context(problem)
        d_ev, norm_ev, cert = self.enclose(ctx)
        evidence: list[Evidence] = []
        missing = []
        if self.mu is None:
            evidence.append(d_ev)
            missing.append("--mu")
        else:
            mu = parse_nonnegative(self.mu, "mu")
            # without a certified W_mm the enclosure is unbounded: this requirement stays UNDECIDED
            evidence.append(
                Evidence(d_ev.quantity, d_ev.lo, d_ev.hi, d_ev.method, "<=", mu, d_ev.detail)
            )
        if self.R is None:
            evidence.append(norm_ev)
            missing.append("--R")
        else:
            R = parse_nonnegative(self.R, "R")
            evidence.append(
                Evidence(
                    norm_ev.quantity,
                    norm_ev.lo,
                    norm_ev.hi,
                    norm_ev.method,
                    ">=",
                    R,
                    norm_ev.detail,
                )
            )
        alpha = ctx.alpha(self.alpha)
        if getattr(cert.status, "value", cert.status) == "optimal" and ctx.checked(
            cert, p=parse_p(self.p), svm="attention", alpha=alpha
        ):
            evidence.extend(data_quantities(ctx, cert, alpha))
        if missing:
            if any(e.implies() is Verdict.FAILS for e in evidence):
                return HypothesisReport(
                    self.name, Verdict.FAILS, tuple(evidence), "||W(0)||_p < R: scale W0 up"
                )
            return HypothesisReport(
                self.name,
                Verdict.UNDECIDED,
                tuple(evidence),
                f"give {' and '.join(missing)} (the theorem's admissible values are data "
                f"dependent; see the enclosed quantities)",
            )
        d_txt = "D_psi(Wbar_mm, Wbar(0))"
        return HypothesisReport.from_evidence(
            self.name,
            evidence,
            holds=(
                f"W(0) is in the region for the given mu = {format_exact(parse_nonnegative(self.mu, 'mu'))}, "
                f"R = {format_exact(R)}: {d_txt} <= mu and ||W(0)||_p >= R (mu and R are inputs; another "
                f"choice can change this verdict)"
            ),
            fails="W(0) is outside the region: "
            + "; ".join(
                f"{e.quantity} {'> mu: start closer to the W_mm direction' if e.relation == '<=' else '< R: scale W0 up'}"
                for e in evidence
                if e.implies() is Verdict.FAILS
            ),
            undecided="W(0) = 0 has no direction: start from a nonzero W0"
            if norm_ev.hi == 0
            else "an enclosure straddles its threshold; certify W_mm with more digits",
        )


def init_in_region(
    W0: Any, mu: Any = None, R: Any = None, p: Any = 2, *, alpha: Any = None
) -> InitInRegion:
    """Predicate: ``D_psi(Wbar_mm, Wbar(0)) <= mu`` and ``||W(0)||_p >= R`` (certified enclosures)."""
    return InitInRegion(W0=W0, mu=mu, R=R, p=p, alpha=alpha)
