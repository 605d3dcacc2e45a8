"""Configuration of ``mdcert paths``: validation of the command-line arguments (before torch is
imported) and of the output directory; one-line MdcertError on bad input."""

from __future__ import annotations

import argparse
import os
from fractions import Fraction
from typing import Callable

import numpy as np

from certify.errors import MdcertError
from experiments.resources import check_memory

__all__ = ["parse_config", "MAX_STEPS", "P_GAP_RANGE", "check_float_p"]

#: the largest step count accepted (larger ones overflow index arithmetic and would run for days)
MAX_STEPS = 10 ** 9
#: the largest --trials, --inits, --n, --T, --d and --records accepted (larger ones cannot fit in memory)
MAX_COUNT = 10 ** 6


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
        raise MdcertError(f"{option} {shown} is outside the range of the float64 training paths: they need "
                          f"1 + 1/1024 <= p <= 1025 (the mirror map |w|^(p-1) and its inverse overflow or "
                          f"underflow otherwise); certificates and checks without a path take any p > 1")
    return p


def _split(text: str, name: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",")]
    if not items or any(s == "" for s in items):
        raise MdcertError(f"--{name} must be a comma-separated list without empty items, got {text!r}")
    return items


def _numbers(text: str, name: str, convert: Callable[[str], float], what: str) -> list:
    """The comma-separated values of ``--name`` converted one by one; MdcertError naming ``what``."""
    items = _split(text, name)
    try:
        return [convert(s) for s in items]
    except ValueError:
        raise MdcertError(f"--{name} must be {what}, got {text!r}") from None


def parse_config(args: argparse.Namespace) -> dict:
    """Validate the arguments (before torch is imported); MdcertError with one line on bad input."""
    from certify.exact import parse_p

    ps = [check_float_p(parse_p(s, name="--p"), s) for s in _split(args.p, "p")]
    if len(set(ps)) != len(ps):
        raise MdcertError(f"--p lists a value twice: {args.p!r}")
    steps = _numbers(args.steps, "steps", int, "integers")
    if len(steps) == 1:
        steps = steps * len(ps)
    if len(steps) != len(ps):
        raise MdcertError(f"--steps has {len(steps)} values but --p has {len(ps)}; give one step count per p (or one for all)")
    if any(k < 1 for k in steps):
        raise MdcertError(f"--steps must be >= 1, got {args.steps!r}")
    if any(k > MAX_STEPS for k in steps):
        raise MdcertError(f"--steps must be at most {MAX_STEPS:.0e}, got {args.steps!r}")
    lrs = _numbers(args.lr, "lr", float, "numbers")
    if any(not np.isfinite(x) or x <= 0 for x in lrs):
        raise MdcertError(f"--lr values must be finite and > 0, got {args.lr!r}")
    for name in ("trials", "inits", "n", "T", "d"):
        if getattr(args, name) < (2 if name == "T" else 1):
            raise MdcertError(f"--{name} must be >= {2 if name == 'T' else 1}, got {getattr(args, name)}")
        if getattr(args, name) > MAX_COUNT:
            raise MdcertError(f"--{name} must be at most {MAX_COUNT:.0e}, got {getattr(args, name)}")
    if args.records > MAX_COUNT:
        raise MdcertError(f"--records must be at most {MAX_COUNT:.0e}, got {args.records}")
    if not 0 <= args.tail < 1:
        raise MdcertError(f"--tail must be in [0, 1), got {args.tail}")
    if args.records < 2:
        raise MdcertError(f"--records must be >= 2, got {args.records}")
    if not 1 <= args.digits <= 2000:
        raise MdcertError(f"--digits must be in 1..2000, got {args.digits}")
    if args.decoder_lr is not None and (not np.isfinite(args.decoder_lr) or args.decoder_lr <= 0):
        raise MdcertError(f"--decoder-lr must be finite and > 0, got {args.decoder_lr}")
    if not 0 <= args.seed < 2 ** 63:
        raise MdcertError(f"--seed must be in 0..2**63-1, got {args.seed}")
    dev = str(args.device).strip().lower()
    if dev not in ("auto", "cpu", "cuda") and not (dev.startswith("cuda:") and dev[5:].isdigit()):
        raise MdcertError(f"unknown device {args.device!r}; use auto, cpu, cuda or cuda:N")
    B = args.trials * args.inits * len(ps) * len(lrs)
    n, T, d = args.n, args.T, args.d
    check_memory(8 * (4 * args.trials * n * T * d + B * (args.records * (d * d + n + 2) + 6 * n * T + 8 * d * d)),
                 what=f"{B} trajectories of {args.trials} datasets (n={n}, T={T}, d={d}, {args.records} records)",
                 fix="reduce --trials, --inits, --records or the sizes --n, --T, --d")
    workers = args.workers
    if workers is None:
        workers = 2 if (os.cpu_count() or 1) >= 2 else 0
    if workers < 0:
        raise MdcertError(f"--workers must be >= 0, got {workers}")
    return {"p": ps, "p_text": _split(args.p, "p"), "steps": steps, "lr": lrs, "workers": workers, "device": dev}


