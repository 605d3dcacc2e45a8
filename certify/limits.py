"""Limits on untrusted certificates, enforced before any expensive arithmetic (docs/theory.md section 4.6).

A certificate is untrusted input: a hostile or corrupted file must be refused in time linear in its
size, never hang the checker or crash it. Two layers:

1. The JSON text (`parse_json`): at most ``max_bytes`` bytes, strict UTF-8, nesting depth at most
   `MAX_JSON_DEPTH`, no duplicate keys, no ``NaN`` / ``Infinity`` literals, no non-finite float,
   integer literals of at most `MAX_INT_LITERAL_DIGITS` digits (larger integers are written as
   decimal strings). Each violation is one `MdcertError` line.
2. The sizes, relative to the problem (`size_violation`), with B the largest bit length of an
   exact row factor entry of the data and r = min(N, m) (rows, variables):

   - ball integers (w, lam, den of an optimal certificate without exact KKT):
     ``32 * ceil(f * 2000 * log2(10)) + 4 (B + 64) + 4096`` bits, with
     ``f = min(max(1, p/2), 8)`` (2000 = the most digits ``mdcert certify`` accepts; for p > 2 the
     gap needs p/2 times the digits; p above 16 gets the budget of p = 16);
   - exact integers (Gordan vectors, the p = 2 rational KKT certificate): that plus
     ``2 (r + 1) (B + 64)`` bits (Cramer / Hadamard bound of an r x r integer system);
   - every exponent: ``|exp| <=`` the exact budget ``+ 4 |e_A| + 16384`` (e_A the rows' exponent);
   - the numerator and denominator of every bound: the exact budget plus the exponent budget;
   - p: numerator and denominator of at most `MAX_P_BITS` bits each.

3. The work (`TIGHT_GROUPS`): tight claims are proven over at most ``min(m, TIGHT_GROUPS)`` distinct
   rows not claimed inactive; a certificate that leaves more rows open gets its tight claims refused
   before any Gram matrix is formed, and undecided rows cost nothing beyond the partition check.

Real certificates stay far inside (a 2000-digit certificate at p = 7/4 has integers of about 13,000
bits; the ball budget is about 213,000). The limits are in docs/formats.md ("Limits the checker
enforces").
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

import numpy as np

from certify.errors import MdcertError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_INT_LITERAL_DIGITS",
    "MAX_DIGITS",
    "MAX_P_BITS",
    "TIGHT_GROUPS",
    "parse_json",
    "json_depth",
    "SizeBudget",
    "size_budget",
    "size_violation",
    "max_certificate_bytes",
    "read_json_file",
]

#: largest certificate file read by default (the checker's relative bound is usually far smaller)
MAX_JSON_BYTES = 1 << 30
#: deepest nesting of JSON arrays and objects (a certificate needs 4; Python's json recurses per level)
MAX_JSON_DEPTH = 64
#: longest integer literal (Python's own int/str limit is 4300 digits; longer integers are strings)
MAX_INT_LITERAL_DIGITS = 4300
#: the most digits ``mdcert certify --digits`` accepts (certify.svm refuses more)
MAX_DIGITS = 2000
#: bits of the numerator and of the denominator of p (77 decimal digits)
MAX_P_BITS = 256
#: most distinct rows not claimed inactive over which tight rows are proven (an exact Gram matrix
#: and its verified inverse diagonal; also at most m, else that matrix is singular). Beyond it every
#: tight claim is refused at once; the solver (`certify.bounds.TIGHT_LIMIT`) claims none beyond it
TIGHT_GROUPS = 4096

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")


def json_depth(raw: bytes) -> int:
    """Deepest nesting of ``[`` / ``{`` in JSON text, outside string literals (linear time, no recursion)."""
    text = _STRING.sub(b'""', raw)
    arr = np.frombuffer(text, dtype=np.uint8)
    pos = np.flatnonzero((arr == 91) | (arr == 123) | (arr == 93) | (arr == 125))  # [ { ] }
    if pos.size == 0:
        return 0
    step = np.where((arr[pos] == 91) | (arr[pos] == 123), 1, -1).astype(np.int64)
    return int(np.cumsum(step).max())


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise MdcertError(
                f"duplicate key {key[:40]!r} in a JSON object; each key may appear once"
            )
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise MdcertError(
        f"JSON literal {name} is not allowed (strict JSON; exact fields are 'num/den' strings)"
    )


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_LITERAL_DIGITS:
        raise MdcertError(
            f"integer literal of {len(text.lstrip('-'))} digits (at most {MAX_INT_LITERAL_DIGITS}; "
            f"longer integers are written as decimal strings)"
        )
    return int(text)


def _float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise MdcertError(f"number {text[:40]} is out of the float64 range")
    return x


def parse_json(
    raw: bytes | str, *, what: str = "certificate", max_bytes: int = MAX_JSON_BYTES
) -> Any:
    """Parse untrusted JSON within the limits of layer 1 (module docstring); `MdcertError` otherwise."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > max_bytes:
        raise MdcertError(f"{what} is {len(raw)} bytes, more than the {max_bytes} allowed here")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MdcertError(f"{what} is not valid JSON: not UTF-8 text (byte {exc.start})") from None
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise MdcertError(f"{what} nests arrays/objects {depth} deep (at most {MAX_JSON_DEPTH})")
    try:
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_int=_integer,
            parse_float=_float,
        )
    except MdcertError as exc:
        raise MdcertError(f"{what}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MdcertError(f"{what} is not valid JSON ({msg[:120]})") from None


class SizeBudget:
    """The size limits of one problem and one p (module docstring, layer 2)."""

    def __init__(self, *, p: Fraction, data_bits: int, rank: int, rows_exp: int) -> None:
        f = min(max(Fraction(1), Fraction(p) / 2), Fraction(8))
        digit_bits = math.ceil(
            f * MAX_DIGITS * Fraction(33219280948873623, 10**16)
        )  # log2(10) rounded up
        self.ball_bits = 32 * digit_bits + 4 * (data_bits + 64) + 4096
        self.exact_bits = self.ball_bits + 2 * (rank + 1) * (data_bits + 64)
        self.exp = self.exact_bits + 4 * abs(rows_exp) + 16384
        self.fraction_bits = self.exact_bits + self.exp


def size_budget(
    *, p: Fraction, rows_L: np.ndarray, rows_R: np.ndarray | None, rows_exp: int, m: int
) -> SizeBudget:
    """The `SizeBudget` of exact row factors ``L`` (and ``R`` for attention), N x d object arrays."""

    def bits(M) -> int:  # the largest bit length is the bit length of the largest absolute value
        M = np.asarray(M)  # (max and -min: no array of absolute values, 1 GB at N d = 2e7)
        return max(int(M.max()), -int(M.min())).bit_length() if M.size else 0

    data_bits = bits(rows_L) + (bits(rows_R) if rows_R is not None else 0)
    return SizeBudget(p=p, data_bits=data_bits, rank=min(len(rows_L), m), rows_exp=rows_exp)


def _too_big(name: str, bits: int, limit: int, kind: str) -> str:
    return (
        f"{name} has an integer of {bits} bits; this problem allows at most {limit} ({kind} budget, "
        f"docs/formats.md 'Limits the checker enforces')"
    )


def size_violation(cert, budget: SizeBudget) -> str | None:
    """One line naming the first field of ``cert`` beyond ``budget``; None when every size is within it.

    Linear in the certificate's size: bit lengths only, no arithmetic on the values."""
    p = cert.p
    if max(p.numerator.bit_length(), p.denominator.bit_length()) > MAX_P_BITS:
        return f"p has a numerator or denominator of more than {MAX_P_BITS} bits"
    exact = cert.exact_kkt or cert.gordan is not None
    limit = budget.exact_bits if exact else budget.ball_bits
    for name in ("w", "lam", "gordan"):
        v = getattr(cert, name)
        if v is None:
            continue
        top = max((abs(k).bit_length() for k in v.ints), default=0)
        for label, bits in ((name, top), (f"{name}.den", v.den.bit_length())):
            if bits > limit:
                return _too_big(label, bits, limit, "exact" if exact else "ball")
        if abs(v.exp) > budget.exp:
            return f"{name}.exp = {v.exp} is beyond the exponent limit {budget.exp} of this problem"
    for name in (
        "opt_lower",
        "opt_upper",
        "distance_upper",
        "direction_error_upper",
        "bregman_upper",
    ):
        x = getattr(cert, name)
        if (
            x is not None
            and max(x.numerator.bit_length(), x.denominator.bit_length()) > budget.fraction_bits
        ):
            return f"{name} has a numerator or denominator beyond {budget.fraction_bits} bits"
    return None


def max_certificate_bytes(problem) -> int:
    """Bytes a certificate of ``problem`` (an `AttentionProblem` or a `ClassificationProblem`) may have,
    whatever its SVM and p:
    its integers at the exact budget of p = 16, in decimal, plus support lists and diagnostics
    (capped at `MAX_JSON_BYTES`). Read before parsing, so a huge file is refused unread."""

    def bits(arr) -> int:
        return int(np.abs(arr.ints).max()).bit_length() if arr.ints.size else 0

    if hasattr(problem, "exact_X"):  # a ClassificationProblem: plain rows of m entries
        X = problem.exact_X()
        N, m, exp, data_bits = problem.N, problem.m, abs(X.exp), bits(X) + 1
    else:
        X, z = problem.exact("X"), problem.exact("z")
        N, m = problem.n * max(problem.T - 1, 1), problem.d * problem.d
        exp, data_bits = abs(X.exp) + abs(z.exp), bits(X) + 1 + bits(z)
    budget = SizeBudget(p=Fraction(16), data_bits=data_bits, rank=min(N, m), rows_exp=exp)
    digits = math.ceil(budget.exact_bits * 0.30103) + 8
    return min(MAX_JSON_BYTES, (1 << 20) + (m + N + min(N, m) + 16) * digits + 64 * N)


def read_json_file(path, *, what: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """`parse_json` of a file, reading at most ``max_bytes + 1`` bytes (a larger file is refused unread)."""
    with open(path, "rb") as fh:
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise MdcertError(
            f"{what} is larger than the {max_bytes} bytes a certificate of this problem can have; "
            f"is it the JSON written by 'mdcert certify -o'?"
        )
    return parse_json(raw, what=what, max_bytes=max_bytes)
