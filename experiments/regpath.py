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
``h(theta) = sign(theta)|theta|^kappa`` with ``kappa = max(1, 2/p)`` (for p < 2 this maps the
Euclidean sphere onto the l_p sphere, whose own curvature is singular at zero entries; measured at
p = 1.1: relative gap 1e-14 in ~100 iterations instead of 1e-3 after 2000), then a few Newton steps
with a batched finite-difference Hessian. Starts per radius: seeded random chains (warm-started
along the grid), the reference SVM direction, the SVM-free direction ``phi_q(A^T 1)`` and the
previous radius' winner; the lowest ``log E`` wins and the others' gaps are reported. Random
starts at large R sit on exp(-R)-flat plateaus; the report shows it. The reported stationarity is the l_p-ball
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
from typing import Sequence

import numpy as np

from certify.blas import single_thread_blas
from certify.errors import MdcertError
from certify.exact import conjugate, format_fraction, parse_p

__all__ = [
    "ExcessLoss",
    "log_loss_values",
    "log_neg_derivative",
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
    "single_thread_blas",
    "uniform_dual_direction",
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


def log_loss_values(u: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """``log l(u)`` without underflow (logistic: ``log(log1p(e^{-u}))``; exponential: ``-u``)."""
    u = np.asarray(u, dtype=np.float64)
    if loss == "exponential":
        return -u
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        big = -u - np.exp(-np.maximum(u, 30.0)) / 2.0
        small = np.log(np.logaddexp(0.0, -np.minimum(u, 30.0)))
    return np.where(u > 30.0, big, small)


def log_neg_derivative(u: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """``log(-l'(u))`` (logistic: ``log sigmoid(-u)``; exponential: ``-u``)."""
    u = np.asarray(u, dtype=np.float64)
    return -u if loss == "exponential" else -np.logaddexp(0.0, u)


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
        self.log_base_loss = float(_logsumexp(log_loss_values(self.g, loss), axis=0)) - self.log_n

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
                    max_iter: int = 300, gtol: float = 0.0, polish: int = 6) -> SphereSolve:
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
        polish: at most this many Newton steps after L-BFGS (finite-difference Hessian of the
            analytic gradient, eigenvalue-modified, line-searched); 0 disables.
    """
    from scipy.optimize import minimize

    pf, _ = _p_floats(p)
    kappa = _kappa(p, param)
    theta0 = np.asarray(theta0, dtype=np.float64).ravel()
    if not np.all(np.isfinite(theta0)) or not np.any(theta0):
        raise MdcertError("a sphere start must be finite and nonzero")
    theta0 = theta0 / np.max(np.abs(theta0))

    best = {"F": math.inf, "theta": theta0}

    def fun(theta):
        if not np.all(np.isfinite(theta)) or not np.any(theta):
            return 1e300, np.zeros_like(theta)
        F, dT = _sphere_fg(obj, theta[None, :], R, pf, kappa)
        F = float(F[0])
        if math.isnan(F) or not np.all(np.isfinite(dT)):
            return 1e300, np.zeros_like(theta)
        if F < best["F"]:
            best["F"], best["theta"] = F, theta.copy()
        return F, dT[0]

    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        res = minimize(fun, theta0, jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "maxcor": 20, "ftol": 1e-16, "gtol": gtol * R, "maxls": 40})
    theta = best["theta"] / np.max(np.abs(best["theta"]))
    newton = 0
    if polish and math.isfinite(best["F"]):
        theta, newton = _newton_polish(obj, theta, R, p, pf, kappa, steps=polish)
    _, _, W = _theta_to_w(theta, R, pf, kappa)
    nrm = float(lp_norm_rows(W[None, :], pf)[0])
    if nrm > R:
        W = W * (R / nrm)
        while float(lp_norm_rows(W[None, :], pf)[0]) > R:
            W = W * (1.0 - 2.0 ** -52)
    ev = obj.evaluate(W[None, :])
    rel, ab = ball_gap(ev["grad"][0], W, R, p)
    return SphereSolve(W=W, theta=theta, log_excess=float(ev["log_excess"][0]), loss=float(ev["loss"][0]),
                       stationarity=rel, gap_abs=ab, iterations=int(res.nit) + newton, evaluations=int(res.nfev),
                       selected=tuple(int(t) for t in ev["selected"][0]) if ev.get("selected") is not None else ())


def _sphere_fg(obj: ExcessLoss, thetas: np.ndarray, R: float, pf: float, kappa: float):
    """``F(theta) = log E(W(theta))`` and its gradient for a batch of parameters (S, m)."""
    U = thetas if kappa == 1.0 else np.sign(thetas) * np.abs(thetas) ** kappa
    N = lp_norm_rows(U, pf)[:, None]
    W = U * (R / N)
    ev = obj.evaluate(W)
    G = ev["grad"]
    gradN = np.sign(U) * np.abs(U) ** (pf - 1.0) / N ** (pf - 1.0)
    dU = (R / N) * (G - gradN * (np.sum(G * U, axis=1, keepdims=True) / N))
    if kappa != 1.0:
        dU = dU * kappa * np.abs(thetas) ** (kappa - 1.0)
    return ev["log_excess"], dU


def _newton_polish(obj: ExcessLoss, theta: np.ndarray, R: float, p: Fraction, pf: float, kappa: float, *,
                   steps: int = 6, target: float = 1e-13) -> tuple[np.ndarray, int]:
    """Newton steps on the sphere with a central-difference Hessian of the analytic gradient (one
    batched evaluation of 2m points) and eigenvalue-modified, line-searched steps; stops when the
    relative ball gap is below ``target`` or no decrease is found. Returns (theta, steps taken)."""
    m = theta.size
    eye = np.eye(m)
    done = 0
    for _ in range(steps):
        th = theta / np.linalg.norm(theta)
        F0, g0 = _sphere_fg(obj, th[None, :], R, pf, kappa)
        F0, g0 = float(F0[0]), g0[0]
        _, _, W = _theta_to_w(th, R, pf, kappa)
        rel, _ = ball_gap(obj.evaluate(W[None, :])["grad"][0], W, R, p)
        if rel < target or not np.isfinite(F0):
            break
        h = 1e-6
        _, gs = _sphere_fg(obj, np.vstack([th + h * eye, th - h * eye]), R, pf, kappa)
        H = (gs[:m] - gs[m:]) / (2 * h)
        H = (H + H.T) / 2
        P = eye - np.outer(th, th)
        lam, V = np.linalg.eigh(P @ H @ P)
        radial = np.abs(V.T @ th) > 0.5
        top = max(float(np.max(np.abs(lam))), 1e-300)
        lam_mod = np.maximum(np.abs(lam), 1e-10 * top)
        coeff = -(V.T @ (P @ g0)) / lam_mod
        coeff[radial] = 0.0
        d = V @ coeff
        t, improved = 1.0, False
        for _ls in range(30):
            cand = th + t * d
            Fc, _ = _sphere_fg(obj, cand[None, :], R, pf, kappa)
            if np.isfinite(Fc[0]) and Fc[0] < F0:
                theta, improved = cand, True
                break
            t /= 2
        if not improved:
            break
        done += 1
    return theta / np.max(np.abs(theta)), done


# ---------------------------------------------------------------------------------------- reference
@dataclass(frozen=True)
class Reference:
    """The SVM direction the path is measured against.

    Attributes:
        svm: "attention" or "decoder".
        p: exact exponent.
        alpha: token indices.
        direction: float64 unit direction (m,) (the certified point rounded, for starts and plots).
        exact: the certified feasible point as exact rationals (None for an uncertified float stand-in).
        certified: whether it came from an OPTIMAL `certify_svm` certificate.
        direction_error_upper: certified bound on ``||w/||w||_p - w*/||w*||_p||_p`` (float, rounded up).
        bregman_upper: certified bound on the Bregman divergence between those unit directions.
        info: JSON-able summary (status, opt bounds as "num/den", support counts).
    """

    svm: str
    p: Fraction
    alpha: tuple[int, ...]
    direction: np.ndarray
    exact: tuple[Fraction, ...] | None
    certified: bool
    direction_error_upper: float | None = None
    bregman_upper: float | None = None
    info: dict = field(default_factory=dict)

    @classmethod
    def from_float(cls, direction: np.ndarray, p, alpha: Sequence[int], *, svm: str = "attention") -> "Reference":
        """An UNCERTIFIED float reference (tests and experiments only; reported as uncertified)."""
        p = parse_p(p)
        w = np.asarray(direction, dtype=np.float64).ravel()
        w = w / float(lp_norm_rows(w[None, :], float(p))[0])
        return cls(svm, p, tuple(int(a) for a in alpha), w, None, False, info={"status": "uncertified float"})


def _up(x) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def reference_direction(problem, p, *, alpha="opt", svm: str = "attention", digits: int = 30) -> Reference:
    """Certified SVM direction ``W_mm(alpha)`` (or ``v_mm(alpha)``) via `certify.certify_svm`.

    Raises:
        MdcertError: the SVM is infeasible for these tokens (Gordan certificate), ties in the
            optimal tokens, or the solve could not be certified.
    """
    from certify.problem import resolve_alpha

    p = parse_p(p)
    alpha = resolve_alpha(problem, alpha)
    try:
        from certify import certify_svm
    except ImportError:  # pragma: no cover - only while certify is being written
        raise MdcertError("certify.certify_svm is not available; the reference SVM cannot be certified") from None
    cert = certify_svm(problem, p, svm=svm, alpha=alpha, digits=digits)
    status = getattr(cert.status, "value", str(cert.status))
    if status == "infeasible":
        raise MdcertError(f"the {svm} SVM for tokens alpha={list(alpha)} is infeasible (certified by a Gordan "
                          f"vector); choose other tokens with --alpha")
    if status != "optimal":
        raise MdcertError(f"the {svm} SVM for tokens alpha={list(alpha)} could not be certified (status {status}); "
                          f"no reference direction to measure against")
    exact = tuple(Fraction(x) for x in cert.solution_exact())
    info = {"status": status, "digits": digits,
            "opt_lower": format_fraction(cert.opt_lower) if cert.opt_lower is not None else None,
            "opt_upper": format_fraction(cert.opt_upper) if cert.opt_upper is not None else None}
    if cert.support is not None:
        info["support_counts"] = {"tight": len(cert.support.tight), "inactive": len(cert.support.inactive),
                                  "undecided": len(cert.support.undecided)}
        info["support_tight"] = [list(r) for r in cert.support.tight]
    return Reference(svm, p, alpha, np.asarray(cert.direction_float(), dtype=np.float64).ravel(), exact, True,
                     _up(cert.direction_error_upper), _up(cert.bregman_upper), info)


def bregman_directional(reference: Reference | np.ndarray, W: np.ndarray, p, *, digits: int = 40) -> float:
    """``D_psi(ref/||ref||_p, W/||W||_p)`` (reference first, SPEC section 2), evaluated in mpmath.

    The reference's exact rationals are used when available; W is exact as given (float64). The
    result is rounded to float64 (a measurement, not a certified bound).
    """
    import mpmath

    p = parse_p(p)
    with mpmath.workdps(digits):
        pm = mpmath.mpf(p.numerator) / p.denominator
        if isinstance(reference, Reference):
            if reference.exact is not None:
                a = [mpmath.mpf(x.numerator) / x.denominator for x in reference.exact]
            else:
                a = [mpmath.mpf(float(x)) for x in reference.direction]
        else:
            a = [mpmath.mpf(float(x)) for x in np.asarray(reference, dtype=np.float64).ravel()]
        b = [mpmath.mpf(float(x)) for x in np.asarray(W, dtype=np.float64).ravel()]
        if len(a) != len(b):
            raise MdcertError(f"reference has {len(a)} entries but W has {len(b)}")
        na = mpmath.fsum(abs(x) ** pm for x in a) ** (1 / pm)
        nb = mpmath.fsum(abs(x) ** pm for x in b) ** (1 / pm)
        if na == 0 or nb == 0:
            raise MdcertError("cannot normalize a zero matrix for the directional Bregman divergence")
        total = mpmath.mpf(0)
        for x, y in zip(a, b):
            x, y = x / na, y / nb
            ay = abs(y)
            total += abs(x) ** pm / pm - ay ** pm / pm - (mpmath.sign(y) * ay ** (pm - 1) * (x - y) if y != 0 else 0)
        return float(max(total, mpmath.mpf(0)))


# ---------------------------------------------------------------------------------------- the path
@dataclass(frozen=True)
class StartSummary:
    """One start (chain) at one radius.

    Attributes:
        label: "random-k" (a chain started at a random direction at the first radius and warm-started
            along the grid), "svm" (restarted at every radius from the reference SVM direction),
            "uniform-dual" (restarted at every radius from the SVM-free direction phi_q(A^T 1)),
            "previous-best" (warm-started from the previous radius' winner).
        log_excess: ``log(L - L_*)`` reached; log_excess_gap: its excess over the winner's (>= 0).
        loss_ratio: ``E / E_winner`` = exp(log_excess_gap) (inf if it overflows).
        direction_distance: ``||W/R - W_winner/R||_p``.
        stationarity: relative ball gap reached; iterations: L-BFGS iterations.
        selected: softmax-argmax tokens.
    """

    label: str
    log_excess: float
    log_excess_gap: float
    loss_ratio: float
    direction_distance: float
    stationarity: float
    iterations: int
    selected: tuple[int, ...]

    def to_json(self) -> dict:
        return {"label": self.label, "log_excess": _num(self.log_excess), "log_excess_gap": _num(self.log_excess_gap),
                "loss_ratio": _num(self.loss_ratio), "direction_distance": _num(self.direction_distance),
                "stationarity": _num(self.stationarity), "iterations": self.iterations,
                "selected_tokens": list(self.selected)}


def _num(x) -> float | str | None:
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


@dataclass(frozen=True)
class RadiusResult:
    """The winning solution at one radius and how the other starts fared.

    Attributes:
        R: radius; W: winner (d, d); norm: ``||W||_p``.
        loss: ``L(W)`` (float64); log_excess: ``log(L(W) - L_*)`` (exact in log domain).
        stationarity: relative l_p-ball first-order gap; gap_abs: absolute gap of log E.
        bregman_to_svm: ``D_psi(Wbar_mm, W/||W||_p)``.
        selected: softmax-argmax tokens; selects_alpha: whether they equal the reference tokens.
        winner: label of the winning start; starts: every start's summary.
    """

    R: float
    W: np.ndarray
    norm: float
    loss: float
    log_excess: float
    stationarity: float
    gap_abs: float
    bregman_to_svm: float
    selected: tuple[int, ...]
    selects_alpha: bool
    winner: str
    starts: tuple[StartSummary, ...]

    def to_json(self) -> dict:
        return {"R": self.R, "norm": self.norm, "bregman_to_svm": _num(self.bregman_to_svm), "loss": _num(self.loss),
                "log_excess_loss": _num(self.log_excess), "stationarity": _num(self.stationarity),
                "stationarity_abs": _num(self.gap_abs), "selected_tokens": list(self.selected),
                "selects_alpha": self.selects_alpha, "winner": self.winner,
                "starts": [s.to_json() for s in self.starts]}


@dataclass(frozen=True)
class RegPath:
    """A regularization path W(R) over a grid (Theorem 6)."""

    p: Fraction
    alpha: tuple[int, ...]
    loss: str
    base_loss: float
    reference: Reference
    results: tuple[RadiusResult, ...]
    elapsed_s: float
    settings: dict

    @property
    def radii(self) -> np.ndarray:
        return np.array([r.R for r in self.results])

    @property
    def bregman(self) -> np.ndarray:
        return np.array([r.bregman_to_svm for r in self.results])

    def decay(self) -> dict:
        """First/last divergence, their ratio, and whether the sequence is non-increasing."""
        b = self.bregman
        ratio = float(b[0] / b[-1]) if b[-1] > 0 else math.inf
        return {"bregman_first": _num(b[0]), "bregman_last": _num(b[-1]), "ratio_first_over_last": _num(ratio),
                "monotone_nonincreasing": bool(np.all(np.diff(b) <= 0)),
                "largest_increase": _num(float(np.max(np.diff(b))) if len(b) > 1 else 0.0)}

    def to_json(self) -> dict:
        ref = self.reference
        return {"p": format_fraction(self.p), "p_float": float(self.p), "alpha": list(self.alpha), "loss": self.loss,
                "base_loss": self.base_loss,
                "reference": {"svm": ref.svm, "certified": ref.certified, "alpha": list(ref.alpha),
                              "direction_error_upper": ref.direction_error_upper,
                              "bregman_upper": ref.bregman_upper, **ref.info},
                "settings": self.settings, "elapsed_s": self.elapsed_s, "decay": self.decay(),
                "path": [r.to_json() for r in self.results]}


def _check_radii(radii) -> np.ndarray:
    r = np.asarray(radii, dtype=np.float64).ravel()
    if r.size < 1:
        raise MdcertError("no radii given; use e.g. --radii 10:1000:9")
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise MdcertError(f"radii must be finite and positive, got {r.tolist()}")
    if np.any(np.diff(r) <= 0):
        raise MdcertError(f"radii must be strictly increasing, got {r.tolist()}")
    return r


def regularization_path(problem, p, *, radii=(10.0, 1000.0, 9), starts: int = 3, seed: int = 0, alpha="opt",
                        reference: Reference | None = None, svm_start: bool = True, dual_start: bool = True,
                        loss: str = "logistic", param: str = "power", max_iter: int = 150, polish: int = 6,
                        digits: int = 30, progress=None) -> RegPath:
    """Solve ``min L(W) s.t. ||W||_p <= R`` along a grid of R with several starts (Theorem 6).

    Args:
        problem: `certify.AttentionProblem` (its decoder v is fixed).
        p: exponent (exact; "1.75", "7/4", Fraction).
        radii: increasing radii, or a ``(start, stop, count)`` geometric triple.
        starts: number of random chains (each started at a seeded random direction at the first
            radius and warm-started along the grid).
        seed: seed of the random starts.
        alpha: reference tokens ("opt" = globally optimal; ties are an error).
        reference: a precomputed `Reference` (default: certified by `certify.certify_svm`).
        svm_start: also start at every radius from the reference direction ("svm" chain).
        dual_start: also start at every radius from the SVM-free direction ``phi_q(A^T 1)`` (the
            mirror image of uniform multipliers on alpha's constraint rows; "uniform-dual" chain).
        loss: "logistic" or "exponential".
        param: sphere parametrization (see `solve_on_sphere`).
        max_iter: L-BFGS iteration cap per solve.
        polish: Newton polishing steps per solve (see `solve_on_sphere`).
        digits: precision requested from `certify_svm`.
        progress: optional callable ``progress(RadiusResult)``.

    Returns:
        The path (winner per radius plus every start's summary).
    """
    with single_thread_blas():
        return _regularization_path(problem, p, radii=radii, starts=starts, seed=seed, alpha=alpha,
                                    reference=reference, svm_start=svm_start, dual_start=dual_start, loss=loss,
                                    param=param, max_iter=max_iter, polish=polish, digits=digits, progress=progress)


def uniform_dual_direction(rows: np.ndarray, p: Fraction) -> np.ndarray:
    """``phi_q(A^T 1) = sign(u)|u|^{q-1}``, ``u = sum of the constraint rows``: an SVM-free start
    (the primal point of uniform dual multipliers; float, only ever a start)."""
    q = float(conjugate(p))
    u = np.asarray(rows, dtype=np.float64).sum(axis=0)
    if not np.any(u):
        u = np.asarray(rows, dtype=np.float64)[0]
    return np.sign(u) * np.abs(u) ** (q - 1.0)


def _regularization_path(problem, p, *, radii, starts, seed, alpha, reference, svm_start, dual_start, loss, param,
                         max_iter, polish, digits, progress) -> RegPath:
    from certify.problem import resolve_alpha

    t0 = time.perf_counter()
    p = parse_p(p)
    if isinstance(radii, tuple) and len(radii) == 3 and isinstance(radii[2], (int, np.integer)) and not isinstance(radii[2], bool):
        radii = geometric_radii(*radii)
    radii = _check_radii(radii)
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 0:
        raise MdcertError(f"invalid starts {starts!r}; give a number of random starts >= 0")
    if starts == 0 and not svm_start and not dual_start:
        raise MdcertError("no starts: use at least one random start, the SVM start or the uniform-dual start")
    alpha = resolve_alpha(problem, alpha)
    if reference is None:
        reference = reference_direction(problem, p, alpha=alpha, digits=digits)
    if reference.p != p or reference.svm != "attention":
        raise MdcertError(f"the reference is the {reference.svm} SVM at p = {format_fraction(reference.p)}, "
                          f"but the path needs the attention SVM at p = {format_fraction(p)}")
    if reference.direction.size != problem.d * problem.d:
        raise MdcertError(f"reference has {reference.direction.size} entries, expected d*d = {problem.d * problem.d}")
    obj = ExcessLoss(problem.X, problem.y, problem.z, problem.v, loss=loss)
    kappa = _kappa(p, param)
    pf = float(p)
    rng = np.random.default_rng(seed)
    chains: dict[str, np.ndarray] = {f"random-{k}": _w_to_theta(rng.standard_normal(obj.m), kappa) for k in range(starts)}
    svm_theta = _w_to_theta(reference.direction, kappa)
    dual_theta = None
    if dual_start:
        u = uniform_dual_direction(problem.attention_constraints(alpha).rows(), p)
        dual_theta = _w_to_theta(u, kappa) if np.any(u) else None
    prev_best: np.ndarray | None = None
    results = []
    for R in radii:
        R = float(R)
        runs: dict[str, SphereSolve] = {}
        todo = list(chains.items())
        if svm_start:
            todo.append(("svm", svm_theta))
        if dual_theta is not None:
            todo.append(("uniform-dual", dual_theta))
        if prev_best is not None:
            todo.append(("previous-best", prev_best))
        for label, theta in todo:
            runs[label] = solve_on_sphere(obj, theta, R, p, param=param, max_iter=max_iter, polish=polish)
        for label in chains:
            chains[label] = runs[label].theta
        best_label = min(runs, key=lambda k: (runs[k].log_excess, k != "previous-best"))
        best = runs[best_label]
        prev_best = best.theta
        summaries = []
        for label, r in runs.items():
            gap = r.log_excess - best.log_excess
            dist = float(lp_norm_rows(((r.W - best.W) / R)[None, :], pf)[0])
            summaries.append(StartSummary(label, r.log_excess, gap, math.exp(gap) if gap < 700 else math.inf, dist,
                                          r.stationarity, r.iterations, r.selected))
        res = RadiusResult(R=R, W=best.W.reshape(problem.d, problem.d), norm=float(lp_norm_rows(best.W[None, :], pf)[0]),
                           loss=best.loss, log_excess=best.log_excess, stationarity=best.stationarity,
                           gap_abs=best.gap_abs, bregman_to_svm=bregman_directional(reference, best.W, p),
                           selected=best.selected, selects_alpha=tuple(best.selected) == tuple(alpha),
                           winner=best_label, starts=tuple(summaries))
        results.append(res)
        if progress is not None:
            progress(res)
    settings = {"starts": int(starts), "seed": int(seed), "svm_start": bool(svm_start),
                "dual_start": dual_theta is not None, "param": param,
                "max_iter": int(max_iter), "polish": int(polish), "radii": [float(r) for r in radii]}
    return RegPath(p, tuple(alpha), loss, obj.base_loss, reference, tuple(results), time.perf_counter() - t0, settings)
