"""Token indices alpha of an attention problem (docs/theory.md section 1): the text of an ``--alpha``
option checked without the data, and any form of alpha resolved against a problem (range, padding)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from certify.errors import MdcertError

__all__ = ["alpha_indices", "resolve_alpha"]


def alpha_indices(text: str) -> list[int] | None:
    """The token indices a comma-separated ``--alpha`` text names (None for 'opt' / 'global' /
    'optimal'), checked without the data; the range is checked by `resolve_alpha`.

    Raises:
        MdcertError: not 'opt' nor ASCII integers separated by commas (one line).
    """
    t = text.strip().lower()
    if t in {"opt", "global", "optimal"}:
        return None
    try:
        if not t.isascii() or "_" in t:
            raise ValueError  # int() reads other scripts' digits (Arabic-Indic) and 1_0; --p does not
        items = [s.strip() for s in t.split(",")] if t else []
        if any(s == "" for s in items):
            raise ValueError
        return [int(s) for s in items]
    except ValueError:
        raise MdcertError(
            f"invalid alpha {text!r}; use 'opt' or comma-separated token indices in ASCII digits "
            f"like 0,3,1"
        ) from None


def resolve_alpha(problem: Any, alpha) -> tuple[int, ...]:
    """Turn ``None`` / "opt" / a sequence / a comma string into validated token indices."""
    if alpha is None:
        if problem.alpha is not None:
            return tuple(int(a) for a in problem.alpha)
        alpha = "opt"
    if isinstance(alpha, str):
        text = alpha.strip().lower()
        if text in {"opt", "global", "optimal"}:
            tokens = problem.optimal_indices()
            if tokens.ties:
                i, ts = tokens.ties[0]
                raise MdcertError(
                    f"globally optimal tokens are tied in example {i} (tokens {list(ts)}); "
                    f"pass --alpha explicitly to choose one"
                )
            return tokens.indices
        alpha = alpha_indices(alpha)
    if isinstance(alpha, (list, tuple)) and any(isinstance(a, (bool, np.bool_)) for a in alpha):
        raise MdcertError(
            f"alpha must be {problem.n} integer token indices, got a boolean (true/false) in "
            f"{str(alpha)[:60]}"
        )
    try:
        vals = np.asarray(alpha)
    except (TypeError, ValueError):
        vals = np.asarray(None)
    if vals.dtype.kind not in "iuf" or vals.ndim != 1:
        shown = (
            f"shape {vals.shape}"
            if vals.dtype.kind in "iuf"
            else "booleans"
            if vals.dtype.kind == "b"
            else repr(alpha.tolist() if isinstance(alpha, np.ndarray) else alpha)[:80]
        )
        raise MdcertError(
            f"alpha must be 'opt' or a list of {problem.n} integer token indices, got {shown}"
        )
    if vals.shape[0] != problem.n:
        raise MdcertError(
            f"alpha must list one token index per example ({problem.n}), got {len(vals)}: {str(vals.tolist())[:80]}"
        )
    out = []
    for i, a in enumerate(vals.tolist()):
        if not math.isfinite(a) or not float(a).is_integer() or not 0 <= int(a) < problem.T:
            raise MdcertError(f"alpha[{i}] = {a} is not a token index in 0..{problem.T - 1}")
        if problem.lengths is not None and int(a) >= problem.lengths[i]:
            k = int(problem.lengths[i])
            raise MdcertError(
                f"alpha[{i}] = {int(a)} is a padding token (example {i} has lengths[{i}] = {k} tokens); "
                f"choose a token index in 0..{k - 1}"
            )
        out.append(int(a))
    return tuple(out)
