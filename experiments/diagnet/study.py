"""Which interpolating solution do sign-like updates pick? Paths with certified references
(arXiv 2410.14158; docs/theory.md sections 8.3, 8.4, 8.5). The library side of ``mdcert signdescent``:
``SignConfig -> run_signdescent -> SignResult -> SignResult.write(dir)``.

For each rule (gd, sign, adam) the grid eps x alpha x lr is trained as one batch
(`experiments.diagnet.engine`); every final network then gets, from its exact float64 weights:
the certified delta-KKT facts of section 8.4 (`certify.regression.delta_kkt`: residual, delta upper
bound, distance to the minimizer of the paper's E with this network's own v), and its l2 distance to
the certified minimum-l_{3/2}-norm interpolator (section 8.3; the eps -> 0 idealization) and to the
certified minimum-l2-norm interpolator (what gradient descent from a small init approaches), each
as ``measured +- the certificate's distance bound`` (``||.||_2 <= ||.||_p`` for p <= 2). The
gradient-descent potential Psi_alpha's program is not certified yet: the summary says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_fraction
from certify.io.jsonenc import dumps
from certify.regression import RegressionProblem, certify_interpolation, delta_kkt
from experiments.diagnet.engine import DiagConfig, DiagStatus, Rule, run_diag_paths

__all__ = ["SignConfig", "SignResult", "assumption_warnings", "run_signdescent"]


@dataclass(frozen=True)
class SignConfig:
    """One ``mdcert signdescent`` run: the rules, the grid, and the horizon."""

    rules: tuple[Rule, ...] = (Rule.SIGN,)
    eps: tuple[float, ...] = (1e-3, 1e-2, 0.025)
    alpha: tuple[float, ...] = (0.1,)
    lr: tuple[float, ...] = (1e-3,)
    steps: int = 100_000
    record_every: int = 1000
    betas: tuple[float, float] = (0.9, 0.999)
    device: str = "cpu"
    threads: int | None = None  #: torch threads while training (None: the engine's choice)

    def diag(self, rule: Rule) -> DiagConfig:
        return DiagConfig(
            rule,
            eps=self.eps,
            alpha=self.alpha,
            lr=self.lr,
            steps=self.steps,
            record_every=self.record_every,
            betas=self.betas if rule is Rule.ADAM else (0.0, 0.0),
        )


@dataclass(frozen=True)
class SignResult:
    """Per-trajectory rows (JSON-ready, exact bounds as "num/den"), the references, and wall times."""

    config: SignConfig
    problem_hash: str
    shape: tuple[int, int]
    references: dict
    rows: tuple[dict, ...]
    seconds: dict = field(default_factory=dict)
    #: rule -> {"steps": (R,), "beta": (B, R, D), "loss": (B, R)}: the recorded paths (paths.npz)
    paths: dict = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict:
        cfg = self.config
        return {
            "kind": "signdescent",
            "problem": {"data_hash": self.problem_hash, "shape": list(self.shape)},
            "config": {
                "rules": [r.value for r in cfg.rules],
                "eps": list(cfg.eps),
                "alpha": list(cfg.alpha),
                "lr": list(cfg.lr),
                "steps": cfg.steps,
                "adam_betas": list(cfg.betas),
            },
            "references": self.references,
            "trajectories": list(self.rows),
            "not_built": "the certified minimizer of the gradient-descent potential D_Psi_alpha (eq. 14)",
            "seconds_wall": self.seconds,
        }

    def write(self, directory: str | Path, *, figures: bool = True) -> list[Path]:
        """Write ``summary.json``, ``paths.npz`` and (when matplotlib is installed and ``figures``) the
        PNGs into ``directory`` (created by the caller, e.g. an atomic run dir); returns the paths."""
        from experiments.diagnet.figures import have_matplotlib, plot_trajectories, plot_vs_eps

        d = Path(directory)
        path = d / "summary.json"
        path.write_text(dumps(self.to_json(), indent=1) + "\n")  # strict JSON: NaN -> null
        out = [path]
        arrays = {
            f"{rule}_{k}": np.asarray(v) for rule, p in self.paths.items() for k, v in p.items()
        }
        if arrays:
            with open(d / "paths.npz", "wb") as fh:
                np.savez(fh, **arrays)
            out.append(d / "paths.npz")
        if not (figures and have_matplotlib()):
            return out
        for rule, p in self.paths.items():
            cfg = self.config
            # one panel per eps at the first alpha and lr of the grid (grid order eps x alpha x lr)
            stride = len(cfg.alpha) * len(cfg.lr)
            t = np.asarray(p["steps"]) * cfg.lr[0]
            out.append(
                plot_trajectories(
                    d / f"trajectories_{rule}.png",
                    time=t,
                    beta=np.asarray(p["beta"])[::stride],
                    eps=list(cfg.eps),
                    title=f"{rule}: beta_i(t), alpha = {cfg.alpha[0]:g}, "
                    f"lr = {cfg.lr[0]:g} (float64 measurement)",
                )
            )
        if any(r["status"] == "finished" for r in self.rows):
            out.append(
                plot_vs_eps(
                    d / "vs_eps.png",
                    list(self.rows),
                    title=f"N = {self.shape[0]}, D = {self.shape[1]}: "
                    "delta and distances to the certified optima against eps",
                )
            )
        return out

    def lines(self) -> list[str]:
        """Terminal lines: one per trajectory, each number named."""
        out = [
            (
                f"references: min ||beta||_3/2 = {self.references['l32']['opt']}, "
                f"min ||beta||_2 = {self.references['l2']['opt']} (certified)"
            )
        ]
        for r in self.rows:
            head = f"{r['rule']:<4} eps={r['eps']:<8g} alpha={r['alpha']:<6g} lr={r['lr']:<8g}"
            if r["status"] != "finished":
                out.append(
                    f"{head} stopped at step {r['stop_step']} ({r['status']}): no certified facts"
                )
                continue
            flag = " [lr > eps: the discrete run need not follow the ODE]" if r["lr_vs_eps"] else ""
            out.append(
                f"{head} loss {r['final_loss']:.2e}; delta <= {r['delta_upper_float']:.4g} (proven; "
                f"float {r['delta_float']:.4g}); to l3/2 interp. {r['dist_l32']:.3g} (l2), "
                f"to l2 interp. {r['dist_l2']:.3g}; T0={r['t0_step']} T={r['t_step']} steps{flag}"
            )
        return out


def _reference(problem: RegressionProblem, p: str) -> tuple[dict, np.ndarray, float]:
    cert = certify_interpolation(problem, p).certificate
    if cert.status.value == "inconsistent":
        raise MdcertError(
            "X beta = y has no solution (proven: an exact g has X^T g = 0 and y^T g != 0), so the "
            "certified references do not exist; give a consistent system (D > N, X of full row rank)"
        )
    if cert.opt_lower is None:
        raise MdcertError(
            f"the min-l_{p} interpolation program has no certified optimum here "
            f"({cert.status.value}: {cert.reason}); nothing was trained"
        )
    beta = np.array([float(cert.beta.entry(i)) for i in range(problem.D)])
    ref = {
        "opt": f"{float(cert.opt_lower):.12g}",
        "opt_lower": format_fraction(cert.opt_lower),
        "opt_upper": format_fraction(cert.opt_upper),
        "distance_upper": format_fraction(cert.distance_upper),
    }
    return ref, beta, float(cert.distance_upper)


def run_signdescent(
    problem: RegressionProblem, config: SignConfig, *, warn: Callable[[str], None] | None = None
) -> SignResult:
    """Train every rule over the grid and attach the certified facts (module docstring). ``warn``
    (a callable taking one line) gets `assumption_warnings` once the references are certified, so a
    problem refused for having none gets its one error line and no warnings."""
    t0 = time.perf_counter()
    l32, beta32, d32 = _reference(problem, "3/2")
    l2, beta2, d2 = _reference(problem, "2")
    t_ref = time.perf_counter() - t0
    if warn is not None:
        for line in assumption_warnings(problem):
            warn(line)
    rows, t_train, t_cert, paths = [], 0.0, 0.0, {}
    for rule in config.rules:
        t1 = time.perf_counter()
        res = run_diag_paths(
            problem, config.diag(rule), device=config.device, threads=config.threads
        )
        t_train += time.perf_counter() - t1
        paths[rule.value] = {"steps": res.record_steps, "beta": res.beta, "loss": res.loss}
        t1 = time.perf_counter()
        for b in range(len(res.eps)):
            row = {
                "rule": rule.value,
                "eps": float(res.eps[b]),
                "alpha": float(res.alpha[b]),
                "lr": float(res.lr[b]),
                "status": res.status[b].value,
                "stop_step": int(res.stop_step[b]),
                "t0_step": int(res.t0_step[b]),
                "t_step": int(res.t_step[b]),
                "lr_vs_eps": bool(res.lr_vs_eps[b]),
                "final_loss": float(res.loss[b, -1]),
            }
            if res.status[b] is DiagStatus.FINISHED:
                facts = delta_kkt(problem, res.w_plus[b], res.w_minus[b])
                beta = facts.beta
                row.update(
                    {
                        "residual_l2_upper": format_fraction(facts.residual_l2_upper),
                        "delta_upper": format_fraction(facts.delta_upper),
                        "delta_upper_float": float(facts.delta_upper),
                        "delta_float": facts.delta_float,
                        "distance_to_E_opt_upper": None
                        if facts.distance_to_e_opt_upper is None
                        else format_fraction(facts.distance_to_e_opt_upper),
                        "distance_to_E_opt_upper_float": None
                        if facts.distance_to_e_opt_upper is None
                        else float(facts.distance_to_e_opt_upper),
                        "dist_l32": float(np.linalg.norm(beta - beta32)),
                        "dist_l32_pm": d32,
                        "dist_l2": float(np.linalg.norm(beta - beta2)),
                        "dist_l2_pm": d2,
                        "rel_dist_l32": float(
                            np.linalg.norm(beta - beta32) / max(np.linalg.norm(beta32), 1e-300)
                        ),
                    }
                )
            rows.append(row)
        t_cert += time.perf_counter() - t1
    return SignResult(
        config,
        problem.data_hash(),
        (problem.N, problem.D),
        {"l32": l32, "l2": l2},
        tuple(rows),
        {
            "references": round(t_ref, 2),
            "training": round(t_train, 2),
            "certified_facts": round(t_cert, 2),
        },
        paths,
    )


def assumption_warnings(problem: RegressionProblem) -> list[str]:
    """Warnings (one line each) for data outside the paper's setting (docs/theory.md sections 8.1, 8.5):
    ``N >= D`` (the theory is for overparameterized data) and a zero target (Assumption 3.2 asks
    ``y_n != 0``; the coordinates of such a block stay at 0 and the stage times need not be reached)."""
    out = []
    if problem.N >= problem.D:
        out.append(
            f"N = {problem.N} >= D = {problem.D}: the sign-descent theory needs D > N (overparameterized); "
            "what is well posed is still run and certified"
        )
    zeros = [int(i) for i in np.flatnonzero(np.asarray(problem.y) == 0)]
    if zeros:
        out.append(
            f"y has zero entries at rows {zeros[:5]}{' ...' if len(zeros) > 5 else ''}: Assumption 3.2 "
            "(arXiv 2410.14158) needs y_n != 0; the run goes on, but outside the theorem's setting"
        )
    return out
