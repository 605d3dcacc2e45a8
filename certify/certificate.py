"""The certificate record of a certified l_p SVM solve (docs/theory.md section 4, issue 3 items 4 and 6).

A `Certificate` states claims about ``OPT = min ||w||_p s.t. A w >= 1`` for one problem (named by
its data hash), one SVM ("attention" | "decoder"), one token choice ``alpha`` and one exact ``p``.
Every certified field is exact: `Fraction` bounds (JSON: ``"num/den"`` strings) and exact vectors
(`ExactVector`: integers times ``2**exp`` divided by ``den``; JSON: integer lists). Nothing in a
certified field is a float. The independent checker `certify.check.check_certificate` recomputes
every claim from the data and the exact vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_fraction
from certify.exactvector import (
    ExactVector,
    fraction_from_json,
    fraction_json,
    index_from_json,
    short_repr,
)

__all__ = [
    "CertStatus",
    "SupportClass",
    "ExactVector",
    "Certificate",
    "CERT_FORMAT",
    "SVMS",
    "solution_shape",
]

#: version tag written into every certificate JSON
CERT_FORMAT = "mdcert-certificate/1"
#: the programs a certificate can be about: the attention and decoder SVMs (docs/theory.md section 3) and
#: the binary and multiclass l_p max-margin programs of a classification problem (section 7)
SVMS = ("attention", "decoder", "binary", "multiclass")


class CertStatus(str, Enum):
    """Outcome of a certified solve (docs/theory.md section 4.5)."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    NO_VERIFIED_RESULT = "no_verified_result"


class SupportClass(NamedTuple):
    """Per-constraint classification (docs/theory.md section 4.3); rows indexed like `ConstraintSystem.index`:
    (i, t) or (i,)."""

    tight: tuple[tuple[int, ...], ...]
    inactive: tuple[tuple[int, ...], ...]
    undecided: tuple[tuple[int, ...], ...]

    def counts(self) -> tuple[int, int, int]:
        return len(self.tight), len(self.inactive), len(self.undecided)


@dataclass(frozen=True)
class Certificate:
    """Claims about one l_p SVM (docs/theory.md section 4). See module docstring.

    Attributes:
        status: optimal / infeasible / no_verified_result.
        svm: "attention", "decoder", "binary" or "multiclass" (`SVMS`).
        p: exact exponent.
        alpha: token indices.
        data_hash: `AttentionProblem.data_hash()` of the data the claims are about.
        opt_lower, opt_upper: ``OPT in [opt_lower, opt_upper]``.
        distance_upper: bound on ``||w - w*||_p`` for the returned feasible point ``w``.
        direction_error_upper: bound on ``||w/||w||_p - w*/||w*||_p||_p``.
        bregman_upper: bound on ``D_psi`` between the unit directions (either order).
        support: tight / inactive / undecided rows.
        w: the returned feasible point (exact, length m, row-major ``vec(W)`` for attention).
        lam: the dual vector (exact, >= 0, length N, in constraint-row order).
        gordan: infeasibility certificate (exact, >= 0, nonzero, ``A^T g = 0``), length N.
        gordan_basis: None, or m row positions: then ``gordan`` is a Gordan vector up to rounding and
            a correction on these rows, verified with exact integer products, makes it an exact one
            (`certify.check.verified`, docs/theory.md section 4.4).
        exact_kkt: True when ``w`` is the exact optimum with ``w = A^T lam`` (p = 2 rational KKT).
        digits: the requested number of digits.
        info: diagnostics (timings, methods); NOT certified, may hold floats.
    """

    status: CertStatus
    svm: str
    p: Fraction
    alpha: tuple[int, ...]
    data_hash: str
    opt_lower: Fraction | None = None
    opt_upper: Fraction | None = None
    distance_upper: Fraction | None = None
    direction_error_upper: Fraction | None = None
    bregman_upper: Fraction | None = None
    support: SupportClass | None = None
    w: ExactVector | None = None
    lam: ExactVector | None = None
    gordan: ExactVector | None = None
    gordan_basis: tuple[int, ...] | None = None
    exact_kkt: bool = False
    d: int = 0
    digits: int = 0
    info: dict = field(default_factory=dict, compare=False)

    # ------------------------------------------------------------------ views
    @property
    def certified(self) -> bool:
        return self.status is CertStatus.OPTIMAL

    def relative_width(self) -> Fraction | None:
        if self.opt_lower is None or self.opt_upper is None or self.opt_lower <= 0:
            return None
        return (self.opt_upper - self.opt_lower) / self.opt_lower

    def _shape(self) -> tuple[int, ...]:
        if self.w is None:
            raise MdcertError(f"certificate has no solution (status {self.status.value})")
        return solution_shape(self.svm, self.d, len(self.w))

    def solution_exact(self) -> list[Fraction]:
        """The returned feasible point w exactly (flattened row-major, length m)."""
        self._shape()
        return self.w.fractions()

    def solution_float(self) -> np.ndarray:
        """w rounded to float64, shape (d, d) (attention), (K, d) (multiclass) or (d,) (decoder, binary)."""
        shape = self._shape()
        return self.w.to_float().reshape(shape)

    def direction_float(self) -> np.ndarray:
        """``w / ||w||_p`` rounded to float64 (computed in scaled float64)."""
        shape = self._shape()
        w = self.w.to_float()
        scale = np.max(np.abs(w))
        if scale == 0:
            raise MdcertError("certificate solution is zero; no direction")
        pf = float(self.p)
        u = w / scale
        return (u / np.sum(np.abs(u) ** pf) ** (1.0 / pf)).reshape(shape)

    def with_info(self, **kw) -> "Certificate":
        return replace(self, info={**self.info, **kw})

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict:
        sup = None
        if self.support is not None:
            sup = {
                k: [list(r) for r in getattr(self.support, k)]
                for k in ("tight", "inactive", "undecided")
            }
        return {
            "format": CERT_FORMAT,
            "status": self.status.value,
            "svm": self.svm,
            "p": format_fraction(self.p),
            "alpha": [int(a) for a in self.alpha],
            "data_hash": self.data_hash,
            "d": int(self.d),
            "digits": int(self.digits),
            "opt_lower": fraction_json(self.opt_lower),
            "opt_upper": fraction_json(self.opt_upper),
            "distance_upper": fraction_json(self.distance_upper),
            "direction_error_upper": fraction_json(self.direction_error_upper),
            "bregman_upper": fraction_json(self.bregman_upper),
            "support": sup,
            "exact_kkt": bool(self.exact_kkt),
            "w": None if self.w is None else self.w.to_json(),
            "lam": None if self.lam is None else self.lam.to_json(),
            "gordan": None if self.gordan is None else self.gordan.to_json(),
            **(
                {}
                if self.gordan_basis is None
                else {"gordan_basis": [int(b) for b in self.gordan_basis]}
            ),
            "info": self.info,
        }

    @classmethod
    def from_text(cls, raw: bytes | str, *, max_bytes: int | None = None) -> "Certificate":
        """Parse certificate JSON text: a huge, deeply nested or non-UTF-8 text, duplicate keys and
        ``NaN`` / ``Infinity`` are one-line `MdcertError` s (`certify.limits.parse_json`)."""
        from certify.limits import MAX_JSON_BYTES, parse_json

        return cls.from_json(
            parse_json(raw, max_bytes=MAX_JSON_BYTES if max_bytes is None else max_bytes)
        )

    @classmethod
    def load(cls, path, *, max_bytes: int | None = None) -> "Certificate":
        """Read a certificate file (at most ``max_bytes``, default `certify.limits.MAX_JSON_BYTES`)."""
        from certify.limits import MAX_JSON_BYTES, read_json_file

        return cls.from_json(
            read_json_file(
                path,
                what=f"certificate {str(path)!r}",
                max_bytes=MAX_JSON_BYTES if max_bytes is None else max_bytes,
            )
        )

    @classmethod
    def from_json(cls, data: dict) -> "Certificate":
        """Parse (and type-check) a certificate dict written by `to_json`."""
        if not isinstance(data, dict):
            raise MdcertError("a certificate must be a JSON object")
        try:
            if not isinstance(
                data.get("status"), str
            ):  # Enum's own error takes the repr of the value
                raise ValueError
            status = CertStatus(data.get("status"))
        except ValueError:
            raise MdcertError(
                f"unknown certificate status {short_repr(data.get('status'))}; expected optimal, infeasible "
                f"or no_verified_result"
            ) from None
        svm = data.get("svm")
        if svm not in SVMS:
            raise MdcertError(
                f"certificate 'svm' must be one of {', '.join(SVMS)}, got {short_repr(svm)}"
            )
        p = fraction_from_json(data, "p")
        if p is None or p <= 1:
            raise MdcertError(
                f"certificate 'p' must be an exact 'num/den' string > 1, got {short_repr(data.get('p'))}"
            )
        alpha = data.get("alpha")
        if not isinstance(alpha, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in alpha
        ):
            raise MdcertError("certificate 'alpha' must be a list of integers")
        sup = data.get("support")
        support = None
        if sup is not None:
            if not isinstance(sup, dict):
                raise MdcertError(
                    "certificate 'support' must be an object with tight, inactive, undecided"
                )
            try:
                support = SupportClass(
                    *(
                        tuple(tuple(index_from_json(x) for x in r) for r in sup.get(k, []))
                        for k in ("tight", "inactive", "undecided")
                    )
                )
            except (TypeError, ValueError):
                raise MdcertError(
                    "certificate 'support' lists must hold integer index lists like [i, t]"
                ) from None
        vecs = {
            k: None if data.get(k) is None else ExactVector.from_json(data[k], name=k)
            for k in ("w", "lam", "gordan")
        }
        basis = data.get("gordan_basis")
        if basis is not None and (
            not isinstance(basis, list)
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in basis)
        ):
            raise MdcertError(
                "certificate 'gordan_basis' must be a list of row positions (integers)"
            )
        for key in ("d", "digits"):
            val = data.get(key, 0)
            if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val < 2**31:
                raise MdcertError(
                    f"certificate field {key!r} must be an integer in 0..2**31-1, got {short_repr(val)}"
                )
        if not isinstance(data.get("data_hash", ""), str):
            raise MdcertError(
                f"certificate 'data_hash' must be a string like 'sha256:...', got {short_repr(data.get('data_hash'))}"
            )
        if not isinstance(data.get("info") or {}, dict) or not isinstance(
            data.get("exact_kkt", False), bool
        ):
            raise MdcertError("certificate 'info' must be an object and 'exact_kkt' true or false")
        return cls(
            status=status,
            svm=svm,
            p=p,
            alpha=tuple(alpha),
            data_hash=data.get("data_hash", ""),
            opt_lower=fraction_from_json(data, "opt_lower"),
            opt_upper=fraction_from_json(data, "opt_upper"),
            distance_upper=fraction_from_json(data, "distance_upper"),
            direction_error_upper=fraction_from_json(data, "direction_error_upper"),
            bregman_upper=fraction_from_json(data, "bregman_upper"),
            support=support,
            exact_kkt=bool(data.get("exact_kkt", False)),
            d=int(data.get("d", 0)),
            digits=int(data.get("digits", 0)),
            info=dict(data.get("info") or {}),
            gordan_basis=None if basis is None else tuple(basis),
            **vecs,
        )


def solution_shape(svm: str, d: int, size: int) -> tuple[int, ...]:
    """The shape of a certified point of ``size`` entries: (d, d) attention, (K, d) multiclass
    (row-major, ``W[k, j] = w[k*d + j]``), (size,) decoder and binary."""
    if svm == "attention":
        return (d, d)
    if svm == "multiclass" and d > 0 and size % d == 0:
        return (size // d, d)
    return (size,)
