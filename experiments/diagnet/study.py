"""Which interpolating solution do sign-like updates pick? Paths with certified references
(arXiv 2410.14158; docs/theory.md sections 8.3, 8.4, 8.5). The library side of ``mdcert signdescent``:
``SignConfig -> run_signdescent -> SignResult -> SignResult.write(dir)``.

For each rule (gd, sign, adam) the grid eps x alpha x lr is trained as one batch
(`experiments.diagnet.engine`); every final network then gets, from its exact float64 weights:
the certified delta-KKT facts of section 8.4 (`certify.regression.delta_kkt`: residual, delta upper
bound, distance to the minimizer of the paper's E with this network's own v), and its l2 distance to
three certified references: the minimum-l_p-norm interpolator with p = 2 - 1/H (section 8.3; the
eps -> 0 idealization, l_{3/2} at the paper's depth H = 2), the minimum-l2-norm interpolator, and
(depth 2) the gradient-descent limit ``argmin Q_alpha`` at the row's alpha (section 8.9, what gradient
descent from ``alpha 1`` converges to), each as ``measured +- the certificate's distance bound``.
At depth H > 2 (``SignConfig.depth``) the paper's E, its delta-KKT facts and Q_alpha are not
defined (they are the depth-2 potentials): those rows carry the reason instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_fraction
from certify.io.jsonenc import dumps
from certify.regression import RegressionProblem, certify_interpolation, certify_psi, delta_kkt
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
    depth: int = 2  #: H in beta = w+^H - w-^H (the paper's H = 2)

    @property
    def p(self) -> Fraction:
        """The exponent of the eps -> 0 potential at this depth, ``2 - 1/H`` (3/2 at H = 2)."""
        return 2 - Fraction(1, self.depth)

    def diag(self, rule: Rule) -> DiagConfig:
        return DiagConfig(
            rule,
            eps=self.eps,
            alpha=self.alpha,
            lr=self.lr,
            steps=self.steps,
            record_every=self.record_every,
            depth=self.depth,
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
                "depth": cfg.depth,
            },
            "references": self.references,
            "trajectories": list(self.rows),
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
                    title=f"N = {self.shape[0]}, D = {self.shape[1]}, depth {self.config.depth}: "
                    "delta and distances to the certified optima against eps",
                    p=self.references["lp"]["p"],
                )
            )
        return out

    def lines(self) -> list[str]:
        """Terminal lines: one per trajectory, each number named."""
        ref, psi = self.references, self.references["psi"]
        gd = "; ".join(
            f"alpha={a}: " + (v["opt"] if "opt" in v else f"not certified ({v['reason']})")
            for a, v in psi.items()
            if a != "not_defined"
        )
        out = [
            (
                f"references (certified): min ||beta||_{ref['lp']['p']} = {ref['lp']['opt']}, "
                f"min ||beta||_2 = {ref['l2']['opt']}, "
                + (f"min Q_alpha (gd limit) {gd}" if gd else f"Q_alpha: {psi['not_defined']}")
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
            delta = (
                f"delta <= {r['delta_upper_float']:.4g} (proven; float {r['delta_float']:.4g})"
                if "delta_upper" in r
                else "delta: not defined at this depth"
            )
            psi = "" if r.get("dist_psi") is None else f", to gd limit {r['dist_psi']:.3g}"
            out.append(
                f"{head} loss {r['final_loss']:.2e}; {delta}; to l{ref['lp']['p']} interp. "
                f"{r['dist_lp']:.3g} (l2), to l2 interp. {r['dist_l2']:.3g}{psi}; "
                f"T0={r['t0_step']} T={r['t_step']} steps{flag}"
            )
        return out


def _facts(ref: dict, cert) -> tuple[dict, np.ndarray, float]:
    """``ref`` completed from an optimal certificate: OPT (12 digits and exact), the distance bound."""
    ref.update(
        {
            "opt": f"{float(cert.opt_lower):.12g}",
            "opt_lower": format_fraction(cert.opt_lower),
            "opt_upper": format_fraction(cert.opt_upper),
            "distance_upper": format_fraction(cert.distance_upper),
        }
    )
    beta = np.array([float(cert.beta.entry(i)) for i in range(len(cert.beta.ints))])
    return ref, beta, float(cert.distance_upper)


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
    return _facts({"p": p}, cert)


def _gd_limits(problem: RegressionProblem, config: SignConfig) -> tuple[dict, dict]:
    """The certified ``argmin Q_alpha`` per alpha of the grid (docs/theory.md section 8.9; alpha as
    its shortest decimal, e.g. 0.1 = 1/10 exactly): the JSON entries and {alpha: (point, bound)}.
    Depth > 2: the entry ``not_defined`` says why there is none."""
    if config.depth != 2:
        reason = (
            f"Q_alpha is the gradient-descent potential of depth 2, not of depth {config.depth}"
        )
        return {"not_defined": reason}, {}
    refs, points = {}, {}
    for a in dict.fromkeys(config.alpha):
        cert = certify_psi(problem, repr(float(a))).certificate
        if cert.opt_lower is None:
            refs[repr(float(a))] = {"status": cert.status.value, "reason": cert.reason}
            continue
        ref, beta, dist = _facts({}, cert)
        refs[repr(float(a))], points[a] = ref, (beta, dist)
    return refs, points


def _distances(row: dict, beta: np.ndarray, refs: dict) -> None:
    """The measured l2 distances of ``beta`` to the references, with their proven +- bounds."""
    (bp, dp), (b2, d2), psi = refs["lp"], refs["l2"], refs["psi"].get(row["alpha"])
    row.update(
        {
            "dist_lp": float(np.linalg.norm(beta - bp)),
            "dist_lp_pm": dp,
            "rel_dist_lp": float(np.linalg.norm(beta - bp) / max(np.linalg.norm(bp), 1e-300)),
            "dist_l2": float(np.linalg.norm(beta - b2)),
            "dist_l2_pm": d2,
            "dist_psi": None if psi is None else float(np.linalg.norm(beta - psi[0])),
            "dist_psi_pm": None if psi is None else psi[1],
        }
    )


def _kkt_facts(problem: RegressionProblem, w_plus, w_minus) -> tuple[dict, np.ndarray]:
    """Section 8.4's proven facts of one depth-2 network and its beta."""
    facts = delta_kkt(problem, w_plus, w_minus)
    e_dist = facts.distance_to_e_opt_upper
    return {
        "residual_l2_upper": format_fraction(facts.residual_l2_upper),
        "delta_upper": format_fraction(facts.delta_upper),
        "delta_upper_float": float(facts.delta_upper),
        "delta_float": facts.delta_float,
        "distance_to_E_opt_upper": None if e_dist is None else format_fraction(e_dist),
        "distance_to_E_opt_upper_float": None if e_dist is None else float(e_dist),
    }, facts.beta


def run_signdescent(
    problem: RegressionProblem, config: SignConfig, *, warn: Callable[[str], None] | None = None
) -> SignResult:
    """Train every rule over the grid and attach the certified facts (module docstring). ``warn``
    (a callable taking one line) gets `assumption_warnings` once the references are certified, so a
    problem refused for having none gets its one error line and no warnings."""
    t0 = time.perf_counter()
    p = config.p
    lp, beta_p, d_p = _reference(problem, str(p))
    l2, beta2, d2 = _reference(problem, "2")
    psi, psi_points = _gd_limits(problem, config)
    refs = {"lp": (beta_p, d_p), "l2": (beta2, d2), "psi": psi_points}
    t_ref = time.perf_counter() - t0
    if warn is not None:
        for line in assumption_warnings(problem, eps=config.eps, alpha=config.alpha):
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
        finals = res.beta_final
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
                if config.depth == 2:
                    facts, beta = _kkt_facts(problem, res.w_plus[b], res.w_minus[b])
                    row.update(facts)
                else:
                    beta = finals[b]
                    row["delta_kkt"] = (
                        f"not defined: the paper's E and delta-KKT are for depth 2, not {config.depth}"
                    )
                _distances(row, beta, refs)
            rows.append(row)
        t_cert += time.perf_counter() - t1
    return SignResult(
        config,
        problem.data_hash(),
        (problem.N, problem.D),
        {"lp": lp, "l2": l2, "psi": psi},
        tuple(rows),
        {
            "references": round(t_ref, 2),
            "training": round(t_train, 2),
            "certified_facts": round(t_cert, 2),
        },
        paths,
    )


def assumption_warnings(
    problem: RegressionProblem, *, eps: Sequence[float] = (), alpha: Sequence[float] = ()
) -> list[str]:
    """Warnings (one line each) for data outside the paper's setting (docs/theory.md sections 8.1, 8.5,
    8.6): ``N >= D`` (the theory is for overparameterized data), a zero target (Assumption 3.2 asks
    ``y_n != 0``; the coordinates of such a block stay at 0 and the stage times need not be reached)
    and, over the grid ``eps x alpha`` when given, the pairs where Assumption 3.3 (eqs. 18-19) is not
    proved to hold (`theorems.signdescent.assumption_3_3`, exact)."""
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
    return out + _assumption_3_3_lines(problem, eps, alpha)


def _assumption_3_3_lines(problem: RegressionProblem, eps, alpha) -> list[str]:
    """At most one line: the grid pairs where Assumption 3.3 fails (or is undecided), with the first."""
    from theorems.signdescent import assumption_3_3
    from theorems.verdict import Verdict

    pairs = [(e, a) for e in dict.fromkeys(eps) for a in dict.fromkeys(alpha)]
    bad = [
        (e, a, r)
        for e, a in pairs
        if (r := assumption_3_3(problem, eps=e, alpha=a)).verdict is not Verdict.HOLDS
    ]
    if not bad:
        return []
    e, a, r = bad[0]
    fails = [
        f"{x.quantity.split(':')[0]} at row {x.data['row']}"
        for x in r.evidence
        if x.relation is not None and x.implies() is Verdict.FAILS
    ]
    why = f"fails: {', '.join(fails)}" if fails else "undecided: the rows are not the blocks"
    return [
        f"Assumption 3.3 (arXiv 2410.14158 eqs. 18-19) is not proved at {len(bad)} of {len(pairs)} "
        f"(eps, alpha) pairs (first: eps = {e:g}, alpha = {a:g}, {why}); the runs go on, outside "
        "the theorems' setting"
    ]
