"""Certificates of the gradient-descent limit ``min Q_alpha(beta) s.t. X beta = y`` and their
independent checker (docs/theory.md section 8.9). Trusted.

``Q_alpha(beta) = sum_i alpha^2 q(beta_i / alpha^2)`` with ``q(z) = 2 - sqrt(4 + z^2) + z asinh(z/2)``
(Woodworth et al. 2020) is the potential whose minimizer on ``{X beta = y}`` is the limit of gradient
flow on a depth-2 diagonal network ``beta = w+^2 - w-^2`` from ``w+- = alpha 1``. Every claim is
re-derived from the regression data and the certificate alone, in outward-rounded balls (``arb``):

- ``feasible``: ``X beta^ = y`` exactly (the certificate's point is an exact rational vector);
- ``opt_upper``: ``OPT <= Q_alpha(beta^)``;
- ``opt_lower``: Fenchel duality, for any ``mu``: ``OPT >= y^T mu - sum_i Q*((X^T mu)_i)`` with
  ``Q*(s) = alpha^2 (2 cosh s - 2) = 4 alpha^2 sinh(s/2)^2``;
- ``distance_upper``: on the box ``|beta_i| <= B`` holding ``beta^`` and the minimizer ``beta*``
  (``B >= ||beta^||_inf`` and ``alpha^2 q(B / alpha^2) >= Q_alpha(beta^)``), ``Q_alpha`` is m-strongly
  convex with ``m = 1/sqrt(4 alpha^4 + B^2)``, so ``||beta^ - beta*||_2^2 <= 2 (UB - LB) / m``.

It imports no solver (the import contract of pyproject.toml); the solver
(`certify.regression.psi`) makes its claims with these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from certify.errors import MdcertError
from certify.exact import dyadic, format_fraction, parse_fraction
from certify.regression.certificate import ExactVec, InterpStatus
from certify.regression.check import InterpCheck, lower_ball, upper_ball
from certify.regression.intmat import IntMatrix
from certify.regression.problem import RegressionProblem

__all__ = [
    "PSI_FORMAT",
    "PsiCertificate",
    "parse_alpha",
    "psi_ball",
    "dual_ball",
    "level_box",
    "psi_distance",
    "check_psi",
    "certificate_precision",
    "long_product",
]

PSI_FORMAT = "mdcert-psi-interpolation-1"
_PROGRAM = "min_psi_interpolation"
_BOUNDS = ("opt_lower", "opt_upper", "distance_upper")


def parse_alpha(text) -> Fraction:
    """The initialization scale alpha > 0 as an exact rational (decimal or ``num/den``)."""
    a = parse_fraction(text) if not isinstance(text, Fraction) else text
    if a <= 0 or max(a.numerator.bit_length(), a.denominator.bit_length()) > 4096:
        raise MdcertError(
            f"alpha must be a positive rational of at most 4096 bits, got {text!r:.40}"
        )
    return a


@dataclass(frozen=True)
class PsiCertificate:
    """Status `optimal`: the exact feasible point ``beta`` (``X beta = y``), a dual vector ``mu``,
    the enclosure ``[opt_lower, opt_upper]`` of OPT and ``distance_upper >= ||beta - beta*||_2``;
    `no_verified_result`: the reason only."""

    status: InterpStatus
    alpha: Fraction
    data_hash: str
    shape: tuple[int, int]
    opt_lower: Fraction | None = None
    opt_upper: Fraction | None = None
    distance_upper: Fraction | None = None
    beta: ExactVec | None = None
    mu: ExactVec | None = None
    reason: str = ""

    def to_json(self) -> dict:
        out: dict = {"format": PSI_FORMAT, "program": _PROGRAM, "status": self.status.value}
        out |= {"alpha": format_fraction(self.alpha), "data_hash": self.data_hash}
        out["shape"] = list(self.shape)
        for name in _BOUNDS:
            if getattr(self, name) is not None:
                out[name] = format_fraction(getattr(self, name))
        for name in ("beta", "mu"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name).to_json()
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, obj) -> "PsiCertificate":
        """Parse and shape-check; a field the status does not carry is refused."""
        if not isinstance(obj, dict) or obj.get("format") != PSI_FORMAT:
            raise MdcertError(
                f"not a psi interpolation certificate (format must be {PSI_FORMAT!r})"
            )
        status = {s.value: s for s in (InterpStatus.OPTIMAL, InterpStatus.NO_VERIFIED_RESULT)}.get(
            obj.get("status")
        )
        if status is None:
            raise MdcertError(f"unknown status {obj.get('status')!r}")
        base = {"format", "program", "status", "alpha", "data_hash", "shape", "reason"}
        needed = (*_BOUNDS, "beta", "mu") if status is InterpStatus.OPTIMAL else ()
        stray = sorted(set(obj) - base - set(needed))
        if stray:
            raise MdcertError(f"a {status.value} certificate carries no {', '.join(stray)}")
        missing = [k for k in needed if k not in obj]
        if missing:
            raise MdcertError(f"a {status.value} certificate needs {', '.join(missing)}")
        shape = obj.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and all(type(k) is int for k in shape)):
            raise MdcertError("shape must be [N, D] with positive integers")
        if min(shape) <= 0:
            raise MdcertError("shape must be [N, D] with positive integers")
        N, D = shape
        fields = {name: parse_fraction(obj[name]) for name in _BOUNDS if name in obj}
        for name, size in (("beta", D), ("mu", N)):
            if name in obj:
                fields[name] = ExactVec.from_json(obj[name], name=name, size=size)
        return cls(
            status=status,
            alpha=parse_alpha(obj.get("alpha")),
            data_hash=str(obj.get("data_hash")),
            shape=(N, D),
            reason=str(obj.get("reason", "")),
            **fields,
        )


def long_product(Z, v: list[int], *, transpose: bool = False) -> list[int]:
    """``Z v`` (or ``Z^T v``) exactly for an integer matrix Z and a vector of long integers, with
    python-flint's integer matrices (the base-2^18 digits of `IntMatrix` are slow for integers of
    thousands of bits, such as the exact projection's)."""
    import flint

    Z = getattr(Z, "Z", Z)
    n, m = Z.shape
    A = flint.fmpz_mat(n, m, [int(x) for x in Z.ravel()])
    A = A.transpose() if transpose else A
    out = A * flint.fmpz_mat(len(v), 1, [int(k) for k in v])
    return [int(out[i, 0]) for i in range(out.nrows())]


def _feasible(Zx, ex: int, Zy: list[int], ey: int, beta: ExactVec) -> bool:
    """``X beta = y`` exactly: ``Zy den 2^(ey - s) = (Zx b) 2^(ex + eb - s)``, ``s = min(ey, ex + eb)``."""
    s = min(ey, ex + beta.exp)
    Xb = long_product(Zx, list(beta.ints))
    return all(
        zy * beta.den * (1 << (ey - s)) == xb * (1 << (ex + beta.exp - s)) for zy, xb in zip(Zy, Xb)
    )


def _arb(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _q_ball(z):
    """``q(z) = z asinh(z/2) - z^2 / (2 + sqrt(4 + z^2))`` (the same function, no cancellation)."""
    r = (4 + z * z).sqrt()
    return z * (z / 2).asinh() - z * z / (2 + r)


def psi_ball(beta: ExactVec, alpha: Fraction):
    """Ball of ``Q_alpha(beta) = sum_i alpha^2 q(beta_i / alpha^2)``."""
    from flint import arb

    a2 = _arb(alpha * alpha)
    scale = _arb(Fraction(2) ** beta.exp / (beta.den * alpha * alpha))
    total = arb(0)
    for k in beta.ints:
        if k:
            total += _q_ball(arb(int(k)) * scale)
    return a2 * total


def dual_ball(Zx: IntMatrix, ex: int, Zy: list[int], ey: int, mu: ExactVec, alpha: Fraction):
    """Ball of the dual value ``y^T mu - sum_i alpha^2 (2 cosh u_i - 2)``, ``u = X^T mu`` (exact)."""
    from flint import arb

    u = Zx.rmatvec(mu.ints)
    scale = Fraction(2) ** mu.exp / mu.den
    ytmu = Fraction(sum(int(a) * int(b) for a, b in zip(Zy, mu.ints))) * Fraction(2) ** ey * scale
    us = _arb(Fraction(2) ** ex * scale)
    total = arb(0)
    for k in u:
        if k:
            total += (arb(int(k)) * us / 2).sinh() ** 2
    return _arb(ytmu) - 4 * _arb(alpha * alpha) * total


def _inf_norm(beta: ExactVec) -> Fraction:
    return Fraction(max((abs(int(k)) for k in beta.ints), default=0)) * (
        Fraction(2) ** beta.exp / beta.den
    )


def level_box(c: Fraction, alpha: Fraction) -> Fraction:
    """A rational ``B`` with ``alpha^2 q(B / alpha^2) >= c`` (so every beta with ``Q_alpha(beta) <= c``
    has ``|beta_i| <= B``: each term is non-negative, q is even and increasing on [0, inf)). Tried: a
    float guess, checked in balls; else ``max(8 alpha^2, c)``: ``q(z) >= z (asinh(z/2) - 1) >= z`` for
    z >= 8 since ``sqrt(4 + z^2) <= 2 + z`` and ``asinh(4) > 2``."""
    import math

    a2 = alpha * alpha
    safe = max(8 * a2, c)
    t = float(c / a2) if c > 0 else 0.0
    if not 0 < t < 1e300:
        return safe
    z = max(2 * math.sqrt(t), 1.0)  # Newton on q(z) = t from above (q convex, increasing)
    for _ in range(100):
        qz = 2 - math.sqrt(4 + z * z) + z * math.asinh(z / 2)
        step = (qz - t) / max(math.asinh(z / 2), 1e-300)
        z -= step
        if abs(step) <= 1e-15 * z:
            break
    if not math.isfinite(z) or z <= 0:
        return safe
    guess = Fraction(z * (1 + 1e-9)) * a2
    low = lower_ball(_arb(a2) * _q_ball(_arb(guess / a2)))
    return min(guess, safe) if low is not None and low >= c else safe


def psi_distance(ub: Fraction, lb: Fraction, beta: ExactVec, alpha: Fraction) -> Fraction | None:
    """Upper bound of ``||beta - beta*||_2`` for a feasible beta with ``Q_alpha(beta) <= ub`` and
    ``OPT >= lb`` (module docstring); None when the bounds give none (ub < lb or not finite)."""
    if ub < lb:
        return None
    box = max(_inf_norm(beta), level_box(ub, alpha))
    a2 = _arb(alpha * alpha)
    m = lower_ball(1 / (4 * a2 * a2 + _arb(box) ** 2).sqrt())
    if m is None or m <= 0:
        return None
    return upper_ball((2 * _arb(ub - lb) / _arb(m)).sqrt())


def certificate_precision(cert: PsiCertificate) -> int:
    """Ball precision of a check: 64 bits beyond the longest integer of mu and the bounds (beta's
    long denominator of the exact projection is not counted: its entries are rounded into balls)."""
    ints = [*cert.mu.ints, cert.mu.den] if cert.mu is not None else []
    ints += [x for n in _BOUNDS if getattr(cert, n) is not None for x in _parts(getattr(cert, n))]
    return min(64 + max((abs(k).bit_length() for k in ints), default=64), 1 << 16)


def _parts(x: Fraction) -> tuple[int, int]:
    return x.numerator, x.denominator


def check_psi(
    problem: RegressionProblem, cert: PsiCertificate, *, alpha: Fraction | None = None
) -> InterpCheck:
    """Re-check ``cert`` against ``problem`` (module docstring); ``alpha``, when given, must match."""
    from flint import ctx

    checked: list[str] = []
    failures: list[str] = []

    def claim(name: str, holds: bool, why: str) -> None:
        checked.append(name)
        if not holds:
            failures.append(f"{name}: {why}")

    claim("data_hash", cert.data_hash == problem.data_hash(), "the certificate is about other data")
    claim("shape", cert.shape == (problem.N, problem.D), f"certificate shape {cert.shape}")
    if alpha is not None:
        claim("alpha", cert.alpha == alpha, f"certificate alpha = {cert.alpha}, expected {alpha}")
    if failures or cert.status is not InterpStatus.OPTIMAL:
        return InterpCheck(not failures, tuple(checked), tuple(failures))
    dx, dy = dyadic(problem.X), dyadic(problem.y)
    Zx, Zy = IntMatrix(dx.ints), [int(k) for k in dy.ints]
    claim(
        "feasible",
        _feasible(Zx, dx.exp, Zy, dy.exp, cert.beta),
        "X beta != y (the point must solve X beta = y exactly)",
    )
    if failures:
        return InterpCheck(False, tuple(checked), tuple(failures))
    with ctx.workprec(certificate_precision(cert)):
        ub = upper_ball(psi_ball(cert.beta, cert.alpha))
        lb = lower_ball(dual_ball(Zx, dx.exp, Zy, dy.exp, cert.mu, cert.alpha))
        claim("opt_upper", ub is not None and ub <= cert.opt_upper, "below Q_alpha(beta)")
        claim(
            "opt_lower",
            lb is not None and cert.opt_lower <= lb and cert.opt_lower <= cert.opt_upper,
            "above the dual value y^T mu - sum Q*(X^T mu) (or above opt_upper)",
        )
        dist = None if ub is None or lb is None else psi_distance(ub, lb, cert.beta, cert.alpha)
        claim(
            "distance_upper",
            dist is not None and dist <= cert.distance_upper,
            "below the bound recomputed from the gap and the strong convexity on the level box",
        )
    return InterpCheck(not failures, tuple(checked), tuple(failures))
