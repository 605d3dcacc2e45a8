"""Regularization paths of softmax attention with a fixed decoder (SPEC section 5, Theorem 6).

``W(R) = argmin_{||W||_p <= R} L(W)`` for a geometric grid of radii R, warm-started along the
grid, several starts ("chains"), a per-R first-order optimality gap on the l_p ball, and the
directional Bregman divergence ``D_psi(Wbar_mm, W(R)/||W(R)||_p)`` to the certified attention-SVM
direction of the chosen tokens (default: the globally optimal ones).

Why a log-domain objective. With ``gamma_it = y_i v^T x_it`` and reference tokens
``a_i = argmax_t gamma_it``, every logistic/exponential loss splits exactly as
``L(W) = L_* + E(W)`` with ``L_* = (1/n) sum_i l(gamma_{i a_i})`` and the excess
``E(W) = (1/n) sum_i [l(gamma_{i a_i} - delta_i) - l(gamma_{i a_i})] > 0``,
``delta_i = sum_t softmax_t(s_i) (gamma_{i a_i} - gamma_it) >= 0``. At large R, E and its gradient
are of order ``exp(-R x margin)`` (below float64 resolution of L itself). The solver minimizes
``log E`` computed with log-sum-exp from ``log delta_i``; its gradient ``grad L / E`` stays of
order R, so progress continues to R = 10^3 and beyond, where a plain L-BFGS on L stalls at R ~ 30.

Solver. For the large radii of interest the constraint is active; each radius is solved on the
sphere ``||W||_p = R`` with L-BFGS in the parametrization ``W = R h(theta)/||h(theta)||_p``,
``h = identity`` (p >= 2) or the inverse mirror map ``h(theta) = sign(theta)|theta|^{q-1}``
(p < 2, where the SVM direction has tiny entries). The reported stationarity is the l_p-ball
first-order gap ``max_{||W'||_p <= R} <-g, W' - W> = R||g||_q + <g, W>`` divided by ``R||g||_q``
(0 at a KKT point of the ball problem, 2 at the worst point); it also detects an interior
optimum missed by the sphere solve. All of this is float64 numerics (evidence for the
measurement, not a certificate); the reference direction comes from `certify.certify_svm`.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from certify.errors import MdcertError
from certify.exact import conjugate, format_fraction, parse_p

__all__ = [
    "ExcessLoss",
    "Reference",
    "SphereSolve",
    "StartSummary",
    "RadiusResult",
    "RegPath",
    "parse_radii",
    "geometric_radii",
    "ball_gap",
    "bregman_directional",
    "reference_direction",
    "solve_on_sphere",
    "regularization_path",
]

LOSSES = ("logistic", "exponential")


# ---------------------------------------------------------------------------------------- radii
def geometric_radii(start: float, stop: float, count: int) -> np.ndarray:
    """``count`` radii from ``start`` to ``stop``, equally spaced in log R.

    Raises:
        MdcertError: non-positive or non-finite ends, start > stop, count < 1, or count == 1 with
            start != stop.
    """
    try:
        start, stop = float(start), float(stop)
    except (TypeError, ValueError):
        raise MdcertError(f"invalid radii {start!r}:{stop!r}; radii must be numbers") from None
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
        raise MdcertError(f"invalid radii count {count!r}; COUNT must be an integer >= 1")
    if not (math.isfinite(start) and math.isfinite(stop)) or start <= 0 or stop <= 0:
        raise MdcertError(f"invalid radii {start!r}:{stop!r}; radii must be finite and positive (e.g. 10:1000:9)")
    if start > stop:
        raise MdcertError(f"invalid radii: START {start!r} > STOP {stop!r}; give an increasing range like 10:1000:9")
    if count < 1:
        raise MdcertError(f"invalid radii count {count}; COUNT must be >= 1")
    if count == 1:
        if start != stop:
            raise MdcertError(f"invalid radii: COUNT 1 needs START == STOP (got {start!r}:{stop!r})")
        return np.array([start])
    out = np.geomspace(start, stop, int(count))
    out[0], out[-1] = start, stop
    return out


_RADII = re.compile(r"^\s*([^:\s]+)\s*:\s*([^:\s]+)\s*:\s*([^:\s]+)\s*$")


def parse_radii(text: str) -> np.ndarray:
    """Parse ``START:STOP:COUNT`` (geometric grid, e.g. ``10:1000:9``) into radii.

    Raises:
        MdcertError: malformed text or an invalid grid (see `geometric_radii`).
    """
    m = _RADII.match(str(text))
    if not m:
        raise MdcertError(f"invalid radii {text!r}; use START:STOP:COUNT, e.g. 10:1000:9")
    try:
        start, stop = float(m.group(1)), float(m.group(2))
    except ValueError:
        raise MdcertError(f"invalid radii {text!r}; START and STOP must be numbers (e.g. 10:1000:9)") from None
    try:
        count = int(m.group(3))
    except ValueError:
        raise MdcertError(f"invalid radii {text!r}; COUNT must be an integer >= 1 (e.g. 10:1000:9)") from None
    return geometric_radii(start, stop, count)


# ---------------------------------------------------------------------------------------- helpers
def _p_floats(p: Fraction) -> tuple[float, float]:
    q = conjugate(p)
    return float(p), float(q)


def lp_norm_rows(U: np.ndarray, p: float) -> np.ndarray:
    """Row-wise l_p norm of a 2-D array, scaled so it never overflows."""
    a = np.abs(U)
    s = a.max(axis=1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    return (s[:, 0] * np.sum((a / s) ** p, axis=1) ** (1.0 / p))


def ball_gap(G: np.ndarray, W: np.ndarray, R: float, p: Fraction) -> tuple[float, float]:
    """First-order optimality gap of ``min f(W) s.t. ||W||_p <= R`` at W with gradient G.

    Returns:
        ``(relative, absolute)`` with ``absolute = R ||G||_q + <G, W>`` (the largest first-order
        decrease over the ball) and ``relative = absolute / (R ||G||_q)`` in [0, 2] (0 when G = 0).
    """
    _, q = _p_floats(p)
    g = np.asarray(G, dtype=np.float64).ravel()
    w = np.asarray(W, dtype=np.float64).ravel()
    gq = float(lp_norm_rows(g[None, :], q)[0])
    if gq == 0.0:
        return 0.0, 0.0
    absolute = R * gq + float(g @ w)
    return max(absolute, 0.0) / (R * gq), max(absolute, 0.0)


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m_safe), axis=axis, keepdims=True)) + m_safe
    return np.squeeze(out, axis=axis)


def _log_expm1(delta: np.ndarray, log_delta: np.ndarray) -> np.ndarray:
    """``log(expm1(delta))`` for delta >= 0 given also ``log delta`` (delta may underflow)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = log_delta + delta / 2.0
        mid = np.log(np.expm1(np.minimum(delta, 30.0)))
        big = delta + np.log1p(-np.exp(-np.maximum(delta, 30.0)))
    return np.where(delta < 1e-5, small, np.where(delta > 30.0, big, mid))


# ---------------------------------------------------------------------------------------- objective
class ExcessLoss:
    """Log of the excess loss ``E(W) = L(W) - L_*`` for a fixed decoder, batched over W (module doc).

    Args:
        X: tokens (n, T, d); y: labels (n,); z: comparison vectors (n, d); v: decoder (d,).
        loss: "logistic" (default) or "exponential".
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, v: np.ndarray, *, loss: str = "logistic") -> None:
        if loss not in LOSSES:
            raise MdcertError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
        self.loss = loss
        X = np.asarray(X, dtype=np.float64)
        self.n, self.T, self.d = X.shape
        self.m = self.d * self.d
        z = np.asarray(z, dtype=np.float64)
        # K[(i,t), (j,k)] = x_itj z_ik, so logits s = K vec(W) (row-major vec)
        self.K = np.einsum("itj,ik->itjk", X, z).reshape(self.n * self.T, self.m)
        gamma = np.asarray(y, dtype=np.float64)[:, None] * np.einsum("itd,d->it", X, np.asarray(v, dtype=np.float64))
        self.gamma = gamma
        self.ref = np.argmax(gamma, axis=1)
        self.g = gamma[np.arange(self.n), self.ref]                 # reference score per example
        c = self.g[:, None] - gamma                                 # >= 0
        with np.errstate(divide="ignore"):
            self.log_c = np.where(c > 0, np.log(np.where(c > 0, c, 1.0)), -np.inf)
        self.log_n = math.log(self.n)
        self.base_loss = float(np.mean(self._loss(self.g)))

    def _loss(self, u: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -u) if self.loss == "logistic" else np.exp(-u)

    def logits(self, Wflat: np.ndarray) -> np.ndarray:
        """Logits (S, n, T) of a batch of flattened W (S, m)."""
        return (Wflat @ self.K.T).reshape(-1, self.n, self.T)

    def evaluate(self, Wflat: np.ndarray, *, grad: bool = True) -> dict:
        """``log E``, its gradient w.r.t. vec(W) and side quantities for a batch (S, m).

        Returns:
            dict with ``log_excess`` (S,), ``grad`` (S, m) = grad L / E (None if grad=False),
            ``loss`` (S,) = L_* + E in float64, ``selected`` (S, n) softmax argmax tokens.
        """
        Wflat = np.atleast_2d(np.asarray(Wflat, dtype=np.float64))
        s = self.logits(Wflat)
        lse = _logsumexp(s, axis=2)
        lsm = s - lse[..., None]                                    # log softmax (S, n, T)
        log_delta = _logsumexp(lsm + self.log_c[None], axis=2)      # (S, n), -inf if delta == 0
        with np.errstate(over="ignore"):
            delta = np.exp(log_delta)
        g = self.g[None, :]
        lem1 = _log_expm1(delta, log_delta)
        if self.loss == "logistic":
            log_u = lem1 - np.logaddexp(0.0, g)                     # log(expm1(delta) * sigmoid(-g))
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                tiny = log_u - np.exp(np.minimum(log_u, -20.0)) / 2.0
                regular = np.log(np.logaddexp(0.0, np.maximum(log_u, -20.0)))
            log_ex = np.where(log_u < -20.0, tiny, regular)
            log_w = -np.logaddexp(0.0, g - delta)                    # d excess / d delta
        else:
            log_ex = lem1 - g
            log_w = delta - g
        log_ex = np.where(np.isfinite(log_delta), log_ex, -np.inf)
        logE = _logsumexp(log_ex, axis=1) - self.log_n              # (S,)
        with np.errstate(over="ignore"):
            excess = np.exp(logE)
        out = {"log_excess": logE, "loss": self.base_loss + excess, "selected": np.argmax(s, axis=2),
               "grad": None, "log_delta": log_delta}
        if grad:
            finite = np.isfinite(logE)
            shift = np.where(finite, logE, 0.0)[:, None, None] + self.log_n
            base = log_w[..., None] + lsm - shift
            with np.errstate(over="ignore", invalid="ignore"):
                coef = np.exp(base + self.log_c[None]) - np.exp(base + log_delta[..., None])
            coef = np.where(np.isfinite(coef), coef, 0.0)
            coef[~finite] = 0.0
            out["grad"] = coef.reshape(coef.shape[0], -1) @ self.K
        return out


# ---------------------------------------------------------------------------------------- sphere solve
@dataclass(frozen=True)
class SphereSolve:
    """Result of one constrained solve at one radius.

    Attributes:
        W: the solution (d*d,), ``||W||_p <= R`` up to rounding (rescaled if rounding overshoots).
        theta: the final parameter (warm start for the next radius).
        log_excess: ``log(L(W) - L_*)``.
        loss: ``L(W)`` in float64.
        stationarity: relative l_p-ball first-order gap (see `ball_gap`).
        gap_abs: absolute gap of ``log E`` (first-order bound on the relative decrease of E).
        iterations: L-BFGS iterations; evaluations: function evaluations.
        selected: softmax-argmax token per example.
    """

    W: np.ndarray
    theta: np.ndarray
    log_excess: float
    loss: float
    stationarity: float
    gap_abs: float
    iterations: int
    evaluations: int
    selected: tuple[int, ...]


def _kappa(p: Fraction, param: str) -> float:
    """Exponent of the parametrization ``h(theta) = sign(theta)|theta|^kappa``."""
    if param == "primal":
        return 1.0
    if param == "dual":
        return float(1 / (p - 1))
    if param == "power":
        return max(1.0, float(2 / p))
    raise MdcertError(f"unknown parametrization {param!r}; choose power, primal or dual")


def _theta_to_w(theta: np.ndarray, R: float, pf: float, kappa: float):
    U = theta if kappa == 1.0 else np.sign(theta) * np.abs(theta) ** kappa
    N = float(lp_norm_rows(U[None, :], pf)[0])
    return U, N, U * (R / N)


def _w_to_theta(W: np.ndarray, kappa: float) -> np.ndarray:
    w = np.asarray(W, dtype=np.float64).ravel()
    w = w / np.max(np.abs(w))
    return w.copy() if kappa == 1.0 else np.sign(w) * np.abs(w) ** (1.0 / kappa)


def solve_on_sphere(obj: ExcessLoss, theta0: np.ndarray, R: float, p: Fraction, *, param: str = "power",
                    max_iter: int = 2000, gtol: float = 0.0) -> SphereSolve:
    """Minimize ``log E(W)`` over ``||W||_p = R`` by L-BFGS in a sphere parametrization.

    ``W = R h(theta) / ||h(theta)||_p`` with ``h(theta) = sign(theta)|theta|^kappa``: "power"
    (default) uses ``kappa = max(1, 2/p)``, which turns the l_p sphere into the Euclidean one for
    p < 2 (the l_p sphere's curvature is singular at zero entries); "primal" uses kappa = 1,
    "dual" the inverse mirror map (kappa = q - 1).

    Args:
        obj: the log-domain objective.
        theta0: starting parameter (any nonzero scale).
        R: radius.
        p: exact exponent.
        param: parametrization ("power", "primal", "dual").
        max_iter: L-BFGS iteration cap.
        gtol: stop when the largest projected-gradient entry is below ``gtol * R`` (default 0:
            run until no further decrease is found, the objective being scale-free).
    """
    from scipy.optimize import minimize

    pf, _ = _p_floats(p)
    kappa = _kappa(p, param)
    theta0 = np.asarray(theta0, dtype=np.float64).ravel()
    if not np.all(np.isfinite(theta0)) or not np.any(theta0):
        raise MdcertError("a sphere start must be finite and nonzero")
    theta0 = theta0 / np.max(np.abs(theta0))

    def fun(theta):
        U, N, W = _theta_to_w(theta, R, pf, kappa)
        ev = obj.evaluate(W[None, :])
        F = float(ev["log_excess"][0])
        if not np.isfinite(F):
            return 0.0, np.zeros_like(theta)
        G = ev["grad"][0]
        gradN = np.sign(U) * np.abs(U) ** (pf - 1.0) / N ** (pf - 1.0)
        dU = (R / N) * (G - gradN * (float(G @ U) / N))
        if kappa != 1.0:
            dU = dU * kappa * np.abs(theta) ** (kappa - 1.0)
        return F, dU

    res = minimize(fun, theta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "maxcor": 30, "ftol": 1e-16, "gtol": gtol * R, "maxls": 40})
    theta = res.x / np.max(np.abs(res.x))
    _, _, W = _theta_to_w(theta, R, pf, kappa)
    nrm = float(lp_norm_rows(W[None, :], pf)[0])
    if nrm > R:
        W = W * (R / nrm)
        while float(lp_norm_rows(W[None, :], pf)[0]) > R:
            W = W * (1.0 - 2.0 ** -52)
    ev = obj.evaluate(W[None, :])
    rel, ab = ball_gap(ev["grad"][0], W, R, p)
    return SphereSolve(W=W, theta=theta, log_excess=float(ev["log_excess"][0]), loss=float(ev["loss"][0]),
                       stationarity=rel, gap_abs=ab, iterations=int(res.nit), evaluations=int(res.nfev),
                       selected=tuple(int(t) for t in ev["selected"][0]))
