"""Configuration of ``mdcert paths``: validation of its options (before torch is imported) and of the
sizes of a run; one-line MdcertError on bad input. Takes plain keyword values (the command's frozen
``Config`` is built from them in `experiments.commands.paths`)."""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Callable

import numpy as np

from certify.errors import MdcertError
from experiments.runtime.resources import check_memory

__all__ = ["parse_config", "check_sizes", "MAX_STEPS", "MAX_COUNT", "P_GAP_RANGE", "check_float_p"]

#: the largest step count accepted (larger ones overflow index arithmetic and would run for days)
MAX_STEPS = 10**9
#: the largest --trials, --inits, --n, --T, --d and --records accepted (larger ones cannot fit in memory)
MAX_COUNT = 10**6


#: the float64 training paths need 1/1024 <= p - 1 <= 1024: the mirror map sign(w)|w|^(p-1) and its
#: inverse |theta|^(1/(p-1)) then keep every entry of magnitude between 1/2 and 2 inside float64's range
#: (outside it a path is rounding noise: W underflows to 0 or overflows at the first step)
P_GAP_RANGE = (Fraction(1, 1024), Fraction(1024))


def check_float_p(p: Fraction, text: str, option: str = "--p") -> Fraction:
    """``p`` (parsed from ``text``) unless the float64 path engines cannot represent its mirror map
    (one-line MdcertError)."""
    lo, hi = P_GAP_RANGE
    if not lo <= p - 1 <= hi:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise MdcertError(
            f"{option} {shown} is outside the range of the float64 training paths: they need "
            f"1 + 1/1024 <= p <= 1025 (the mirror map |w|^(p-1) and its inverse overflow or "
            f"underflow otherwise); certificates and checks without a path take any p > 1"
        )
    return p


def _split(text: str, name: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",")]
    if not items or any(s == "" for s in items):
        raise MdcertError(
            f"--{name} must be a comma-separated list without empty items, got {text!r}"
        )
    return items


def _numbers(text: str, name: str, convert: Callable[[str], float], what: str) -> list:
    """The comma-separated values of ``--name`` converted one by one; MdcertError naming ``what``."""
    items = _split(text, name)
    try:
        return [convert(s) for s in items]
    except ValueError:
        raise MdcertError(f"--{name} must be {what}, got {text!r}") from None


def parse_config(
    *,
    p: str,
    steps: str,
    lr: str,
    trials: int | None,
    inits: int | None,
    n: int | None,
    T: int | None,
    d: int | None,
    records: int,
    tail: float,
    digits: int,
    decoder_lr: float | None,
    seed: int,
    device: str,
    workers: int | None,
) -> dict:
    """Validate the options of ``mdcert paths`` (before torch is imported); MdcertError with one line
    on bad input.

    ``p``, ``steps`` and ``lr`` are the comma-separated texts of the command line. A size given as None
    (``trials``, ``n``, ``T``, ``d`` from problem files, ``inits`` from a ``--init`` file) is checked by
    `check_sizes` once the files are read. Returns ``{"p", "p_text", "steps", "lr", "workers",
    "device"}``: the exponents (Fractions) and their texts, the step count of each p, the step sizes,
    the certification processes and the normalized device name.
    """
    from certify.exact import parse_p

    ps = [check_float_p(parse_p(s, name="--p"), s) for s in _split(p, "p")]
    if len(set(ps)) != len(ps):
        raise MdcertError(f"--p lists a value twice: {p!r}")
    ks = _numbers(steps, "steps", int, "integers")
    if len(ks) == 1:
        ks = ks * len(ps)
    if len(ks) != len(ps):
        raise MdcertError(
            f"--steps has {len(ks)} values but --p has {len(ps)}; give one step count per p (or one for all)"
        )
    if any(k < 1 for k in ks):
        raise MdcertError(f"--steps must be >= 1, got {steps!r}")
    if any(k > MAX_STEPS for k in ks):
        raise MdcertError(f"--steps must be at most {MAX_STEPS:.0e}, got {steps!r}")
    lrs = _numbers(lr, "lr", float, "numbers")
    if any(not np.isfinite(x) or x <= 0 for x in lrs):
        raise MdcertError(f"--lr values must be finite and > 0, got {lr!r}")
    sizes = {"trials": trials, "inits": inits, "n": n, "T": T, "d": d}
    _check_counts({k: v for k, v in sizes.items() if v is not None})
    if records > MAX_COUNT:
        raise MdcertError(f"--records must be at most {MAX_COUNT:.0e}, got {records}")
    if not 0 <= tail < 1:
        raise MdcertError(f"--tail must be in [0, 1), got {tail}")
    if records < 2:
        raise MdcertError(f"--records must be >= 2, got {records}")
    if not 1 <= digits <= 2000:
        raise MdcertError(f"--digits must be in 1..2000, got {digits}")
    if decoder_lr is not None and (not np.isfinite(decoder_lr) or decoder_lr <= 0):
        raise MdcertError(f"--decoder-lr must be finite and > 0, got {decoder_lr}")
    if not 0 <= seed < 2**63:
        raise MdcertError(f"--seed must be in 0..2**63-1, got {seed}")
    dev = str(device).strip().lower()
    if dev not in ("auto", "cpu", "cuda") and not (dev.startswith("cuda:") and dev[5:].isdigit()):
        raise MdcertError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N")
    if None not in sizes.values():
        check_sizes(**sizes, records=records, runs=len(ps) * len(lrs))
    if workers is None:
        workers = 2 if (os.cpu_count() or 1) >= 2 else 0
    if workers < 0:
        raise MdcertError(f"--workers must be >= 0, got {workers}")
    return {
        "p": ps,
        "p_text": _split(p, "p"),
        "steps": ks,
        "lr": lrs,
        "workers": workers,
        "device": dev,
    }


def _check_counts(sizes: dict[str, int]) -> None:
    """Each of ``--trials``, ``--inits``, ``--n``, ``--T``, ``--d`` given in ``sizes`` in its range."""
    for name, value in sizes.items():
        if value < (2 if name == "T" else 1):
            raise MdcertError(f"--{name} must be >= {2 if name == 'T' else 1}, got {value}")
        if value > MAX_COUNT:
            raise MdcertError(f"--{name} must be at most {MAX_COUNT:.0e}, got {value}")


def check_sizes(
    *, trials: int, inits: int, n: int, T: int, d: int, records: int, runs: int
) -> None:
    """The sizes of a run (given, or read from its files) in range, and its arrays within the memory
    budget (``runs``: the number of (p, lr) pairs); one-line MdcertError."""
    _check_counts({"trials": trials, "inits": inits, "n": n, "T": T, "d": d})
    B = trials * inits * runs
    check_memory(
        8 * (4 * trials * n * T * d + B * (records * (d * d + n + 2) + 6 * n * T + 8 * d * d)),
        what=f"{B} trajectories of {trials} datasets (n={n}, T={T}, d={d}, {records} records)",
        fix="reduce --trials, --inits, --records or the sizes --n, --T, --d",
    )
