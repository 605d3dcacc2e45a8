"""The certified SVM directions the regularization paths are measured against (docs/theory.md sections 2, 5).

`reference_direction` certifies ``W_mm(alpha)`` (or the decoder SVM ``v_mm(alpha)``) with
`certify.certify_svm`; `bregman_directional` measures ``D_psi(ref/||ref||_p, W/||W||_p)`` in
mpmath; `ReferenceCache` keeps certified references per (svm, tokens); `uniform_dual_direction`
is the SVM-free start ``phi_q(A^T 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from certify.errors import MdcertError
from certify.exact import conjugate, format_fraction, parse_p
from experiments.regpath.sphere import lp_norm_rows

__all__ = [
    "Reference",
    "reference_direction",
    "reference_json",
    "bregman_directional",
    "uniform_dual_direction",
    "ReferenceCache",
]


@dataclass(frozen=True)
class Reference:
    """The SVM direction the path is measured against.

    Attributes:
        svm: "attention" or "decoder".
        p: exact exponent.
        alpha: token indices.
        direction: float64 unit direction (m,) (the certified point rounded, for starts and plots).
        exact: the certified feasible point as exact rationals (None for an uncertified float stand-in).
        certified: whether it came from an OPTIMAL `certify_svm` certificate.
        direction_error_upper: certified bound on ``||w/||w||_p - w*/||w*||_p||_p`` (float, rounded up).
        bregman_upper: certified bound on the Bregman divergence between those unit directions.
        info: JSON-able summary (status, opt bounds as "num/den", support counts).
    """

    svm: str
    p: Fraction
    alpha: tuple[int, ...]
    direction: np.ndarray
    exact: tuple[Fraction, ...] | None
    certified: bool
    direction_error_upper: float | None = None
    bregman_upper: float | None = None
    info: dict = field(default_factory=dict)

    @classmethod
    def from_float(
        cls, direction: np.ndarray, p, alpha: Sequence[int], *, svm: str = "attention"
    ) -> "Reference":
        """An UNCERTIFIED float reference (tests and experiments only; reported as uncertified)."""
        p = parse_p(p)
        w = np.asarray(direction, dtype=np.float64).ravel()
        w = w / float(lp_norm_rows(w[None, :], float(p))[0])
        return cls(
            svm,
            p,
            tuple(int(a) for a in alpha),
            w,
            None,
            False,
            info={"status": "uncertified float"},
        )


def _up(x) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def reference_direction(
    problem, p, *, alpha="opt", svm: str = "attention", digits: int = 30
) -> Reference:
    """Certified SVM direction ``W_mm(alpha)`` (or ``v_mm(alpha)``) via `certify.certify_svm`.

    Raises:
        MdcertError: the SVM is infeasible for these tokens (Gordan certificate), ties in the
            optimal tokens, or the solve could not be certified.
    """
    from certify.problem import resolve_alpha

    p = parse_p(p)
    alpha = resolve_alpha(problem, alpha)
    try:
        from certify import certify_svm
    except ImportError:  # pragma: no cover - only while certify is being written
        raise MdcertError(
            "certify.certify_svm is not available; the reference SVM cannot be certified"
        ) from None
    cert = certify_svm(problem, p, svm=svm, alpha=alpha, digits=digits)
    status = getattr(cert.status, "value", str(cert.status))
    if status == "infeasible":
        raise MdcertError(
            f"the {svm} SVM for tokens alpha={list(alpha)} is infeasible (certified by a Gordan "
            f"vector); choose other tokens with --alpha"
        )
    if status != "optimal":
        raise MdcertError(
            f"the {svm} SVM for tokens alpha={list(alpha)} could not be certified (status {status}); "
            f"no reference direction to measure against"
        )
    exact = tuple(Fraction(x) for x in cert.solution_exact())
    info = {
        "status": status,
        "digits": digits,
        "opt_lower": format_fraction(cert.opt_lower) if cert.opt_lower is not None else None,
        "opt_upper": format_fraction(cert.opt_upper) if cert.opt_upper is not None else None,
    }
    if cert.support is not None:
        info["support_counts"] = {
            "tight": len(cert.support.tight),
            "inactive": len(cert.support.inactive),
            "undecided": len(cert.support.undecided),
        }
        info["support_tight"] = [list(r) for r in cert.support.tight]
    return Reference(
        svm,
        p,
        alpha,
        np.asarray(cert.direction_float(), dtype=np.float64).ravel(),
        exact,
        True,
        _up(cert.direction_error_upper),
        _up(cert.bregman_upper),
        info,
    )


def bregman_directional(
    reference: Reference | np.ndarray, W: np.ndarray, p, *, digits: int = 40
) -> float:
    """``D_psi(ref/||ref||_p, W/||W||_p)`` (reference first, docs/theory.md section 2), evaluated in mpmath.

    The reference's exact rationals are used when available; W is exact as given (float64). The
    result is rounded to float64 (a measurement, not a certified bound).
    """
    import mpmath

    p = parse_p(p)
    with mpmath.workdps(digits):
        pm = mpmath.mpf(p.numerator) / p.denominator
        if isinstance(reference, Reference):
            if reference.exact is not None:
                a = [mpmath.mpf(x.numerator) / x.denominator for x in reference.exact]
            else:
                a = [mpmath.mpf(float(x)) for x in reference.direction]
        else:
            a = [mpmath.mpf(float(x)) for x in np.asarray(reference, dtype=np.float64).ravel()]
        b = [mpmath.mpf(float(x)) for x in np.asarray(W, dtype=np.float64).ravel()]
        if len(a) != len(b):
            raise MdcertError(f"reference has {len(a)} entries but W has {len(b)}")
        na = mpmath.fsum(abs(x) ** pm for x in a) ** (1 / pm)
        nb = mpmath.fsum(abs(x) ** pm for x in b) ** (1 / pm)
        if na == 0 or nb == 0:
            raise MdcertError(
                "cannot normalize a zero matrix for the directional Bregman divergence"
            )
        total = mpmath.mpf(0)
        for x, y in zip(a, b):
            x, y = x / na, y / nb
            ay = abs(y)
            total += (
                abs(x) ** pm / pm
                - ay**pm / pm
                - (mpmath.sign(y) * ay ** (pm - 1) * (x - y) if y != 0 else 0)
            )
        return float(max(total, mpmath.mpf(0)))


def reference_json(ref: Reference) -> dict:
    """The JSON summary of a reference (as written into ``summary.json``)."""
    return {
        "svm": ref.svm,
        "certified": ref.certified,
        "alpha": list(ref.alpha),
        "direction_error_upper": ref.direction_error_upper,
        "bregman_upper": ref.bregman_upper,
        **ref.info,
    }


def uniform_dual_direction(rows: np.ndarray, p: Fraction) -> np.ndarray:
    """``phi_q(A^T 1) = sign(u)|u|^{q-1}``, ``u = sum of the constraint rows``: an SVM-free start
    (the primal point of uniform dual multipliers; float, only ever a start)."""
    q = float(conjugate(p))
    u = np.asarray(rows, dtype=np.float64).sum(axis=0)
    if not np.any(u):
        u = np.asarray(rows, dtype=np.float64)[0]
    return np.sign(u) * np.abs(u) ** (q - 1.0)


class ReferenceCache:
    """Certified references per (svm, tokens); None when that SVM is infeasible or not certified."""

    def __init__(self, problem, p: Fraction, digits: int) -> None:
        self.problem, self.p, self.digits = problem, p, digits
        self.cache: dict[tuple, Reference | None] = {}

    def add(self, ref: Reference) -> None:
        self.cache[(ref.svm, tuple(ref.alpha))] = ref

    def get(self, svm: str, tokens: Sequence[int]) -> Reference | None:
        key = (svm, tuple(int(t) for t in tokens))
        if key not in self.cache:
            try:
                self.cache[key] = reference_direction(
                    self.problem, self.p, alpha=key[1], svm=svm, digits=self.digits
                )
            except MdcertError:
                self.cache[key] = None
        return self.cache[key]

    def bregman(self, svm: str, tokens: Sequence[int], w: np.ndarray) -> float | None:
        ref = self.get(svm, tokens)
        if ref is None or not np.any(w):
            return None
        return bregman_directional(ref, w, self.p)
