"""The certificate of an l_p interpolation program (docs/theory.md section 8.3).

``OPT = min ||beta||_p subject to X beta = y``. Status `optimal`: an exact point ``beta~`` (dyadic, or
rational with a common denominator), the bound ``residual_upper`` on the l_p distance from ``beta~``
to the nearest point of ``{X beta = y}`` (0 when ``X beta~ = y`` exactly), an exact dual vector ``mu``,
the enclosure ``[opt_lower, opt_upper]`` and ``distance_upper >= ||beta~ - beta*||_p``. Status
`inconsistent`: an exact ``g`` with ``X^T g = 0`` and ``y^T g != 0`` (Fredholm's alternative: no beta
solves ``X beta = y``). `no_verified_result`: the reason only. Every number in the JSON is exact:
integers as decimal strings, fractions as ``"num/den"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_fraction, parse_p

__all__ = ["InterpStatus", "ExactVec", "InterpolationCertificate"]

FORMAT = "mdcert-interpolation-1"


class InterpStatus(Enum):
    OPTIMAL = "optimal"
    INCONSISTENT = "inconsistent"
    NO_VERIFIED_RESULT = "no_verified_result"


@dataclass(frozen=True)
class ExactVec:
    """The exact vector ``ints * 2^exp / den``."""

    ints: tuple[int, ...]
    exp: int
    den: int = 1

    def to_json(self) -> dict:
        return {"ints": [str(k) for k in self.ints], "exp": self.exp, "den": str(self.den)}

    @classmethod
    def from_json(cls, obj, *, name: str, size: int) -> "ExactVec":
        if not isinstance(obj, dict) or set(obj) != {"ints", "exp", "den"}:
            raise MdcertError(f"{name} must be an object with exactly the keys ints, exp, den")
        ints, exp, den = obj["ints"], obj["exp"], obj["den"]
        if not isinstance(ints, list) or len(ints) != size:
            raise MdcertError(f"{name}.ints must be a list of {size} decimal integer strings")
        if isinstance(exp, bool) or not isinstance(exp, int) or abs(exp) > 1 << 20:
            raise MdcertError(f"{name}.exp must be an integer of magnitude at most 2^20")
        return cls(tuple(_int(v, f"{name}.ints") for v in ints), exp, _positive(den, f"{name}.den"))

    def entry(self, i: int) -> Fraction:
        return Fraction(self.ints[i]) * Fraction(2) ** self.exp / self.den


def _int(text, name: str) -> int:
    if (
        not isinstance(text, str)
        or not text.lstrip("-").isascii()
        or not text.lstrip("-").isdigit()
        or len(text) > 100_000
    ):
        raise MdcertError(
            f"{name} entries must be decimal integer strings (ASCII digits, optional '-')"
        )
    return int(text)


def _positive(text, name: str) -> int:
    k = _int(text, name)
    if k <= 0:
        raise MdcertError(f"{name} must be a positive integer")
    return k


@dataclass(frozen=True)
class InterpolationCertificate:
    """See the module docstring; fields not used by a status are None."""

    status: InterpStatus
    p: Fraction
    data_hash: str
    shape: tuple[int, int]
    opt_lower: Fraction | None = None
    opt_upper: Fraction | None = None
    distance_upper: Fraction | None = None
    residual_upper: Fraction | None = None
    beta: ExactVec | None = None
    mu: ExactVec | None = None
    kernel: ExactVec | None = None
    reason: str = ""

    def to_json(self) -> dict:
        out: dict = {
            "format": FORMAT,
            "program": "min_lp_interpolation",
            "status": self.status.value,
            "p": format_fraction(self.p),
            "data_hash": self.data_hash,
            "shape": list(self.shape),
        }
        for name in ("opt_lower", "opt_upper", "distance_upper", "residual_upper"):
            value = getattr(self, name)
            if value is not None:
                out[name] = format_fraction(value)
        for name in ("beta", "mu", "kernel"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.to_json()
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, obj) -> "InterpolationCertificate":
        """Parse and shape-check a certificate; every field a status does not carry is refused."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise MdcertError(f"not an interpolation certificate (format must be {FORMAT!r})")
        try:
            status = InterpStatus(obj.get("status"))
        except ValueError:
            raise MdcertError(f"unknown status {obj.get('status')!r}") from None
        allowed = {"format", "program", "status", "p", "data_hash", "shape", "reason"}
        allowed |= {
            InterpStatus.OPTIMAL: {
                "opt_lower",
                "opt_upper",
                "distance_upper",
                "residual_upper",
                "beta",
                "mu",
            },
            InterpStatus.INCONSISTENT: {"kernel"},
            InterpStatus.NO_VERIFIED_RESULT: set(),
        }[status]
        stray = sorted(set(obj) - allowed)
        if stray:
            raise MdcertError(f"a {status.value} certificate carries no {', '.join(stray)}")
        shape = obj.get("shape")
        if not (
            isinstance(shape, list)
            and len(shape) == 2
            and all(type(k) is int and k > 0 for k in shape)
        ):
            raise MdcertError("shape must be [N, D] with positive integers")
        N, D = shape
        p = parse_p(obj.get("p"))
        fields = {}
        for name in ("opt_lower", "opt_upper", "distance_upper", "residual_upper"):
            if name in obj:
                fields[name] = parse_fraction(obj[name])
        for name, size in (("beta", D), ("mu", N), ("kernel", N)):
            if name in obj:
                fields[name] = ExactVec.from_json(obj[name], name=name, size=size)
        needed = {
            InterpStatus.OPTIMAL: (
                "opt_lower",
                "opt_upper",
                "distance_upper",
                "residual_upper",
                "beta",
                "mu",
            ),
            InterpStatus.INCONSISTENT: ("kernel",),
            InterpStatus.NO_VERIFIED_RESULT: (),
        }[status]
        missing = [k for k in needed if k not in fields]
        if missing:
            raise MdcertError(f"a {status.value} certificate needs {', '.join(missing)}")
        return cls(
            status=status,
            p=p,
            data_hash=str(obj.get("data_hash")),
            shape=(N, D),
            reason=str(obj.get("reason", "")),
            **fields,
        )
