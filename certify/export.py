"""The certified SVM solution as float64 arrays, with rigorous distances (docs/theory.md section 4.2).

`certified_solution(cert)` turns an OPTIMAL `Certificate` into numpy arrays a user can load
anywhere: the certificate's feasible point ``w`` (the refined point scaled so that ``min A w >= 1``
holds exactly; for a p = 2 exact KKT certificate the exact optimum itself) rounded to float64, and
its unit direction ``u = w / ||w||_p`` rounded to float64. The attention SVM's point is the d x d
matrix ``W`` with ``W[j, k] = w[j*d + k]`` (row-major, so ``a^T vec(W) = left^T W right`` for a
constraint row ``a = vec(left right^T)``); the decoder SVM's point is the d-vector ``v``.

Each array comes with a rigorous bound on its distance to the exact optimum (W_mm or v_mm) and to
its direction, by the triangle inequality:

    ||fl(w) - W_mm||_p               <= distance_upper        + ||fl(w) - w||_p
    ||fl(u) - W_mm/||W_mm||_p||_p    <= direction_error_upper + ||fl(u) - u||_p

where the rounding terms are enclosed in python-flint ``arb`` balls from the exact vector. The
certificate's own bounds are its claims: pass ``problem=`` to have the independent checker
(`certify.check`) accept them first.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.certificate import Certificate, CertStatus, solution_shape
from certify.errors import MdcertError
from certify.exact import format_fraction, format_sci

__all__ = ["CertifiedSolution", "certified_solution"]

#: working precision (bits) of the rounding-error enclosures; the errors are about 2**-53 relative
_PREC = 128


@dataclass(frozen=True, eq=False)
class CertifiedSolution:
    """A certified SVM solution rounded to float64 (docs/theory.md section 4.2; see module docstring).

    Attributes:
        svm: "attention" (``point`` is W, shape (d, d), row-major), "decoder" (``point`` is v, shape (d,)),
            "binary" (w, shape (d,)) or "multiclass" (W, shape (K, d), row-major; docs/theory.md section 7).
        p: the exact exponent.
        alpha: the token indices of the SVM.
        point: the certified feasible point rounded to float64 (read-only array).
        direction: ``w / ||w||_p`` rounded to float64 (read-only array, same shape).
        distance_upper: ``||point - W_mm||_p <= distance_upper`` (exact, rigorous).
        direction_error_upper: ``||direction - W_mm/||W_mm||_p||_p <= direction_error_upper`` (exact, rigorous).
        rounding: the float64 rounding part of ``distance_upper`` (``>= ||point - w||_p``).
        exact_kkt: True when ``w`` is the exact optimum (p = 2 rational KKT certificate).
    """

    svm: str
    p: Fraction
    alpha: tuple[int, ...]
    point: np.ndarray
    direction: np.ndarray
    distance_upper: Fraction
    direction_error_upper: Fraction
    rounding: Fraction
    exact_kkt: bool

    def describe(self) -> str:
        """One line: what the point is and how far it is from the optimum."""
        name = (
            "W"
            if self.svm in ("attention", "multiclass")
            else "v"
            if self.svm == "decoder"
            else "w"
        )
        shape = " x ".join(str(k) for k in self.point.shape)
        what = "max-margin program" if self.svm in ("binary", "multiclass") else "SVM"
        return (
            f"{name} = certified feasible point of the {self.svm} {what} (float64, {shape}"
            f"{', row-major' if self.svm in ('attention', 'multiclass') else ''}): ||{name} - {name}_mm||_p <= "
            f"{format_sci(self.distance_upper)}, direction error <= {format_sci(self.direction_error_upper)}"
        )

    def to_json(self) -> dict:
        """The exact bounds as "num/den" strings (the arrays are not included)."""
        return {
            "svm": self.svm,
            "p": format_fraction(self.p),
            "alpha": list(self.alpha),
            "shape": list(self.point.shape),
            "distance_upper": format_fraction(self.distance_upper),
            "direction_error_upper": format_fraction(self.direction_error_upper),
            "rounding": format_fraction(self.rounding),
            "exact_kkt": self.exact_kkt,
        }


def _upper(x) -> Fraction:
    if not x.is_finite():
        raise MdcertError(
            "the rounding error of the exported solution could not be enclosed; report this"
        )
    man, exp = x.upper().man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)


def _float_ball(x: float):
    from flint import arb

    if x == 0.0:
        return arb(0)
    num, den = float(x).as_integer_ratio()  # den is a power of two: the ball is exact
    return arb((num, -(den.bit_length() - 1)))


def _norm_upper(balls, pa):
    """Upper bound ball of ``(sum |b_j|^p)^(1/p)`` for balls that may contain 0."""
    from flint import arb

    total = arb(0)
    for b in balls:
        top = b.abs_upper()
        if top != 0:
            total += arb(top) ** pa
    return arb(total.upper()) ** (1 / pa) if total != 0 else arb(0)


def _rounding_errors(
    cert: Certificate, point: np.ndarray, direction: np.ndarray
) -> tuple[Fraction, Fraction]:
    """Upper bounds of ``||point - w||_p`` and ``||direction - w/||w||_p||_p`` (arb balls)."""
    import flint
    from flint import arb, fmpq

    with flint.ctx.workprec(_PREC):
        p = cert.p
        pa = arb(fmpq(p.numerator, p.denominator))
        scale = arb(2) ** cert.w.exp / cert.w.den
        w = [arb(int(k)) * scale for k in cert.w.ints]
        norm = sum((abs(b) ** pa for b in w if not b.is_zero()), arb(0)) ** (1 / pa)
        if not norm > 0:
            raise MdcertError("the certificate's solution is zero; it has no direction to export")
        e_point = _norm_upper([b - _float_ball(x) for b, x in zip(w, point.ravel())], pa)
        e_dir = _norm_upper([b / norm - _float_ball(x) for b, x in zip(w, direction.ravel())], pa)
        return _upper(e_point), _upper(e_dir)


def certified_solution(cert: Certificate | dict, *, problem=None) -> CertifiedSolution:
    """The certified feasible point and its direction as float64 arrays, with rigorous distances
    (docs/theory.md section 4.2).

    Args:
        cert: an OPTIMAL `Certificate` (or its JSON dict, as written by ``mdcert certify -o``).
        problem: if given, the independent checker must accept ``cert`` for this problem first.

    Returns:
        A `CertifiedSolution`; ``point`` is W (d x d, row-major: ``W[j, k] = w[j*d + k]``) for the
        attention SVM and v (length d) for the decoder SVM.

    Raises:
        MdcertError: the certificate holds no certified solution (infeasible, no verified result), its
            solution does not fit in float64, or the checker rejects it.
    """
    if not isinstance(cert, Certificate):
        cert = Certificate.from_json(cert)
    if problem is not None:
        from certify.check import check_certificate

        result = check_certificate(problem, cert)
        if not result.ok:
            raise MdcertError(
                f"the certificate does not verify against this problem ({result.first_failure}); "
                f"nothing to export"
            )
    if (
        cert.status is not CertStatus.OPTIMAL
        or cert.w is None
        or cert.distance_upper is None
        or cert.direction_error_upper is None
    ):
        raise MdcertError(
            f"the certificate's status is {cert.status.value}: it holds no certified solution to "
            f"export (certify a feasible SVM first)"
        )
    m = cert.d * cert.d if cert.svm == "attention" else cert.d
    if (
        cert.svm == "multiclass"
        and cert.d >= 1
        and len(cert.w) % cert.d == 0
        and len(cert.w) >= 2 * cert.d
    ):
        m = len(cert.w)  # K x d, K = len(w) / d
    if len(cert.w) != m or cert.d < 1:
        raise MdcertError(
            f"the certificate's solution has {len(cert.w)} entries, but d = {cert.d} needs {m}; "
            f"the certificate is damaged"
        )
    shape = solution_shape(cert.svm, cert.d, m)
    point = cert.w.to_float().reshape(shape)
    if not np.all(np.isfinite(point)):
        raise MdcertError(
            "the certified solution has entries beyond the float64 range; it cannot be exported "
            "as float64 (rescale the data)"
        )
    direction = cert.direction_float()
    if not np.all(np.isfinite(direction)):
        raise MdcertError(
            "the direction of the certified solution is not finite in float64; report this"
        )
    e_point, e_dir = _rounding_errors(cert, point, direction)
    for arr in (point, direction):
        arr.setflags(write=False)
    return CertifiedSolution(
        svm=cert.svm,
        p=cert.p,
        alpha=tuple(cert.alpha),
        point=point,
        direction=direction,
        distance_upper=cert.distance_upper + e_point,
        direction_error_upper=cert.direction_error_upper + e_dir,
        rounding=e_point,
        exact_kkt=bool(cert.exact_kkt),
    )
