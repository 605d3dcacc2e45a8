"""Step sizes along a recorded trajectory checked in ball arithmetic: the per-step terms of the
convexity condition and their exact evaluation (`theorems.stepsize`; docs/theory.md section 5.4)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from flint import arb

from certify.errors import MdcertError
from theorems.balls import arb_fraction, enclosure
from theorems.logits import (
    RIGOROUS_LOSSES,
    check_trajectory,
    dyadic_rows,
    logit_balls,
    logit_ints,
    loss_terms,
    padding_mask,
    softmax_balls,
    token_values,
)
from theorems.prefilter import prefilter_steps

#: working precisions (bits) tried in turn until every step is decided
PRECISIONS = (96, 320, 1280)

__all__ = ["PRECISIONS", "StepCheck", "check_steps", "evaluate", "iterate_terms"]


def iterate_terms(
    S: np.ndarray,
    Wb: np.ndarray,
    H: np.ndarray,
    Y: np.ndarray,
    p: Fraction,
    loss: str,
    mask: np.ndarray | None = None,
):
    """Per-iterate balls at the current precision: L, dL/ds (n, T), psi, sign(W)|W|^{p-1}.

    Args:
        S: exact logits (K1, n, T) of arb.
        Wb: exact entries (K1, m) of arb.
        H: exact ``v^T x_it`` (n, T) of arb.
        Y: labels (n,) as ints.
        mask: valid tokens (n, T) or None (full length); padding has softmax weight exactly 0.
    """
    n = S.shape[1]
    sig = softmax_balls(S, mask)
    f = (sig * H[None]).sum(axis=2)
    lval, lder = loss_terms(f * Y[None], loss)
    L = lval.sum(axis=1) / n
    G = (lder * Y[None])[:, :, None] * sig * (H[None] - f[:, :, None]) / n
    pm1 = p - 1
    if pm1.denominator == 1:
        e = int(pm1)
        P = np.frompyfunc(lambda x: abs(x) ** e, 1, 1)(Wb)
    else:
        ea, zero = arb_fraction(pm1), arb(0)
        # entries are exact dyadic balls: |x| > 0 exactly unless x == 0
        P = np.frompyfunc(lambda x: abs(x) ** ea if x != 0 else zero, 1, 1)(Wb)
    psi = (np.frompyfunc(abs, 1, 1)(Wb) * P).sum(axis=1) / arb_fraction(p)
    SP = np.frompyfunc(lambda x: -1 if x < 0 else 1, 1, 1)(Wb) * P
    return L, G, psi, SP


def evaluate(
    steps: np.ndarray,
    S_int: np.ndarray,
    E: np.ndarray,
    Ws: np.ndarray,
    H: np.ndarray,
    Y: np.ndarray,
    p: Fraction,
    loss: str,
    prec: int,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Balls of D_L(W_{k+1}, W_k) and D_psi(W_{k+1}, W_k) for the given steps at ``prec`` bits."""
    with flint.ctx.workprec(int(prec)):
        idx = np.array(sorted(set(steps.tolist()) | {int(k) + 1 for k in steps}), dtype=np.int64)
        pos = {int(k): i for i, k in enumerate(idx)}
        S = logit_balls(S_int[idx], E[idx])
        Wb = np.frompyfunc(arb, 1, 1)(Ws[idx].reshape(len(idx), -1))  # arb(float64) is exact
        L, G, psi, SP = iterate_terms(S, Wb, H, Y, p, loss, mask)
        ia = np.array([pos[int(k)] for k in steps], dtype=np.int64)
        ib = np.array([pos[int(k) + 1] for k in steps], dtype=np.int64)
        DL = L[ib] - L[ia] - (G[ia] * (S[ib] - S[ia])).sum(axis=(1, 2))
        Dpsi = psi[ib] - psi[ia] - (SP[ia] * (Wb[ib] - Wb[ia])).sum(axis=1)
    return DL, Dpsi


@dataclass(frozen=True)
class StepCheck:
    """Per-step outcome of the relative-smoothness check.

    Attributes:
        status: per step, +1 proved, -1 refuted, 0 undecided (int8 array of length K).
        ratio_lo, ratio_hi: exact enclosure end points of ``eta D_L / D_psi`` per step (None where
            D_psi is not proved positive; 0 where D_L = 0 exactly).
        precision: bits used for the deciding evaluation of each step (-1: proved by the pre-filter,
            0: unchanged logits).
    """

    status: np.ndarray
    ratio_lo: list
    ratio_hi: list
    precision: np.ndarray


def check_steps(
    problem,
    trajectory: Any,
    eta: Any,
    p: Fraction,
    *,
    loss: str = "logistic",
    precisions: tuple[int, ...] = PRECISIONS,
    prefilter: bool = True,
) -> StepCheck:
    """Rigorous ``D_L(W_{k+1}, W_k) <= D_psi(W_{k+1}, W_k) / eta_k`` on each recorded step.

    Args:
        problem: the data (the decoder v is held fixed).
        trajectory: float64 iterates (K+1, d, d).
        eta: exact step size (constant steps), or a sequence of K exact step sizes, one per step
            (normalized steps: ``eta_k = lr / ||G(W_k)||_q``, docs/theory.md section 2.3).
        p: exact exponent.
        loss: one of `RIGOROUS_LOSSES`.
        precisions: working precisions (bits) of the full ball evaluation: the steps the pre-filter
            did not prove at the first, then only the steps still undecided at each next one.
        prefilter: first try the cheap rigorous bounds of `theorems.prefilter` (no exp, no powers).
    """
    Ws = check_trajectory(trajectory, problem.d)
    if loss not in RIGOROUS_LOSSES:
        raise MdcertError(
            f"no rigorous evaluation for loss {loss!r}; use one of {', '.join(RIGOROUS_LOSSES)}"
        )
    K = Ws.shape[0] - 1
    per_step = isinstance(eta, (list, tuple, np.ndarray))
    if per_step and len(eta) != K:
        raise MdcertError(f"{len(eta)} step sizes for a trajectory of {K} steps; give one per step")
    rows = dyadic_rows(Ws)
    S_int, E = logit_ints(problem, Ws, rows)
    proved, pre_ratio, unchanged = prefilter_steps(
        problem, Ws, rows, S_int, E, eta, p, loss if prefilter else "none"
    )
    gamma_h, hexp = token_values(problem)
    H = np.frompyfunc(lambda k: arb((int(k), hexp)), 1, 1)(gamma_h)
    Y = np.where(problem.y > 0, 1, -1).astype(object)
    status = np.zeros(K, dtype=np.int8)
    prec_used = np.zeros(K, dtype=np.int64)
    ratio_lo: list = [None] * K
    ratio_hi: list = [None] * K
    # unchanged logits: D_L = 0 exactly (and D_psi >= 0 always)
    for k in np.flatnonzero(unchanged):
        status[k], ratio_lo[k], ratio_hi[k] = 1, Fraction(0), Fraction(0)
    # proved by the cheap bounds: only an upper bound of the ratio is known
    for k in np.flatnonzero(proved & ~unchanged):
        status[k], ratio_hi[k], prec_used[k] = 1, pre_ratio[k], -1
    todo = np.flatnonzero(~(unchanged | proved))
    for prec in precisions:
        if todo.size == 0:
            break
        DL, Dpsi = evaluate(todo, S_int, E, Ws, H, Y, p, loss, prec, padding_mask(problem))
        with flint.ctx.workprec(int(prec)):
            eta_one = None if per_step else arb_fraction(eta)
            left = []
            for k, dl, dp in zip(todo, DL, Dpsi):
                eta_b = arb_fraction(eta[k]) if per_step else eta_one
                slack = dp / eta_b - dl
                if slack >= 0:
                    status[k] = 1
                elif slack < 0:
                    status[k] = -1
                else:
                    left.append(k)
                    continue
                prec_used[k] = prec
                if dp > 0:
                    ratio_lo[k], ratio_hi[k] = enclosure(eta_b * dl / dp)
        todo = np.array(left, dtype=np.int64)
    return StepCheck(status, ratio_lo, ratio_hi, prec_used)
