"""``mdcert check PROBLEM --theorem pgd --p P [--loss L] [--lr ETA] [--steps K] [--normalize]``: the
hypotheses of the p-GD result of arXiv:2205.12808 on a classification problem (docs/theory.md
section 7.6; `theorems.catalogue.check_pgd`).

Without ``--lr`` the separability certificate and the loss are checked and the step size is reported
as not checked. With ``--lr`` the p-GD path is first run by the engine of ``mdcert pgd``
(`experiments.linear.run_pgd`: one trajectory from ``w(0) = 0.1`` times standard normals of seed 0,
``--steps`` constant or normalized steps, 100 log-spaced records) and the relative-smoothness
condition is measured at every recorded iterate (`experiments.linear.smoothness`); the path's
measured conclusion (the directional Bregman divergence to the certified ``w_p``, the norm, the
margin, the rate verdict) is reported beside the verdicts, never as one.

`pgd_fields` validates the options (the config module builds the `Config` from them), `run_pgd`
does the work and `PgdResult` has the check command's result shape (`lines`, `to_json`, `write`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["ATTENTION_ONLY", "PGD_INIT_SCALE", "PGD_LOSSES", "PgdResult", "pgd_fields", "run_pgd"]

#: the losses with an exponential tail that the p-GD path and `theorems.pgd` take
PGD_LOSSES = ("logistic", "exponential")
#: w(0) of the checked path: this times seeded standard normals (``mdcert pgd``'s default)
PGD_INIT_SCALE = 0.1
#: options of the attention theorems that a linear classifier has no use for
ATTENTION_ONLY = (
    ("alpha", "--alpha"),
    ("init", "--init"),
    ("mu", "--mu"),
    ("R", "--R"),
    ("run", "--run"),
    ("trajectory", "--trajectory"),
)


def pgd_fields(o: dict[str, Any], *, default_steps: int) -> dict[str, Any]:
    """The `Config` fields of ``--theorem pgd`` from the option texts ``o`` (one-line
    `certify.errors.MdcertError` on bad input, before any work)."""
    from certify.errors import MdcertError
    from certify.exact import parse_nonnegative, parse_p
    from experiments.runtime.outputs import check_distinct, check_output_file

    given = [flag for name, flag in ATTENTION_ONLY if o[name] is not None]
    if o["segment"]:
        given.append("--segment")
    if given:
        raise MdcertError(
            f"--theorem pgd (a linear classifier) takes no {', '.join(given)}: those are options of "
            f"the attention theorems 6, 8, 10, 11 and 31; drop them"
        )
    if o["problem"] is None:
        raise MdcertError("give a classification problem file: mdcert check PROBLEM --theorem pgd")
    if o["p"] is None:
        raise MdcertError("give --p, the exponent of the l_p potential (e.g. --p 1.75)")
    steps = default_steps if o["steps"] is None else o["steps"]
    if o["json"] is not None:
        check_output_file(o["json"], option="--json")
        check_distinct({"--json": o["json"]}, {"the problem file": o["problem"]})
    p = parse_p(o["p"], name="--p")
    loss = o["loss"].strip().lower()
    if loss not in PGD_LOSSES:
        raise MdcertError(
            f"--theorem pgd needs a loss with an exponential tail: --loss logistic or exponential, "
            f"got {o['loss']!r}"
        )
    if not 1 <= steps <= 10**9:
        raise MdcertError(f"invalid --steps {steps}; give a positive number of steps (at most 1e9)")
    if not 1 <= o["digits"] <= 2000:
        raise MdcertError(f"invalid --digits {o['digits']}; give an integer between 1 and 2000")
    if o["normalize"] and o["lr"] is None:
        raise MdcertError("--normalize is the step rule of a p-GD path: give --lr too")
    eta = None
    if o["lr"] is not None:
        eta = parse_nonnegative(o["lr"], "--lr")
        if not Fraction(1, 10**300) <= eta <= 10**300:
            raise MdcertError(
                f"invalid --lr {o['lr']!r}; the step size must be a float64 in (1e-300, 1e300)"
            )
        if not 1 < p <= 20:
            raise MdcertError(
                f"--p {o['p']} is outside the range of the p-GD path engine, (1, 20]; "
                f"without --lr any p > 1 is checked"
            )
    return dict(
        problem=o["problem"],
        theorem="pgd",
        p=o["p"],
        p_exact=p,
        alpha=None,
        init=None,
        lr=o["lr"],
        eta=eta,
        steps=steps,
        normalize=o["normalize"],
        run=None,
        trajectory=None,
        mu=None,
        mu_exact=None,
        R=None,
        R_exact=None,
        loss=loss,
        segment=False,
        digits=o["digits"],
        json=o["json"],
    )


def _path(problem, config) -> tuple[Any, Any, dict]:
    """Run the p-GD path of ``config`` with `experiments.linear.run_pgd`; return its certificate at
    p (None when p is not a float64: the check certifies the exact p itself), the smoothness values
    at every record, and the JSON facts of the path."""
    import numpy as np

    from experiments.linear import PgdConfig, run_pgd
    from experiments.linear.engine import float_rows
    from experiments.linear.smoothness import smoothness_margins

    pf = float(config.p_exact)
    training = PgdConfig(
        ps=(pf,),
        lrs=(float(config.eta),),
        inits=1,
        init_scale=PGD_INIT_SCALE,
        loss=config.loss,
        normalize=config.normalize,
        steps=config.steps,
        seed=0,
    )
    result = run_pgd(problem, training, name=str(config.problem), digits=config.digits)
    paths = result.paths
    smooth = smoothness_margins(paths, float_rows(problem), samples=len(paths.steps))
    values = None if smooth is None else smooth[0][np.isfinite(smooth[0])].tolist()
    group = result.groups[0]
    facts = {
        "engine": "experiments.linear.run_pgd (the engine of mdcert pgd)",
        "lr": config.lr,
        "steps": config.steps,
        "step_rule": "normalized" if config.normalize else "constant",
        "init": f"{PGD_INIT_SCALE} x standard normals, seed 0",
        "records": int(len(paths.steps)),
        "status": paths.status[0].value,
        "stopped_at": paths.stopped_at[0],
        "final_bregman": None if paths.bregman is None else float(paths.bregman[0, -1]),
        "final_norm": float(paths.norms[0, -1]),
        "final_margin": float(paths.margin[0, -1]),
        "certified_margin": group["certified_margin"],
        "norm_growth_loglog_slope": group["norm_growth_loglog_slope_median"],
        "rate": group["rate"],
        "smoothness_samples": None if values is None else len(values),
        "seconds": result.seconds,
    }
    cert = result.refs[pf].certificate if Fraction(pf) == config.p_exact else None
    return cert, (None if values is None else values), facts


@dataclass(frozen=True, kw_only=True)
class PgdResult:
    """A finished ``check --theorem pgd``: the ``report`` (`theorems.verdict.TheoremReport`) on the
    classification ``problem`` and ``seconds`` (``training_path`` when a path ran, ``total``).
    ``exit_code`` is 0 whatever the verdicts: the check ran."""

    config: Any
    report: Any
    problem: Any
    seconds: dict
    exit_code: int = 0

    def lines(self, width: int) -> list[str]:
        """The problem, the table of hypotheses (as for the attention theorems), the certified
        max-margin program, what the path measured, and the time."""
        from certify.exact import format_g
        from experiments.commands.check.text import table_lines
        from experiments.runtime.terminal import wrap_lines

        out = wrap_lines([f"problem: {self.problem.describe()}"], width)
        out += table_lines(self.report, width=width)
        q = self.report.quantities
        mm = q["max_margin"]
        tail = []
        if mm.get("opt_lower"):
            lo, hi = Fraction(mm["opt_lower"]), Fraction(mm["opt_upper"])
            counts = mm.get("support_counts") or {}
            tail.append(
                f"||w_p||_p in [{format_g(lo, 12)}, {format_g(hi, 12)}] (the max normalized margin "
                f"is 1/OPT), support rows: " + ", ".join(f"{v} {k}" for k, v in counts.items())
            )
        path = q.get("path")
        if path:
            rate = path["rate"]
            d = path["final_bregman"]
            tail.append(
                f"path: {path['steps']} {path['step_rule']} steps, lr {path['lr']}, w(0) = "
                f"{path['init']} ({path['status']}): D_psi(w_p, w(K)) = "
                + ("-" if d is None else f"{d:.3g}")
                + f", ||w(K)||_p = {path['final_norm']:.3g}, normalized margin "
                f"{path['final_margin']:.3g}"
                + (
                    ""
                    if path["certified_margin"] is None
                    else f" (certified {path['certified_margin']:.6g})"
                )
                + ("" if rate is None else f", rate: {rate['verdict']} ({rate['reason']})")
            )
        tail.append(f"time: {self.seconds['total']:.2f} s")
        return out + wrap_lines(tail, width)

    def to_json(self) -> dict:
        """The JSON report: the theorem report, the inputs and the wall times."""
        c = self.config
        payload = self.report.to_json()
        payload["inputs"] = {
            "problem": c.problem,
            "theorem": "pgd",
            "p": c.p,
            "lr": c.lr,
            "steps": c.steps if c.lr else None,
            "loss": c.loss,
            "digits": c.digits,
            "step_rule": c.step_rule,
        }
        payload["quantities"]["seconds"] = {
            **payload["quantities"].get("seconds", {}),
            **self.seconds,
        }
        return payload

    def write(self, out) -> None:
        """Write the JSON report to the file ``out`` (atomically: complete or absent)."""
        from certify.io.jsonenc import dumps
        from experiments.runtime.outputs import write_text_atomic

        write_text_atomic(out, dumps(self.to_json(), indent=2, default=str))


def run_pgd(config, problem) -> PgdResult:
    """Check the p-GD hypotheses on the classification ``problem`` (after running the path, when
    ``config`` has a step size)."""
    from theorems.catalogue import check_pgd

    t0 = time.perf_counter()
    seconds: dict = {}
    cert = smooth = facts = None
    if config.lr is not None:
        t1 = time.perf_counter()
        cert, smooth, facts = _path(problem, config)
        seconds["training_path"] = round(time.perf_counter() - t1, 3)
        if smooth is None:
            smooth = []  # too many variables to measure: step_size_measured says so
    report = check_pgd(
        problem,
        p=config.p_exact,
        loss=config.loss,
        certificate=cert,
        smoothness=smooth,
        digits=config.digits,
        path=facts,
    )
    seconds["total"] = round(time.perf_counter() - t0, 3)
    return PgdResult(config=config, report=report, problem=problem, seconds=seconds)
