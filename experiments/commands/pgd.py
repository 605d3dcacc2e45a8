"""``mdcert pgd`` in the application layer (`experiments.commands`): p-GD paths of a linear
classifier against the certified l_p max-margin direction (docs/theory.md section 7.5), and with
``check`` the hypotheses of the p-GD result on the run (`theorems.pgd`: separability, the loss, the
step size measured along the run's path; section 7.6).

The exit code is 0 when the run or check completed, whatever the verdicts; bad input raises (exit 1).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = ["Config", "Result", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert pgd``."""
    parser.add_argument(
        "problem", help="classification problem file (.npz or .json, kind = 'classification')"
    )
    parser.add_argument(
        "--p", default="1.5,2,3", help="comma-separated exponents in (1, 20] (default 1.5,2,3)"
    )
    parser.add_argument("--lr", default="0.1", help="comma-separated step sizes > 0 (default 0.1)")
    parser.add_argument(
        "--inits", type=int, default=8, help="initializations per (p, lr) (default 8)"
    )
    parser.add_argument(
        "--init-scale",
        type=float,
        default=0.1,
        help="w(0) = scale * seeded standard normals (default 0.1; 0 starts at w = 0)",
    )
    parser.add_argument(
        "--loss", choices=("exponential", "logistic"), default="logistic", help="default logistic"
    )
    parser.add_argument(
        "--normalize", action="store_true", help="divide the gradient by its dual norm ||g||_q"
    )
    parser.add_argument(
        "--steps", type=int, default=10_000, help="steps per trajectory (default 1e4)"
    )
    parser.add_argument(
        "--records", type=int, default=100, help="log-spaced record points (default 100)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the initializations (default 0)"
    )
    parser.add_argument("--digits", type=int, default=30, help="certificate digits (default 30)")
    parser.add_argument(
        "--check", action="store_true", help="check the p-GD hypotheses (theorems.pgd) on the run"
    )
    parser.add_argument(
        "-o", "--output", default=None, help="run directory to write (required without --check)"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing run directory"
    )


def _floats(text: str, option: str) -> tuple[float, ...]:
    from certify.errors import MdcertError

    try:
        vals = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        raise MdcertError(f"{option} must be comma-separated numbers, got {text!r}") from None
    if len(set(vals)) != len(vals):
        raise MdcertError(f"{option} has a repeated value: {text!r}")
    return vals


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert pgd`` run: the problem file, the training grid (`PgdConfig`), the
    certificate digits, whether to check the hypotheses, and the run directory."""

    problem: str
    training: Any
    digits: int = 30
    check: bool = False
    output: str | None = None
    overwrite: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Refuse a missing ``-o`` (without ``--check``), bad digits, seed, grid values and an
        output directory that would replace an input, before any work (one line each)."""
        from certify.errors import MdcertError
        from experiments.linear import PgdConfig
        from experiments.runtime.outputs import check_output_dir, check_seed

        o = dict(options)
        if not o.get("problem"):
            raise MdcertError("give a classification problem file: mdcert pgd PROBLEM -o RUN")
        output, check = o.get("output"), bool(o.get("check", False))
        if output is None and not check:
            raise MdcertError("-o RUN is required (the run directory to write), or give --check")
        digits = o.get("digits", 30)
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 2000:
            raise MdcertError(f"invalid --digits {digits}; give an integer between 1 and 2000")
        seed = o.get("seed", 0)
        check_seed(seed)
        training = PgdConfig(
            ps=_floats(o.get("p", "1.5,2,3"), "--p"),
            lrs=_floats(o.get("lr", "0.1"), "--lr"),
            inits=o.get("inits", 8),
            init_scale=o.get("init_scale", 0.1),
            loss=o.get("loss", "logistic"),
            normalize=bool(o.get("normalize", False)),
            steps=o.get("steps", 10_000),
            records=o.get("records", 100),
            seed=seed,
        )
        overwrite = bool(o.get("overwrite", False))
        if output is not None:
            check_output_dir(
                output,
                option="-o",
                overwrite=overwrite,
                kind="pgd",
                inputs={"the problem file": o["problem"]},
            )
        return cls(
            problem=str(o["problem"]),
            training=training,
            digits=digits,
            check=check,
            output=None if output is None else str(output),
            overwrite=overwrite,
        )


@dataclass(frozen=True)
class Result:
    """The run (`experiments.linear.run_pgd`'s result) and, with ``check``, the verdict lines."""

    config: Config
    run: Any
    check_lines: tuple[str, ...] = field(default=())
    exit_code: int = 0

    def write(self, out: str | Path | None = None) -> None:
        """The run directory (summary.json, arrays.npz, pgd.png) through a temporary directory
        renamed when complete; nothing without an output."""
        from experiments.runtime.outputs import run_dir

        target = self.config.output if out is None else out
        if target is None:
            return
        with run_dir(target, kind="pgd", overwrite=self.config.overwrite) as tmp:
            self.run.write(tmp)

    def lines(self, width: int = 100) -> list[str]:
        """Per p the certified direction and what the paths reached, the verdicts, the times."""
        s = self.run.seconds
        wrote = f"; wrote {self.config.output}/summary.json" if self.config.output else ""
        return [
            *self.run.lines(),
            *self.check_lines,
            f"wall: certify {s['certify_wall']} s, training {s['train_wall']} s (CPU "
            f"{s['train_cpu']} s), analysis {s['analysis_wall']} s{wrote}",
        ]


def run(config: Config) -> Result:
    """Certify ``w_p`` per p, train the grid as one batched program, check when asked."""
    from certify.classification import ClassificationProblem, load_problem
    from certify.errors import MdcertError
    from experiments.linear import run_pgd

    problem = load_problem(config.problem)
    if not isinstance(problem, ClassificationProblem):
        raise MdcertError(
            f"{config.problem!r} is an attention problem; mdcert pgd needs a classification problem "
            f"(kind = 'classification': X, y; see 'mdcert synth --classification')"
        )
    result = run_pgd(problem, config.training, name=config.problem, digits=config.digits)
    checks = tuple(_check_lines(problem, result, config.training.loss)) if config.check else ()
    return Result(config, result, checks)


def _check_lines(problem, result, loss_name: str) -> list[str]:
    from experiments.linear.engine import float_rows
    from experiments.linear.smoothness import smoothness_margins
    from theorems.pgd import PGD_STATEMENT, loss_exponential_tail, separable, step_size_measured

    lines = [
        f"checking: {PGD_STATEMENT.statement} ({PGD_STATEMENT.reference}; hypotheses are the "
        f"literature's standard ones, docs/theory.md section 7.6)"
    ]
    loss = loss_exponential_tail(loss_name)
    lines.append(f"  {loss.name}: {loss.verdict.value.upper()} - {loss.message}")
    smooth = smoothness_margins(result.paths, float_rows(problem))
    cfg = result.paths.config
    for p in cfg.ps:
        sep = separable(result.refs[p].certificate)
        lines.append(f"  p={p:g} {sep.name}: {sep.verdict.value.upper()} - {sep.message}")
        for lr in cfg.lrs:
            rows = [b for b, (pp, ll, _) in enumerate(cfg.grid) if pp == p and ll == lr]
            vals = [] if smooth is None else smooth[rows].ravel().tolist()
            st = step_size_measured(vals, where=f" (p={p:g}, lr={lr:g})")
            lines.append(
                f"  p={p:g} lr={lr:g} {st.name}: {st.verdict.value.upper()} - {st.message}"
            )
    return lines
