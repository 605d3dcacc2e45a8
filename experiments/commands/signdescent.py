"""``mdcert signdescent`` in the application layer (`experiments.commands`): diagonal-network paths
of gd / smoothed sign / Adam against certified interpolators and delta-KKT bounds.

With a PROBLEM (or ``--synth block|gaussian``, which `run` first writes there: an input), `run` is
`experiments.diagnet.study.run_signdescent` and `Result.write` builds the run directory
(``summary.json``, ``paths.npz``, figures; docs/formats.md) through a temporary directory renamed
when complete. With ``--preset paper`` (`experiments.diagnet.preset.run_paper`) the run directory is
resumable and written while it runs (finished parts are reused), so `Result.write` has nothing left.
Bad input raises one line (exit 1), including a system ``X beta = y`` proven inconsistent; data
outside the paper's setting (N >= D, a zero target) is a warning (`Result.messages`) and still runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = ["Config", "Result", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert signdescent``."""
    parser.add_argument(
        "problem",
        nargs="?",
        default=None,
        help="regression problem file (kind = 'regression'); written first with --synth",
    )
    parser.add_argument(
        "--preset",
        choices=("paper",),
        default=None,
        help="run the paper's set-ups (Figs. 1-3, eps grids, Adam) instead of one PROBLEM",
    )
    parser.add_argument(
        "--quick", action="store_true", help="with --preset: short horizons (about a minute)"
    )
    parser.add_argument(
        "--no-figures", dest="figures", action="store_false", help="write no PNG files"
    )
    parser.add_argument(
        "--synth",
        choices=("block", "gaussian"),
        default=None,
        help="write seeded data to PROBLEM first",
    )
    parser.add_argument("--N", type=int, default=5, help="rows of --synth data (default 5)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: 1 for small batches)"
    )
    parser.add_argument("--D", type=int, default=None, help="columns of --synth data (default 2N)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --synth data (default 0)")
    parser.add_argument(
        "--rules", default="sign", help="comma-separated: gd, sign, adam (default sign)"
    )
    parser.add_argument("--eps", default="1e-3,1e-2,0.025", help="comma-separated eps > 0")
    parser.add_argument(
        "--alpha", default="0.1", help="comma-separated initialization scales alpha > 0"
    )
    parser.add_argument("--lr", default="1e-3", help="comma-separated step sizes > 0")
    parser.add_argument(
        "--steps", type=int, default=100_000, help="steps per trajectory (default 1e5)"
    )
    parser.add_argument("--betas", default="0.9,0.999", help="Adam's betas (rule adam only)")
    parser.add_argument(
        "--depth",
        type=int,
        default=2,
        help="H in beta = w+^H - w-^H (default 2, the paper's); the eps -> 0 reference becomes "
        "min ||beta||_(2-1/H); E, delta-KKT and the gd limit Q_alpha are depth-2 facts",
    )
    parser.add_argument("-o", "--output", required=True, help="run directory to write")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing run directory"
    )


def _floats(text: str, option: str) -> tuple[float, ...]:
    from certify.errors import MdcertError

    try:
        vals = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise MdcertError(f"{option} must be comma-separated numbers, got {text!r}") from None
    return vals


def _study(options: Mapping[str, Any]):
    """The `SignConfig` of the options, its grid validated for every rule."""
    from certify.errors import MdcertError
    from experiments.diagnet.engine import Rule
    from experiments.diagnet.study import SignConfig

    rules_text, betas_text = options.get("rules", "sign"), options.get("betas", "0.9,0.999")
    try:
        rules = tuple(Rule(r.strip()) for r in rules_text.split(","))
    except ValueError:
        raise MdcertError(
            f"--rules must be comma-separated from gd, sign, adam; got {rules_text!r}"
        ) from None
    betas = _floats(betas_text, "--betas")
    if len(betas) != 2:
        raise MdcertError(f"--betas needs two numbers, got {betas_text!r}")
    steps, depth = options.get("steps", 100_000), options.get("depth", 2)
    if not isinstance(depth, int) or not 2 <= depth <= 64:
        raise MdcertError(f"--depth must be an integer in 2..64, got {depth!r}")
    study = SignConfig(
        rules=rules,
        eps=_floats(options.get("eps", "1e-3,1e-2,0.025"), "--eps"),
        alpha=_floats(options.get("alpha", "0.1"), "--alpha"),
        lr=_floats(options.get("lr", "1e-3"), "--lr"),
        steps=steps,
        record_every=max(1, steps // 100),
        betas=betas,
        threads=options.get("threads"),
        depth=depth,
    )
    for rule in rules:
        study.diag(rule)  # validates the grid before anything is written
    return study


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated run: the problem (or the seeded data to write there), the study's `SignConfig`
    (None with ``--preset paper``), the run directory and whether it may replace one."""

    problem: str | None = None
    preset: str | None = None
    quick: bool = False
    study: Any = None
    figures: bool = True
    synth: str | None = None
    N: int = 5
    D: int | None = None
    seed: int = 0
    output: str
    overwrite: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate every option and the run directory (one line each, before any work)."""
        from certify.errors import MdcertError
        from experiments.runtime.outputs import check_output_dir, check_output_file

        problem, synth, output = options.get("problem"), options.get("synth"), options["output"]
        preset, quick, overwrite = (
            options.get("preset"),
            bool(options.get("quick")),
            bool(options.get("overwrite")),
        )
        common = dict(
            figures=bool(options.get("figures", True)), output=output, overwrite=overwrite
        )
        if preset is not None:
            from experiments.diagnet.preset import PAPER_KIND

            given = [
                opt for opt, val in (("PROBLEM", problem), ("--synth", synth)) if val is not None
            ]
            if given:
                raise MdcertError(f"--preset paper makes its own data; drop {', '.join(given)}")
            out = Path(output)
            if not overwrite and out.is_dir() and (out / "summary.json").is_file():
                raise MdcertError(
                    f"run directory {str(out)!r} holds a finished --preset paper run; --overwrite "
                    "rewrites it and reuses its finished parts (same config), or choose another -o"
                )
            check_output_dir(output, option="-o", overwrite=overwrite, kind=PAPER_KIND)
            return cls(preset=preset, quick=quick, **common)
        if quick:
            raise MdcertError("--quick applies only to --preset paper")
        if problem is None:
            raise MdcertError(
                "give a PROBLEM file (or --synth block|gaussian to write one), or --preset paper"
            )
        threads = options.get("threads")
        if threads is not None and not 1 <= threads <= 1024:
            raise MdcertError(f"--threads must be in 1..1024, got {threads}")
        study = _study(options)
        check_output_dir(
            output,
            option="-o",
            overwrite=overwrite,
            kind="signdescent",
            inputs={"the problem file": problem},
        )
        N, D = options.get("N", 5), options.get("D")
        if synth is not None:
            if not (1 <= N <= 10**4 and (D is None or 1 <= D <= 10**6)):
                raise MdcertError("--N must be in 1..1e4 and --D in 1..1e6")
            check_output_file(problem, option="PROBLEM", suffixes=(".npz", ".json"))
        return cls(
            problem=problem,
            study=study,
            synth=synth,
            N=N,
            D=D,
            seed=options.get("seed", 0),
            **common,
        )


@dataclass(frozen=True, kw_only=True)
class Result:
    """The study's `SignResult` (None for the preset, whose directory is already written) and the
    warnings about data outside the paper's setting."""

    config: Config
    study: Any = None
    warnings: tuple[str, ...] = ()
    exit_code: int = 0

    def write(self, out: str | None = None) -> None:
        """The run directory to ``out`` (default: the config's ``-o``), complete or not at all."""
        from experiments.runtime.outputs import run_dir

        if self.study is None:
            return
        out = self.config.output if out is None else out
        with run_dir(out, kind="signdescent", overwrite=self.config.overwrite) as tmp:
            self.study.write(tmp, figures=self.config.figures)

    def lines(self, width: int) -> list[str]:
        """One line per trajectory and the wall times (after `write` to the config's ``-o``)."""
        cfg = self.config
        if self.study is None:
            return [f"wrote {cfg.output}/report.md, summary.json, parts/ and figures"]
        lines = (
            []
            if cfg.synth is None
            else [f"wrote {cfg.problem}: {cfg.synth} regression data N={cfg.N} seed={cfg.seed}"]
        )
        s = self.study.seconds
        return (
            lines
            + self.study.lines()
            + [
                f"wall: references {s['references']} s, training {s['training']} s, certified facts "
                f"{s['certified_facts']} s; wrote {cfg.output}/ (summary.json, paths.npz, figures)"
            ]
        )

    def messages(self) -> list[str]:
        """The warnings for stderr (data outside the paper's setting) not already given to `run`'s ``warn``."""
        return list(self.warnings)


def run(config: Config, *, warn: Callable[[str], None] | None = None) -> Result:
    """The preset (its directory written and resumable as it runs, progress on stdout), or: write the
    --synth data, load the problem, train and certify (`run_signdescent`). The warnings about the
    data (once the references are certified, before training) go to ``warn`` as they come, one
    ``warning: ...`` line each, when it is given; else they are kept in `Result.messages`."""
    if config.preset is not None:
        from experiments.diagnet.preset import run_paper

        run_paper(config.output, quick=config.quick, overwrite=config.overwrite)
        return Result(config=config)
    from certify.regression import load_regression, regression_problem
    from experiments.diagnet.study import run_signdescent

    if config.synth is not None:
        regression_problem(config.synth, N=config.N, D=config.D, seed=config.seed).save(
            config.problem
        )
    warnings: list[str] = []

    def collect(line: str) -> None:
        (warnings.append if warn is None else warn)(f"warning: {line}")

    study = run_signdescent(load_regression(config.problem), config.study, warn=collect)
    return Result(config=config, study=study, warnings=tuple(warnings))
