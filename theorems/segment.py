"""Optional: convexity of ``psi - eta L`` on each whole segment ``[W_k, W_{k+1}]`` (docs/theory.md section 2).

Stronger than the relative-smoothness inequality at the end points (`theorems.stepsize`): the descent
lemma needs ``g(tau) = psi(W_tau) - eta L(W_tau)``, ``W_tau = W_k + tau (W_{k+1} - W_k)``, to be convex
on ``[0, 1]``, i.e. ``g'' >= 0``. Along the segment

* ``psi'' = (p-1) sum_j |W_tau,j|^{p-2} Delta_j^2``, bounded below per entry by ``max|W_tau,j|^{p-2}``
  (p < 2; +inf curvature at 0 only helps) or ``min|W_tau,j|^{p-2}`` (p > 2; 0 when the entry can vanish);
* ``L'' = (1/n) sum_i [l''(u_i) C_i^2 + l'(u_i) y_i M_i]`` with ``delta`` the (exact) logit increment,
  ``C_i = sum_t sigma_t (h_t - f_i) delta_t`` and ``M_i = sum_t sigma_t (h_t - f_i)(delta_t - E delta)^2``
  (the derivatives of ``u_i = y_i sigma(s)^T h_i`` along a line in logit space).

Both are evaluated in arb with ``tau`` a ball: first ``[0, 1]`` for every step at once, then bisection of
the steps not yet proved (depth-limited). A refutation needs a point ``tau`` where ``g'' < 0`` provably.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import flint
import numpy as np
from flint import arb

from certify.errors import MdcertError
from theorems.balls import arb_fraction
from theorems.logits import (
    BALL_EXP,
    RIGOROUS_LOSSES,
    check_trajectory,
    exact_logits,
    padding_mask,
    softmax_balls,
    token_values,
)

__all__ = ["SegmentCheck", "segment_convexity"]

_PREC = 96


@dataclass(frozen=True)
class SegmentCheck:
    """Per step: +1 proved convex on the whole segment, -1 refuted (a point with g'' < 0), 0 undecided."""

    status: np.ndarray
    evaluations: int


def _loss_d12(u: np.ndarray, loss: str) -> tuple[np.ndarray, np.ndarray]:
    if loss == "logistic":
        e = BALL_EXP(-u)
        return -e / (1 + e), e / ((1 + e) * (1 + e))
    if loss == "exponential":
        e = BALL_EXP(-u)
        return -e, e
    if loss == "linear":
        return np.full(u.shape, arb(-1), dtype=object), np.full(u.shape, arb(0), dtype=object)
    raise MdcertError(
        f"no rigorous evaluation for loss {loss!r}; use one of {', '.join(RIGOROUS_LOSSES)}"
    )


def _curvature_lower(w: arb, e: arb, p_below_2: bool) -> arb:
    """A rigorous lower bound of ``|x|^{p-2}`` over the ball w (exact ball)."""
    if p_below_2:
        if w.is_zero():
            return arb(0)
        return (abs(w).abs_upper() ** e).lower()
    if w.contains(0):
        return arb(0)
    return (abs(w).abs_lower() ** e).lower()


def _curvature_ball(w: arb, e: arb, p_below_2: bool) -> arb:
    """An enclosure of ``|x|^{p-2}`` over the ball w (nan when it is unbounded: p < 2 and 0 in w)."""
    if w.contains(0):
        if p_below_2:
            return arb("nan")
        return arb(0).union(abs(w).abs_upper() ** e)
    return abs(w) ** e


def _g2(
    S0,
    dS,
    W0,
    dW,
    H,
    Y,
    tau,
    p: Fraction,
    eta: arb,
    loss: str,
    *,
    lower: bool = True,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """Balls for g''(tau) per step (arrays with leading step axis; ``tau`` one ball per step).

    With ``lower=True`` the psi part is replaced by a rigorous lower bound (for proofs); with
    ``lower=False`` it is enclosed (for refutations). ``mask``: valid tokens (n, T) or None (full length).
    """
    n = S0.shape[1]
    tk = tau[:, None, None]
    S = S0 + tk * dS
    sig = softmax_balls(S, mask)
    f = (sig * H[None]).sum(axis=2)
    hc = H[None] - f[:, :, None]
    Ed = (sig * dS).sum(axis=2)
    C = (sig * hc * dS).sum(axis=2)
    dc = dS - Ed[:, :, None]
    M = (sig * hc * dc * dc).sum(axis=2)
    l1, l2 = _loss_d12(f * Y[None], loss)
    L2 = (l2 * C * C + l1 * Y[None] * M).sum(axis=1) / n
    W = W0 + tau[:, None] * dW
    pm2 = p - 2
    if pm2 == 0:
        curv = np.full(W.shape, arb(1), dtype=object)
    else:
        e, below = arb_fraction(pm2), pm2 < 0
        fn = _curvature_lower if lower else _curvature_ball
        curv = np.frompyfunc(lambda w: fn(w, e, below), 1, 1)(W)
    psi2 = (curv * dW * dW).sum(axis=1) * arb_fraction(p - 1)
    return psi2 - eta * L2


def segment_convexity(
    problem, trajectory, eta: Fraction, p: Fraction, *, loss: str = "logistic", max_depth: int = 5
) -> SegmentCheck:
    """Prove or refute ``(psi - eta L)'' >= 0`` on every recorded segment (interval bisection in tau)."""
    Ws = check_trajectory(trajectory, problem.d)
    if loss not in RIGOROUS_LOSSES:
        raise MdcertError(
            f"no rigorous evaluation for loss {loss!r}; use one of {', '.join(RIGOROUS_LOSSES)}"
        )
    K = Ws.shape[0] - 1
    hint, hexp = token_values(problem)
    with flint.ctx.workprec(_PREC):
        Sx = exact_logits(problem, Ws)
        Wb = np.frompyfunc(arb, 1, 1)(Ws.reshape(K + 1, -1))
        H = np.frompyfunc(lambda k: arb((int(k), hexp)), 1, 1)(hint)
        Y = np.where(problem.y > 0, 1, -1).astype(object)
        S0, dS = Sx[:-1], Sx[1:] - Sx[:-1]
        W0, dW = Wb[:-1], Wb[1:] - Wb[:-1]
        eta_b = arb_fraction(eta)
        mask = padding_mask(problem)
        status = np.zeros(K, dtype=np.int8)
        # work items: (step, lo, hi) with tau in [lo, hi] (dyadic end points)
        items = [(k, Fraction(0), Fraction(1)) for k in range(K)]
        evals = 0

        def run(pieces, *, centre: bool):
            ks = np.array([k for k, _, _ in pieces])
            taus = np.empty(len(pieces), dtype=object)
            taus[:] = [
                arb_fraction((lo + hi) / 2) + (arb(0) if centre else arb(0, float(hi - lo) / 2))
                for _, lo, hi in pieces
            ]
            return _g2(
                S0[ks],
                dS[ks],
                W0[ks],
                dW[ks],
                H,
                Y,
                taus,
                p,
                eta_b,
                loss,
                lower=not centre,
                mask=mask,
            )

        for depth in range(max_depth + 1):
            if not items:
                break
            g = run(items, centre=False)
            evals += len(items)
            failing = [it for it, gk in zip(items, g) if status[it[0]] != -1 and not gk >= 0]
            if failing:
                # try to refute at the centres of the pieces not yet proved (enclosure, not a bound)
                gc = run(failing, centre=True)
                evals += len(failing)
                for (k, _, _), gk in zip(failing, gc):
                    if gk < 0:
                        status[k] = -1
                failing = [it for it in failing if status[it[0]] != -1]
            if depth == max_depth:
                items = failing
                break
            items = [
                half
                for k, lo, hi in failing
                for half in ((k, lo, (lo + hi) / 2), (k, (lo + hi) / 2, hi))
            ]
        undecided = {k for k, _, _ in items}
        for k in range(K):
            if status[k] == 0 and k not in undecided:
                status[k] = 1
    return SegmentCheck(status, evals)
