"""Certificates of the smoothed-sign limit ``min E(beta) s.t. X beta = y`` with a realized v, and their
independent checker (docs/theory.md section 8.10). Trusted.

``E(beta) = (2/3) sum_i (|beta_i| + c_i)^(3/2)``, ``c_i = v_i^2``, is the function of section 8.4
(`certify.regression.deltakkt`; the paper's E, arXiv 2410.14158 eqs. 22-23 at ``beta(0) = 0``, less
the constant ``Phi_0(0)``) with ``v`` the realized non-dominant weights of a trained network. Every
claim is re-derived from the regression data and the certificate (which carries ``v`` exactly), in
outward-rounded balls (``arb``):

- ``feasible``: ``X beta^ = y`` exactly (the certificate's point is an exact rational vector);
- ``opt_upper``: ``OPT <= E(beta^)``;
- ``opt_lower``: Fenchel duality, for any ``mu``: ``OPT >= y^T mu - sum_i phi_i*((X^T mu)_i)`` with
  ``phi_i*(s) = (1/3) (|s| - |v_i|)_+^2 (|s| + 2 |v_i|) - (2/3) |v_i|^3`` (exact rationals: ``sqrt c_i
  = |v_i|``);
- ``distance_upper``: on the box ``|beta_i| + c_i <= K`` holding ``beta^`` and the minimizer ``beta*``
  (``K >= |beta^_i| + c_i`` and ``K >= (3 T / 2 + |v_i|^3)^(2/3)`` with ``T = UB - (2/3) sum |v_i|^3``),
  E is m-strongly convex with ``m = 1 / (2 sqrt K)``, so ``||beta^ - beta*||_2^2 <= 2 (UB - LB) / m``.

It imports no solver (the import contract of pyproject.toml); the solver (`certify.regression.eprog`)
makes its claims with these functions.
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
from certify.regression.psicheck import long_product

__all__ = [
    "E_FORMAT",
    "ECertificate",
    "v_vector",
    "e_ball",
    "e_dual_ball",
    "e_distance",
    "check_e",
    "e_certificate_precision",
]

E_FORMAT = "mdcert-e-interpolation-1"
_PROGRAM = "min_e_interpolation"
_BOUNDS = ("opt_lower", "opt_upper", "distance_upper")


def v_vector(v) -> ExactVec:
    """The realized v (float64 values, read exactly) as an exact dyadic vector."""
    import numpy as np

    from certify.regression.problem import exact_float64

    arr = exact_float64("v", v, 1)
    d = dyadic(np.ascontiguousarray(arr, dtype=np.float64))
    return ExactVec(tuple(int(k) for k in d.ints.ravel()), int(d.exp))


@dataclass(frozen=True)
class ECertificate:
    """Status `optimal`: the exact feasible point ``beta`` (``X beta = y``), a dual vector ``mu``,
    the enclosure ``[opt_lower, opt_upper]`` of OPT and ``distance_upper >= ||beta - beta*||_2``;
    `no_verified_result`: the reason only. ``v`` (D entries, exact) defines ``c = v^2``."""

    status: InterpStatus
    v: ExactVec
    data_hash: str
    shape: tuple[int, int]
    opt_lower: Fraction | None = None
    opt_upper: Fraction | None = None
    distance_upper: Fraction | None = None
    beta: ExactVec | None = None
    mu: ExactVec | None = None
    reason: str = ""

    def to_json(self) -> dict:
        out: dict = {"format": E_FORMAT, "program": _PROGRAM, "status": self.status.value}
        out |= {"data_hash": self.data_hash, "shape": list(self.shape), "v": self.v.to_json()}
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
    def from_json(cls, obj) -> "ECertificate":
        """Parse and shape-check; a field the status does not carry is refused."""
        if not isinstance(obj, dict) or obj.get("format") != E_FORMAT:
            raise MdcertError(f"not an E interpolation certificate (format must be {E_FORMAT!r})")
        status = {s.value: s for s in (InterpStatus.OPTIMAL, InterpStatus.NO_VERIFIED_RESULT)}.get(
            obj.get("status")
        )
        if status is None:
            raise MdcertError(f"unknown status {obj.get('status')!r}")
        base = {"format", "program", "status", "v", "data_hash", "shape", "reason"}
        needed = (*_BOUNDS, "beta", "mu") if status is InterpStatus.OPTIMAL else ()
        stray = sorted(set(obj) - base - set(needed))
        if stray:
            raise MdcertError(f"a {status.value} certificate carries no {', '.join(stray)}")
        missing = [k for k in ("v", *needed) if k not in obj]
        if missing:
            raise MdcertError(f"a {status.value} certificate needs {', '.join(missing)}")
        shape = obj.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and all(type(k) is int for k in shape)):
            raise MdcertError("shape must be [N, D] with positive integers")
        if min(shape) <= 0:
            raise MdcertError("shape must be [N, D] with positive integers")
        N, D = shape
        fields = {name: parse_fraction(obj[name]) for name in _BOUNDS if name in obj}
        for name, size in (("beta", D), ("mu", N), ("v", D)):
            if name in obj:
                fields[name] = ExactVec.from_json(obj[name], name=name, size=size)
        return cls(
            status=status,
            data_hash=str(obj.get("data_hash")),
            shape=(N, D),
            reason=str(obj.get("reason", "")),
            **fields,
        )


def _arb(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _entries(vec: ExactVec) -> list[Fraction]:
    scale = Fraction(2) ** vec.exp / vec.den
    return [k * scale for k in vec.ints]


def _abs_v(v: ExactVec) -> list[Fraction]:
    return [abs(x) for x in _entries(v)]


def e_ball(beta: ExactVec, v: ExactVec):
    """Ball of ``E(beta) = (2/3) sum_i (|beta_i| + v_i^2)^(3/2)`` (beta's entries enter as balls)."""
    from flint import arb

    scale = _arb(Fraction(2) ** beta.exp / beta.den)
    total = arb(0)
    for k, a in zip(beta.ints, _abs_v(v)):
        t = abs(arb(int(k)) * scale) + _arb(a * a)
        total += t * t.sqrt()
    return 2 * total / 3


def _phistar(s: Fraction, a: Fraction) -> Fraction:
    """``phi*(s) + (2/3) a^3`` for ``phi(b) = (2/3)(|b| + a^2)^(3/2)``: ``(1/3) h_+^2 (|s| + 2a)``,
    ``h = |s| - a`` (exact)."""
    h = abs(s) - a
    return h * h * (abs(s) + 2 * a) / 3 if h > 0 else Fraction(0)


def e_dual_ball(Zx: IntMatrix, ex: int, Zy: list[int], ey: int, mu: ExactVec, v: ExactVec):
    """Ball of the dual value ``y^T mu - sum_i phi_i*(u_i)``, ``u = X^T mu``: exact rationals, one
    rounding at the end."""
    u = long_product(Zx, list(mu.ints), transpose=True)
    scale = Fraction(2) ** mu.exp / mu.den
    ytmu = Fraction(sum(int(a) * int(b) for a, b in zip(Zy, mu.ints))) * Fraction(2) ** ey * scale
    us = Fraction(2) ** ex * scale
    total = sum((_phistar(k * us, a) for k, a in zip(u, _abs_v(v))), Fraction(0))
    cubes = sum((a**3 for a in _abs_v(v)), Fraction(0))
    return _arb(ytmu - total + 2 * cubes / 3)


def e_distance(ub: Fraction, lb: Fraction, beta: ExactVec, v: ExactVec) -> Fraction | None:
    """Upper bound of ``||beta - beta*||_2`` for a feasible beta with ``E(beta) <= ub`` and
    ``OPT >= lb`` (module docstring); None when the bounds give none."""
    from flint import arb

    absv = _abs_v(v)
    slack = ub - 2 * sum((a**3 for a in absv), Fraction(0)) / 3  # T >= sum of the shifted terms
    if ub < lb or slack < 0:
        return None
    k_up = Fraction(0)
    bscale = Fraction(2) ** beta.exp / beta.den
    for k, a in zip(beta.ints, absv):
        at_point = upper_ball(abs(arb(int(k)) * _arb(bscale)) + _arb(a * a))
        x = 3 * slack / 2 + a**3
        level = upper_ball(_arb(x) ** (arb(2) / 3)) if x > 0 else Fraction(0)
        if at_point is None or level is None:
            return None
        k_up = max(k_up, at_point, level)
    if k_up <= 0:  # |beta_i| + c_i <= 0 on the box: beta^ = beta* = 0
        return Fraction(0)
    m = lower_ball(1 / (2 * _arb(k_up).sqrt()))
    if m is None or m <= 0:
        return None
    return upper_ball((2 * _arb(ub - lb) / _arb(m)).sqrt())


def e_certificate_precision(cert: ECertificate) -> int:
    """Ball precision of a check: 64 bits beyond the longest integer of mu, v and the bounds."""
    ints = [*cert.v.ints, cert.v.den]
    ints += [*cert.mu.ints, cert.mu.den] if cert.mu is not None else []
    for name in _BOUNDS:
        x = getattr(cert, name)
        ints += [x.numerator, x.denominator] if x is not None else []
    return min(64 + max((abs(k).bit_length() for k in ints), default=64), 1 << 16)


def _feasible(Zx, ex: int, Zy: list[int], ey: int, beta: ExactVec) -> bool:
    """``X beta = y`` exactly: ``Zy den 2^(ey - s) = (Zx b) 2^(ex + eb - s)``, ``s = min(ey, ex + eb)``."""
    s = min(ey, ex + beta.exp)
    Xb = long_product(Zx, list(beta.ints))
    return all(
        zy * beta.den * (1 << (ey - s)) == xb * (1 << (ex + beta.exp - s)) for zy, xb in zip(Zy, Xb)
    )


def check_e(problem: RegressionProblem, cert: ECertificate, *, v=None) -> InterpCheck:
    """Re-check ``cert`` against ``problem`` (module docstring); ``v``, when given (float64 values),
    must equal the certificate's v exactly."""
    from flint import ctx

    checked: list[str] = []
    failures: list[str] = []

    def claim(name: str, holds: bool, why: str) -> None:
        checked.append(name)
        if not holds:
            failures.append(f"{name}: {why}")

    claim("data_hash", cert.data_hash == problem.data_hash(), "the certificate is about other data")
    claim("shape", cert.shape == (problem.N, problem.D), f"certificate shape {cert.shape}")
    if v is not None:
        same = _entries(v_vector(v)) == _entries(cert.v)
        claim("v", same, "the certificate's v differs from the given v")
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
    with ctx.workprec(e_certificate_precision(cert)):
        ub = upper_ball(e_ball(cert.beta, cert.v))
        lb = lower_ball(e_dual_ball(Zx, dx.exp, Zy, dy.exp, cert.mu, cert.v))
        claim("opt_upper", ub is not None and ub <= cert.opt_upper, "below E(beta)")
        claim(
            "opt_lower",
            lb is not None and cert.opt_lower <= lb and cert.opt_lower <= cert.opt_upper,
            "above the dual value y^T mu - sum phi*(X^T mu) (or above opt_upper)",
        )
        dist = None if ub is None or lb is None else e_distance(ub, lb, cert.beta, cert.v)
        claim(
            "distance_upper",
            dist is not None and dist <= cert.distance_upper,
            "below the bound recomputed from the gap and the strong convexity on the level box",
        )
    return InterpCheck(not failures, tuple(checked), tuple(failures))
