"""``mdcert demo`` in the application layer (`experiments.commands`): the main job end to end on a
built-in example (the paper-size synthetic problem).

Each stage runs the same code path as its own command (``synth``, ``certify``, ``verify``, ``check``,
``paths``, ``plot``) through the ``runner`` the caller passes (the CLI passes its ``main``: this layer
never imports the CLI), so the demo is also a smoke test of the whole toolkit. The demo narrates as it
goes: each stage's header, its own output and its one-line conclusion are printed while it runs (that
is the demo); `Result.lines` is the final summary. The check stage states what its verdicts are about:
the region's mu and R are inputs, and the data quantities they depend on are printed
(docs/theory.md section 5.4). With ``-o DIR`` every output, figures included, is kept and named (a run
directory of kind ``demo``); without it they live in a temporary directory that is removed.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from experiments.commands.demo_facts import (
    REGION_QUANTITIES,
    cert_facts,
    check_facts,
    near_svm_init,
    paths_facts,
    region_quantities,
    said,
)

__all__ = ["Config", "Result", "Runner", "REGION_QUANTITIES", "add_arguments", "run"]

#: runs one ``mdcert ARGV`` command line and returns its exit code (the CLI's ``main``)
Runner = Callable[[Sequence[str]], int]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert demo``."""
    parser.add_argument(
        "--quick", action="store_true", help="a short variant (fewer trials and steps; used by CI)"
    )
    parser.add_argument(
        "--seed", type=int, default=7, help="seed of the synthetic problem (default 7)"
    )
    parser.add_argument(
        "--p", default="1.75", help="exponent of the certified SVM and the check (default 1.75)"
    )
    parser.add_argument(
        "-o",
        "--out",
        default=None,
        help="keep every output in this new directory (default: a temporary directory, removed)",
    )


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated demo: quick or full, the seed, p (as typed: it is passed on to the stages) and the
    new output directory (None: a temporary one)."""

    quick: bool = False
    seed: int = 7
    p: str = "1.75"
    out: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate p (the demo trains a float64 path at it), the seed and ``-o`` (one line each)."""
        from certify.errors import MdcertError
        from certify.exact import parse_p
        from experiments.runtime.outputs import check_output_dir, check_seed
        from experiments.paths.config import check_float_p

        p, seed, out = options.get("p", "1.75"), options.get("seed", 7), options.get("out")
        check_float_p(parse_p(p, name="--p"), str(p))
        check_seed(seed)
        if out is not None:
            if not str(out).strip():
                raise MdcertError("-o is empty; give a new directory name")
            if Path(out).exists():
                raise MdcertError(f"output directory {out!r} already exists; choose a new one")
            check_output_dir(out, option="-o", overwrite=False)
        return cls(quick=bool(options.get("quick", False)), seed=seed, p=p, out=out)


@dataclass(frozen=True, kw_only=True)
class Result:
    """A finished (or stopped) demo: the summary, the time, and the failed stage's line if any."""

    config: Config
    summary: tuple[str, ...] = ()
    seconds: float = 0.0
    failure: str | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.failure is None else 1

    def write(self, out: str | None = None) -> None:
        """Nothing left to write: the stages wrote every output and `run` the run directory's marker."""

    def lines(self, width: int) -> list[str]:
        """The final summary (none when a stage failed)."""
        if self.failure is not None:
            return []
        where = (
            f"; outputs in {Path(self.config.out)}"
            if self.config.out is not None
            else " (outputs were temporary; use -o DIR to keep them)"
        )
        return [
            "",
            "== summary (proved: exact or ball arithmetic; measured: float64 experiments)",
            *self.summary,
            f"demo finished in {self.seconds:.1f} s" + where,
        ]

    def messages(self) -> list[str]:
        """The failed stage's line for stderr (none when every stage ran)."""
        return [] if self.failure is None else [self.failure]


def _stage(title: str, argv: list[str], *, runner: Runner) -> None:
    print(f"\n== {title}\n$ mdcert {' '.join(argv)}", flush=True)
    rc = runner(argv)
    # certify: 0 certified; check: 0 ran. Anything else stops the demo with that stage named.
    if rc != 0:
        raise RuntimeError(f"demo stage '{title}' exited with code {rc}")


def _stages(config: Config, out: Path, *, temporary: bool, runner: Runner) -> list[str]:
    """Run the six stages in ``out``; the summary lines (RuntimeError names a failed stage)."""
    problem, cert, report = (
        str(out / "problem.npz"),
        str(out / "cert.json"),
        str(out / "check.json"),
    )
    trials, steps = ("8", "300,300,1000") if config.quick else ("30", "1500,2000,5000")
    summary: list[str] = []
    _stage(
        "1. synthesize the paper-size problem (n=6, T=8, d=10)",
        ["synth", "--seed", str(config.seed), "-o", problem],
        runner=runner,
    )
    said(
        1,
        "wrote the paper's synthetic problem (n=6, T=8, d=10) and its globally optimal tokens",
        "every later stage works on these exact float64 numbers",
        summary,
    )
    _stage(
        f"2. certify the l_p attention SVM of the globally optimal tokens (p = {config.p})",
        ["certify", problem, "--p", config.p, "--alpha", "opt", "--digits", "60", "-o", cert],
        runner=runner,
    )
    said(
        2,
        cert_facts(cert),
        "the SVM direction is the limit Theorem 10 predicts, so every distance "
        "measured later is to a proven target, not to a solver's guess",
        summary,
    )
    _stage(
        "3. re-check the certificate independently from the data alone",
        ["verify", problem, cert],
        runner=runner,
    )
    said(
        3,
        "the independent checker (no solver) re-proved every claim of the certificate from the data",
        "a bug in the solver or a tampered file cannot pass as proved",
        summary,
    )
    init = near_svm_init(cert, out / "W0.npy", seed=config.seed)
    _stage(
        "4. check the hypotheses of Theorem 10 (local directional convergence) on an initialization\n"
        "   near the certified SVM direction, along the mirror-descent path the command runs",
        [
            "check",
            problem,
            "--p",
            config.p,
            "--theorem",
            "10",
            "--alpha",
            "opt",
            "--init",
            init,
            "--lr",
            "0.1",
            "--mu",
            "0.1",
            "--R",
            "1",
            "--steps",
            "300" if config.quick else "2000",
            "--json",
            report,
        ],
        runner=runner,
    )
    said(
        4,
        check_facts(report),
        "the verdicts concern this path and the given mu = 0.1, R = 1 (inputs, "
        "never derived: another mu or R can flip init_in_region); the conclusion itself is measured in "
        "stage 5, not proved",
        summary,
    )
    quantities = region_quantities(report)
    if quantities:
        print(
            "   data quantities the admissible mu and R depend on (docs/theory.md 5.4):\n"
            + "\n".join(quantities),
            flush=True,
        )
    _stage(
        f"5. batched mirror-descent paths ({trials} trials x p in 1.75, 2, 3; normalized steps, lr 0.1)",
        [
            "paths",
            "--trials",
            trials,
            "--p",
            "1.75,2,3",
            "--steps",
            steps,
            "--lr",
            "0.1",
            "--normalize",
            "--seed",
            str(config.seed),
            "--device",
            "cpu",
            "--progress",
            "off",
            "-o",
            str(out / "paths"),
        ],
        runner=runner,
    )
    said(
        5,
        paths_facts(out / "paths"),
        "the decay of D_psi to the certified direction is the rate "
        "the theory is about; 'inconclusive' means this run cannot tell the laws apart (the paths "
        "output says what a verdict would need)",
        summary,
    )
    _stage("6. figures", ["plot", str(out / "paths")], runner=runner)
    figures = sorted((out / "paths").glob("*.png"))
    where = (
        f"in {out / 'paths'} ({', '.join(f.name for f in figures)})"
        if not temporary
        else "in the temporary directory, removed at the end (rerun with -o DIR to keep them)"
    )
    said(
        6,
        f"drew {len(figures)} figures of the paths run {where}",
        "they show the measured rates against both fitted laws, with their bands",
        summary,
    )
    return summary


def run(config: Config, *, runner: Runner) -> Result:
    """Run the demo's stages through ``runner`` (narrated on stdout as they run). A failed stage stops
    the demo (`Result.failure`); a failed or interrupted demo leaves no half-filled ``-o`` directory,
    a temporary one is always removed, a completed ``-o`` directory gets its ``demo`` marker."""
    import shutil
    import tempfile

    from experiments.runtime.outputs import write_marker

    start = time.perf_counter()
    tmp = tempfile.TemporaryDirectory(prefix="mdcert-demo-") if config.out is None else None
    out = Path(tmp.name) if tmp is not None else Path(config.out)
    if tmp is None:
        out.mkdir(parents=True)
    completed = False
    try:
        try:
            summary = _stages(config, out, temporary=tmp is not None, runner=runner)
        except RuntimeError as exc:
            failure = f"mdcert demo: {exc}" + (
                "" if tmp is not None else f"; removed the partial {str(out)!r}"
            )
            return Result(config=config, failure=failure)
        seconds = time.perf_counter() - start
        if tmp is None:
            write_marker(out, "demo")  # an mdcert run directory of kind "demo"
        completed = True
        return Result(config=config, summary=tuple(summary), seconds=seconds)
    finally:
        if tmp is not None:
            tmp.cleanup()
        elif not completed:  # a failed or interrupted demo leaves no half-filled -o directory
            shutil.rmtree(out, ignore_errors=True)
