"""Joint training of attention W and decoder v (SPEC section 5, Theorem 31).

1. The joint regularization path ``(W, v)(R) = argmin L(W, v) s.t. ||W||_p <= R, ||v||_p <= r(R)``
   with the radius coupling ``r = f(R)`` given explicitly by the user (`parse_radius_function`,
   an arithmetic expression in R parsed with Python's ``ast`` into a whitelisted tree, never eval).
   Solved by block minimization: the v-block (for fixed W a logistic regression on the attended
   features ``b_i = y_i X_i^T softmax(X_i W z_i)``, convex) and the W-block (the fixed-decoder
   problem of `experiments.regpath`, log-domain) alternate until both blocks' l_p-ball gaps and
   the loss settle; several starts as in `regularization_path`.
2. The joint mirror-descent path: both W and v trained by `experiments.optim.LpMirrorDescent` with
   normalized gradients (``G / ||G||_q`` per parameter) from ``W(0) = 0, v(0) = 0``. The gradients
   are computed in log-domain scaled form (only their direction matters for a normalized step),
   so nothing underflows when the softmax saturates. At ``v = 0`` every token value is 0 and the
   W-gradient is exactly zero: that step moves only v (recorded as a skipped W step, never a
   division by a zero norm).
3. Measurements: directional Bregman divergences of W to the certified attention SVM and of v to the
   certified decoder SVM (`certify.certify_svm(..., svm="decoder")`), selected tokens, and the data
   quantities behind Theorem 31's geometric condition (`theorem31_quantities`), reported as
   measured numbers; no verdict is asserted here.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p
from experiments.regpath import (
    ExcessLoss,
    Reference,
    StartSummary,
    _check_radii,
    _kappa,
    _logsumexp,
    _num,
    _w_to_theta,
    ball_gap,
    bregman_directional,
    geometric_radii,
    log_loss_values,
    log_neg_derivative,
    lp_norm_rows,
    reference_direction,
    single_thread_blas,
    solve_on_sphere,
    uniform_dual_direction,
)

__all__ = [
    "joint_example",
    "RadiusFunction",
    "parse_radius_function",
    "JointObjective",
    "JointRadiusResult",
    "JointPath",
    "joint_regularization_path",
    "JointMDPath",
    "joint_md_path",
    "theorem31_quantities",
]


# ---------------------------------------------------------------------------------------- data
def joint_example():
    """The paper's joint-training example: n=2, T=3, d=2, z_i = first token of X_i.

    The decoder is a variable in joint training; the stored ``v`` is zero and ``alpha = (0, 0)``
    (the first tokens) names the tokens whose SVMs the joint path is measured against.
    """
    from certify.problem import AttentionProblem

    X = np.array([[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]],
                  [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]])
    y = np.array([1.0, -1.0])
    z = X[:, 0, :].copy()
    return AttentionProblem(X, y, z, np.zeros(2), alpha=(0, 0))


# ---------------------------------------------------------------------------------------- r = f(R)
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Callable[[float], float]] = {"sqrt": math.sqrt, "log": math.log, "ln": math.log, "exp": math.exp,
                                              "log2": math.log2, "log10": math.log10, "abs": abs}
_CONSTS = {"pi": math.pi, "e": math.e}


@dataclass(frozen=True)
class RadiusFunction:
    """A decoder radius ``r = f(R)`` parsed from a whitelisted arithmetic expression.

    Attributes:
        text: the expression as given.
    """

    text: str
    tree: ast.AST

    def __call__(self, R: float) -> float:
        try:
            value = _eval(self.tree.body, float(R))
        except (ArithmeticError, ValueError) as exc:
            raise MdcertError(f"r(R) = {self.text!r} cannot be evaluated at R = {R:g} ({exc})") from None
        if not isinstance(value, float):
            raise MdcertError(f"r(R) = {self.text!r} is not real at R = {R:g} (e.g. a negative number to a "
                              f"fractional power)")
        if not math.isfinite(value) or value <= 0:
            raise MdcertError(f"r(R) = {self.text!r} gives {value!r} at R = {R:g}; the decoder radius must be finite and positive")
        return value

    def values(self, radii: Sequence[float]) -> list[float]:
        return [self(R) for R in radii]


def _eval(node: ast.AST, R: float):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id == "R":
            return R
        return _CONSTS[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, R), _eval(node.right, R)
        if isinstance(node.op, ast.Pow) and abs(b) > 1e3:
            raise OverflowError("exponent too large")
        if not (isinstance(a, float) and isinstance(b, float)):
            return complex("nan")  # propagate "not real"
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, R))
    if isinstance(node, ast.Call):
        arg = _eval(node.args[0], R)
        if not isinstance(arg, float):
            return complex("nan")
        return float(_FUNCS[node.func.id](arg))
    raise ValueError("unsupported expression")  # pragma: no cover - rejected by _check


def _check(node: ast.AST, text: str) -> None:
    bad = None
    if isinstance(node, ast.Expression):
        return _check(node.body, text)
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
            bad = f"constant {node.value!r}"
    elif isinstance(node, ast.Name):
        if node.id != "R" and node.id not in _CONSTS:
            bad = f"name {node.id!r} (only R, pi, e)"
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            bad = f"operator {type(node.op).__name__}"
        else:
            _check(node.left, text)
            _check(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            bad = f"operator {type(node.op).__name__}"
        else:
            _check(node.operand, text)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or len(node.args) != 1 or node.keywords:
            bad = "function call (allowed: " + ", ".join(sorted(_FUNCS)) + ", one argument each)"
        else:
            _check(node.args[0], text)
    else:
        bad = type(node).__name__
    if bad:
        raise MdcertError(f"invalid --r-of-R {text!r}: {bad} is not allowed; use an arithmetic expression in R, "
                          f"e.g. 'R', 'sqrt(R)', '2*log(R)+1'")


def parse_radius_function(text: str) -> RadiusFunction:
    """Parse ``r = f(R)`` safely: numbers, R, pi, e, + - * / ** (or ^), and sqrt/log/ln/exp/log2/log10/abs.

    Raises:
        MdcertError: empty, too long, malformed, or containing anything else.
    """
    if not isinstance(text, str) or not text.strip():
        raise MdcertError("empty --r-of-R; give the decoder radius as an expression in R, e.g. 'R' or 'sqrt(R)'")
    if len(text) > 200:
        raise MdcertError("--r-of-R is too long (over 200 characters)")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")  # '^' is power, as in math
    except SyntaxError:
        raise MdcertError(f"invalid --r-of-R {text!r}: not an arithmetic expression in R (e.g. 'R', 'sqrt(R)')") from None
    _check(tree, text)
    return RadiusFunction(text.strip(), tree)


# ---------------------------------------------------------------------------------------- objective
class JointObjective:
    """``L(W, v)`` in log domain with scale-free gradients for both blocks (float64 numpy)."""

    def __init__(self, X, y, z, *, loss: str = "logistic") -> None:
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.z = np.asarray(z, dtype=np.float64)
        self.n, self.T, self.d = self.X.shape
        self.loss = loss
        self.K = np.einsum("itj,ik->itjk", self.X, self.z).reshape(self.n * self.T, self.d * self.d)

    def log_softmax(self, W: np.ndarray) -> np.ndarray:
        s = (np.asarray(W, dtype=np.float64).ravel() @ self.K.T).reshape(self.n, self.T)
        return s - _logsumexp(s, axis=1)[:, None]

    def features(self, W: np.ndarray) -> np.ndarray:
        """Attended features ``b_i = y_i X_i^T softmax(X_i W z_i)`` (n, d): ``y_i f_i = v^T b_i``."""
        sm = np.exp(self.log_softmax(W))
        return self.y[:, None] * np.einsum("it,itd->id", sm, self.X)

    def log_loss(self, W: np.ndarray, v: np.ndarray) -> float:
        """``log L(W, v)``, exact in log domain (the decoder split of `ExcessLoss`)."""
        obj = ExcessLoss(self.X, self.y, self.z, v, loss=self.loss)
        logE = float(obj.evaluate(np.asarray(W, dtype=np.float64).ravel()[None, :], grad=False)["log_excess"][0])
        return float(np.logaddexp(obj.log_base_loss, logE))

    def scaled_gradients(self, W: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positive multiples of ``grad_W L`` and ``grad_v L``, each block scaled by its own positive
        factor (its largest term is 1; computed in log domain, so nothing underflows at saturation).
        Only directions are meaningful (normalized steps). A block whose gradient is exactly zero
        (e.g. ``grad_W`` at ``v = 0``) is returned as zeros."""
        W = np.asarray(W, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        lsm = self.log_softmax(W)
        sm = np.exp(lsm)
        gamma = self.y[:, None] * np.einsum("itd,d->it", self.X, v)
        a = np.argmax(lsm, axis=1)
        ga = gamma[np.arange(self.n), a]
        c = ga[:, None] - gamma                                   # gamma_a - gamma_t (mixed signs)
        with np.errstate(divide="ignore"):
            lpos = _logsumexp(np.where(c > 0, lsm + np.log(np.where(c > 0, c, 1.0)), -np.inf), axis=1)
            lneg = _logsumexp(np.where(c < 0, lsm + np.log(np.where(c < 0, -c, 1.0)), -np.inf), axis=1)
        # delta_i = P - N, u_i = gamma_a - delta_i; sign and log|delta|
        with np.errstate(invalid="ignore"):
            sign_d = np.sign(np.exp(lpos - np.maximum(lpos, lneg)) - np.exp(lneg - np.maximum(lpos, lneg)))
        sign_d = np.where(np.isfinite(np.maximum(lpos, lneg)), sign_d, 0.0)
        hi, lo = np.maximum(lpos, lneg), np.minimum(lpos, lneg)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_abs_d = np.where(sign_d != 0, hi + np.log1p(-np.exp(lo - hi)), -np.inf)
        delta = sign_d * np.exp(log_abs_d)
        u = ga - delta
        log_dl = log_neg_derivative(u, self.loss)                # log(-l'(u_i)) ; dL/du_i = -exp(.)/n
        # v-block: grad_v L = -(1/n) sum_i (-l') b_i
        wv = np.exp(log_dl - np.max(log_dl))
        Gv = -(wv[:, None] * (self.y[:, None] * np.einsum("it,itd->id", sm, self.X))).sum(axis=0)
        # W-block: coefficient of x_it z_i^T is (dL/du_i) sm_it (gamma_it - u_i), gamma_t - u = -c_t + delta
        val = -c + delta[:, None]
        val[np.arange(self.n), a] = delta
        with np.errstate(divide="ignore"):
            lmag = log_dl[:, None] + lsm + np.log(np.abs(val))
        sgn = -np.sign(val)
        top = np.max(lmag)
        if not np.isfinite(top):
            GW = np.zeros(self.d * self.d)
        else:
            coef = sgn * np.exp(lmag - top)
            GW = coef.ravel() @ self.K
        return GW.reshape(self.d, self.d), Gv


class _DecoderLoss:
    """``log L(v)`` for fixed attended features b (the v-block), in the `ExcessLoss.evaluate` format."""

    def __init__(self, b: np.ndarray, loss: str) -> None:
        self.b = np.asarray(b, dtype=np.float64)
        self.loss = loss
        self.log_n = math.log(self.b.shape[0])

    def evaluate(self, V: np.ndarray, *, grad: bool = True) -> dict:
        V = np.atleast_2d(V)
        u = V @ self.b.T                                              # (S, n)
        ll = log_loss_values(u, self.loss)
        logL = _logsumexp(ll, axis=1) - self.log_n
        out = {"log_excess": logL, "loss": np.exp(logL), "selected": None, "grad": None}
        if grad:
            w = np.exp(log_neg_derivative(u, self.loss) - self.log_n - logL[:, None])
            out["grad"] = -(w @ self.b)
        return out


# ---------------------------------------------------------------------------------------- joint path
@dataclass(frozen=True)
class JointRadiusResult:
    """Winner at one (R, r) and how the other starts fared (fields as `RadiusResult`, plus v)."""

    R: float
    r: float
    W: np.ndarray
    v: np.ndarray
    loss: float
    log_loss: float
    stationarity: float
    stationarity_W: float
    stationarity_v: float
    bregman_to_svm: float
    bregman_v_to_svm: float
    selected: tuple[int, ...]
    selects_alpha: bool
    winner: str
    rounds: int
    starts: tuple[StartSummary, ...]
    bregman_to_selected_svm: float | None = None
    bregman_v_to_selected_svm: float | None = None

    def to_json(self) -> dict:
        return {"R": self.R, "r": self.r, "bregman_to_svm": _num(self.bregman_to_svm),
                "bregman_v_to_svm": _num(self.bregman_v_to_svm),
                "bregman_to_selected_svm": _num(self.bregman_to_selected_svm),
                "bregman_v_to_selected_svm": _num(self.bregman_v_to_selected_svm), "loss": _num(self.loss),
                "log_loss": _num(self.log_loss), "stationarity": _num(self.stationarity),
                "stationarity_W": _num(self.stationarity_W), "stationarity_v": _num(self.stationarity_v),
                "selected_tokens": list(self.selected), "selects_alpha": self.selects_alpha, "winner": self.winner,
                "rounds": self.rounds, "v": [float(x) for x in self.v],
                "starts": [s.to_json() for s in self.starts]}


@dataclass(frozen=True)
class JointPath:
    p: Fraction
    alpha: tuple[int, ...]
    r_of_R: str
    reference: Reference
    v_reference: Reference
    results: tuple[JointRadiusResult, ...]
    quantities: dict
    elapsed_s: float
    settings: dict

    def decay(self) -> dict:
        b = np.array([r.bregman_to_svm for r in self.results])
        bv = np.array([r.bregman_v_to_svm for r in self.results])
        return {"bregman_first": _num(b[0]), "bregman_last": _num(b[-1]),
                "ratio_first_over_last": _num(b[0] / b[-1] if b[-1] > 0 else math.inf),
                "monotone_nonincreasing": bool(np.all(np.diff(b) <= 0)),
                "bregman_v_first": _num(bv[0]), "bregman_v_last": _num(bv[-1]),
                "ratio_v_first_over_last": _num(bv[0] / bv[-1] if bv[-1] > 0 else math.inf)}

    def to_json(self) -> dict:
        def ref_json(ref: Reference) -> dict:
            return {"svm": ref.svm, "certified": ref.certified, "alpha": list(ref.alpha),
                    "direction_error_upper": ref.direction_error_upper, "bregman_upper": ref.bregman_upper, **ref.info}

        return {"p": format_fraction(self.p), "p_float": float(self.p), "alpha": list(self.alpha),
                "r_of_R": self.r_of_R, "reference": ref_json(self.reference), "v_reference": ref_json(self.v_reference),
                "theorem31_quantities": self.quantities, "settings": self.settings, "elapsed_s": self.elapsed_s,
                "decay": self.decay(), "path": [r.to_json() for r in self.results]}


def _block_solve(obj: JointObjective, thW, thv, R, r, p, *, rounds: int, max_iter: int, polish: int, param: str):
    """Alternate the v-block and the W-block solves; returns the final state."""
    logL_prev = math.inf
    for k in range(1, rounds + 1):
        _, _, W = _unpack(thW, R, p, param)
        vs = solve_on_sphere(_DecoderLoss(obj.features(W), obj.loss), thv, r, p, param=param, max_iter=max_iter,
                             polish=polish)
        thv = vs.theta
        Ws = solve_on_sphere(ExcessLoss(obj.X, obj.y, obj.z, vs.W, loss=obj.loss), thW, R, p, param=param,
                             max_iter=max_iter, polish=polish)
        thW = Ws.theta
        logL = obj.log_loss(Ws.W, vs.W)
        if abs(logL_prev - logL) <= 1e-13 * max(1.0, abs(logL)):
            break
        logL_prev = logL
    W, v = Ws.W, vs.W
    gW = ExcessLoss(obj.X, obj.y, obj.z, v, loss=obj.loss).evaluate(W[None, :])
    gv = _DecoderLoss(obj.features(W), obj.loss).evaluate(v[None, :])
    sW, _ = ball_gap(gW["grad"][0], W, R, p)
    sv, _ = ball_gap(gv["grad"][0], v, r, p)
    return {"thW": thW, "thv": thv, "W": W, "v": v, "log_loss": obj.log_loss(W, v), "sW": sW, "sv": sv,
            "selected": tuple(int(t) for t in gW["selected"][0]), "rounds": k}


class _ReferenceCache:
    """Certified references per (svm, tokens); None when that SVM is infeasible or not certified."""

    def __init__(self, problem, p: Fraction, digits: int) -> None:
        self.problem, self.p, self.digits = problem, p, digits
        self.cache: dict[tuple, Reference | None] = {}

    def add(self, ref: Reference) -> None:
        self.cache[(ref.svm, tuple(ref.alpha))] = ref

    def get(self, svm: str, tokens: Sequence[int]) -> Reference | None:
        key = (svm, tuple(int(t) for t in tokens))
        if key not in self.cache:
            try:
                self.cache[key] = reference_direction(self.problem, self.p, alpha=key[1], svm=svm, digits=self.digits)
            except MdcertError:
                self.cache[key] = None
        return self.cache[key]

    def bregman(self, svm: str, tokens: Sequence[int], w: np.ndarray) -> float | None:
        ref = self.get(svm, tokens)
        if ref is None or not np.any(w):
            return None
        return bregman_directional(ref, w, self.p)


def _unpack(theta, R, p, param):
    from experiments.regpath import _theta_to_w

    return _theta_to_w(theta, R, float(p), _kappa(p, param))


def joint_regularization_path(problem, p, *, radii=(1.0, 100.0, 9), r_of_R: RadiusFunction | str = "R",
                              starts: int = 3, seed: int = 0, alpha=None, reference: Reference | None = None,
                              v_reference: Reference | None = None, svm_start: bool = True, dual_start: bool = True,
                              loss: str = "logistic",
                              param: str = "power", rounds: int = 30, max_iter: int = 150, polish: int = 6,
                              digits: int = 30, progress=None) -> JointPath:
    """``min L(W, v) s.t. ||W||_p <= R, ||v||_p <= r(R)`` along a grid of R (Theorem 31).

    Args:
        problem: data (its stored v is not used except to resolve alpha="opt").
        p: exponent (exact).
        radii: increasing radii or a geometric ``(start, stop, count)`` triple.
        r_of_R: the coupling, a `RadiusFunction` or an expression string (e.g. "R", "sqrt(R)").
        starts: random starts; seed: their seed.
        alpha: reference tokens (default: problem.alpha, else the globally optimal ones).
        reference, v_reference: certified attention / decoder SVM references (default: certify_svm).
        svm_start: also start at every radius from (W_mm, v_mm).
        dual_start: also start at every radius from the SVM-free uniform-dual directions of both SVMs.
        rounds: block-minimization rounds per solve.
    """
    with single_thread_blas():
        return _joint_regularization_path(problem, p, radii=radii, r_of_R=r_of_R, starts=starts, seed=seed,
                                          alpha=alpha, reference=reference, v_reference=v_reference,
                                          svm_start=svm_start, dual_start=dual_start, loss=loss, param=param,
                                          rounds=rounds,
                                          max_iter=max_iter, polish=polish, digits=digits, progress=progress)


def _joint_regularization_path(problem, p, *, radii, r_of_R, starts, seed, alpha, reference, v_reference, svm_start,
                               dual_start, loss, param, rounds, max_iter, polish, digits, progress) -> JointPath:
    from certify.problem import resolve_alpha

    t0 = time.perf_counter()
    p = parse_p(p)
    if isinstance(radii, tuple) and len(radii) == 3 and isinstance(radii[2], (int, np.integer)) and not isinstance(radii[2], bool):
        radii = geometric_radii(*radii)
    radii = _check_radii(radii)
    rf = r_of_R if isinstance(r_of_R, RadiusFunction) else parse_radius_function(r_of_R)
    rs = rf.values(radii)
    alpha = resolve_alpha(problem, alpha)
    if reference is None:
        reference = reference_direction(problem, p, alpha=alpha, digits=digits)
    if v_reference is None:
        v_reference = reference_direction(problem, p, alpha=alpha, svm="decoder", digits=digits)
    refs = _ReferenceCache(problem, p, digits)
    refs.add(reference)
    refs.add(v_reference)
    obj = JointObjective(problem.X, problem.y, problem.z, loss=loss)
    kappa = _kappa(p, param)
    m, d = problem.d * problem.d, problem.d
    rng = np.random.default_rng(seed)
    chains = {f"random-{k}": (_w_to_theta(rng.standard_normal(m), kappa), _w_to_theta(rng.standard_normal(d), kappa))
              for k in range(starts)}
    svm_theta = (_w_to_theta(reference.direction, kappa), _w_to_theta(v_reference.direction, kappa))
    dual_theta = None
    if dual_start:
        uW = uniform_dual_direction(problem.attention_constraints(alpha).rows(), p)
        uv = uniform_dual_direction(problem.decoder_constraints(alpha).rows(), p)
        if np.any(uW) and np.any(uv):
            dual_theta = (_w_to_theta(uW, kappa), _w_to_theta(uv, kappa))
    prev_best = None
    results = []
    for R, r in zip(radii, rs):
        R = float(R)
        todo = list(chains.items())
        if svm_start:
            todo.append(("svm", svm_theta))
        if dual_theta is not None:
            todo.append(("uniform-dual", dual_theta))
        if prev_best is not None:
            todo.append(("previous-best", prev_best))
        if not todo:
            raise MdcertError("no starts: use at least one random start, the SVM start or the uniform-dual start")
        runs = {label: _block_solve(obj, th[0], th[1], R, r, p, rounds=rounds, max_iter=max_iter, polish=polish,
                                    param=param) for label, th in todo}
        for label in chains:
            chains[label] = (runs[label]["thW"], runs[label]["thv"])
        best_label = min(runs, key=lambda k: (runs[k]["log_loss"], k != "previous-best"))
        best = runs[best_label]
        prev_best = (best["thW"], best["thv"])
        summaries = []
        for label, run in runs.items():
            gap = run["log_loss"] - best["log_loss"]
            dist = float(lp_norm_rows(((run["W"] - best["W"]) / R)[None, :], float(p))[0])
            summaries.append(StartSummary(label, run["log_loss"], gap, math.exp(gap) if gap < 700 else math.inf, dist,
                                          max(run["sW"], run["sv"]), run["rounds"], run["selected"]))
        res = JointRadiusResult(
            R=R, r=float(r), W=best["W"].reshape(d, d), v=best["v"], loss=math.exp(best["log_loss"]),
            log_loss=best["log_loss"], stationarity=max(best["sW"], best["sv"]), stationarity_W=best["sW"],
            stationarity_v=best["sv"], bregman_to_svm=bregman_directional(reference, best["W"], p),
            bregman_v_to_svm=bregman_directional(v_reference, best["v"], p), selected=best["selected"],
            selects_alpha=tuple(best["selected"]) == tuple(alpha), winner=best_label, rounds=best["rounds"],
            starts=tuple(summaries), bregman_to_selected_svm=refs.bregman("attention", best["selected"], best["W"]),
            bregman_v_to_selected_svm=refs.bregman("decoder", best["selected"], best["v"]))
        results.append(res)
        if progress is not None:
            progress(res)
    quantities = theorem31_quantities(problem, v_reference, alpha)
    quantities["r_over_R"] = [float(r / R) for R, r in zip(radii, rs)]
    quantities["r_over_log_R"] = [float(r / math.log(R)) if R > 1 else None for R, r in zip(radii, rs)]
    settings = {"starts": int(starts), "seed": int(seed), "svm_start": bool(svm_start),
                "dual_start": dual_theta is not None, "param": param, "rounds": int(rounds), "max_iter": int(max_iter), "polish": int(polish),
                "radii": [float(x) for x in radii], "r": [float(x) for x in rs]}
    return JointPath(p, tuple(alpha), rf.text, reference, v_reference, tuple(results), quantities,
                     time.perf_counter() - t0, settings)


# ---------------------------------------------------------------------------------------- Theorem 31 numbers
def theorem31_quantities(problem, v_reference: Reference, alpha: Sequence[int]) -> dict:
    """Data quantities behind Theorem 31's geometric condition, measured (no verdict).

    With the certified decoder SVM point ``v_mm`` (exact rationals when certified): the token
    scores ``y_i v_mm^T x_it`` (1 on the decoder's support examples, > 1 off it), per example the
    alpha token's score, the best other token's score and their gap, and the decoder support set.
    Scores are computed exactly (rationals) and rounded to float64 for the report.
    """
    X = problem.X
    n, T, d = X.shape
    if v_reference.exact is not None:
        v = list(v_reference.exact)
    else:
        v = [Fraction(float(x)) for x in v_reference.direction]
    Xq = [[[Fraction(float(X[i, t, k])) for k in range(d)] for t in range(T)] for i in range(n)]
    scores = [[int(problem.y[i]) * sum(Xq[i][t][k] * v[k] for k in range(d)) for t in range(T)] for i in range(n)]
    per = []
    for i in range(n):
        a = alpha[i]
        others = [scores[i][t] for t in range(T) if t != a]
        best_other = max(others)
        per.append({"example": i, "alpha_token": a, "alpha_score": float(scores[i][a]),
                    "best_other_score": float(best_other), "score_gap": float(scores[i][a] - best_other),
                    "alpha_strictly_best": bool(scores[i][a] > best_other),
                    "on_decoder_margin": bool(scores[i][a] == 1)})
    support = v_reference.info.get("support_tight")
    return {"decoder_scores": [[float(s) for s in row] for row in scores], "per_example": per,
            "decoder_support_examples": [int(r[0]) for r in support] if support is not None else None,
            "decoder_vector_certified": bool(v_reference.certified),
            "note": "measured quantities; the geometric condition itself is not asserted"}


# ---------------------------------------------------------------------------------------- joint MD path
@dataclass(frozen=True)
class JointMDPath:
    """The joint mirror-descent trajectory (records at log-spaced steps)."""

    p: Fraction
    lr: float
    steps: int
    records: tuple[dict, ...]
    skipped_W: tuple[int, ...]
    skipped_v: tuple[int, ...]
    elapsed_s: float

    def to_json(self) -> dict:
        return {"p": format_fraction(self.p), "p_float": float(self.p), "lr": self.lr, "steps": self.steps,
                "normalized": True, "init": "W(0) = 0, v(0) = 0",
                "skipped_W_steps": list(self.skipped_W), "skipped_v_steps": list(self.skipped_v),
                "skip_rule": "a parameter whose gradient is exactly zero is not stepped (no division by a zero norm)",
                "elapsed_s": self.elapsed_s, "records": list(self.records)}


def joint_md_path(problem, p, *, steps: int = 2000, lr: float = 0.1, alpha=None, reference: Reference | None = None,
                  v_reference: Reference | None = None, loss: str = "logistic", records: int = 40,
                  digits: int = 30) -> JointMDPath:
    """Joint mirror descent on (W, v) from zero with normalized steps (`LpMirrorDescent`, SPEC section 2).

    Args:
        problem: data; p: exponent; steps: iterations; lr: step size (per parameter, normalized).
        alpha: reference tokens (default: problem.alpha, else optimal).
        reference, v_reference: certified SVM references (default: certify_svm).
        records: number of log-spaced steps recorded.
    """
    import torch

    from certify.problem import resolve_alpha
    from experiments.optim import LpMirrorDescent

    t0 = time.perf_counter()
    p = parse_p(p)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise MdcertError(f"invalid steps {steps!r}; need an integer >= 1")
    alpha = resolve_alpha(problem, alpha)
    if reference is None:
        reference = reference_direction(problem, p, alpha=alpha, digits=digits)
    if v_reference is None:
        v_reference = reference_direction(problem, p, alpha=alpha, svm="decoder", digits=digits)
    refs = _ReferenceCache(problem, p, digits)
    refs.add(reference)
    refs.add(v_reference)
    obj = JointObjective(problem.X, problem.y, problem.z, loss=loss)
    d = problem.d
    W = torch.zeros(d, d, dtype=torch.float64, requires_grad=True)
    v = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    opt = LpMirrorDescent([W, v], lr=lr, p=p, normalize_gradient=True)
    marks = set(np.unique(np.round(np.geomspace(1, steps, records)).astype(int)).tolist()) | {steps}
    out, skipped_W, skipped_v = [], [], []
    pf = float(p)
    for k in range(1, steps + 1):
        GW, Gv = obj.scaled_gradients(W.detach().numpy(), v.detach().numpy())
        zW, zv = not np.any(GW), not np.any(Gv)
        if zW:
            skipped_W.append(k)
        if zv:
            skipped_v.append(k)
        W.grad = None if zW else torch.from_numpy(np.ascontiguousarray(GW))
        v.grad = None if zv else torch.from_numpy(np.ascontiguousarray(Gv))
        opt.step()
        if k in marks:
            Wn, vn = W.detach().numpy().ravel().copy(), v.detach().numpy().copy()
            rec = {"step": k, "norm_W": float(lp_norm_rows(Wn[None, :], pf)[0]),
                   "norm_v": float(lp_norm_rows(vn[None, :], pf)[0]),
                   "bregman_W": _num(bregman_directional(reference, Wn, p)) if np.any(Wn) else None,
                   "bregman_v": _num(bregman_directional(v_reference, vn, p)) if np.any(vn) else None,
                   "log_loss": _num(obj.log_loss(Wn, vn)),
                   "selected_tokens": [int(t) for t in np.argmax(obj.log_softmax(Wn), axis=1)]}
            rec["bregman_W_to_selected_svm"] = _num(refs.bregman("attention", rec["selected_tokens"], Wn))
            rec["bregman_v_to_selected_svm"] = _num(refs.bregman("decoder", rec["selected_tokens"], vn))
            out.append(rec)
    return JointMDPath(p, float(lr), int(steps), tuple(out), tuple(skipped_W), tuple(skipped_v),
                       time.perf_counter() - t0)
