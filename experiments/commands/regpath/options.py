"""``mdcert regpath``'s options: `add_arguments` (the one schema) and the frozen `Config` that
`Config.from_options` validates before any work (one `MdcertError` line per bad option, today's
messages; the run directory ``-o`` is checked last)."""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from certify.errors import MdcertError

__all__ = ["JOINT_EXAMPLE", "KIND", "MAX_MD_STEPS", "MAX_STARTS", "Config", "add_arguments"]

#: the built-in name of the paper's joint-training example (n=2, T=3, d=2)
JOINT_EXAMPLE = "joint-example"
#: the most random starts (chains) per radius
MAX_STARTS = 1000
#: the most joint mirror-descent steps
MAX_MD_STEPS = 10**9
#: the run directory's kind (its ``.mdcert-run`` marker) and ``summary.json``'s ``kind``
KIND = "regpath"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert regpath`` (the CLI and the sweep build their parsers from it)."""
    add = parser.add_argument
    add(
        "problem",
        metavar="PROBLEM",
        help=f"problem file (.npz/.json from 'mdcert synth') or '{JOINT_EXAMPLE}' (the paper's "
        f"joint example)",
    )
    add("--p", required=True, help="l_p exponent, exact decimal or num/den (e.g. 1.75 or 7/4)")
    add(
        "--radii",
        default="10:1000:9",
        metavar="START:STOP:COUNT",
        help="geometric grid of radii R (default 10:1000:9)",
    )
    add(
        "--starts",
        type=int,
        default=3,
        help="random starts (chains) besides the SVM, uniform-dual and warm starts (default 3)",
    )
    add("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    add(
        "--alpha",
        default=None,
        help="reference tokens: 'opt' (globally optimal) or comma-separated indices "
        "(default: the problem's stored alpha, else 'opt')",
    )
    add("--no-svm-start", action="store_true", help="do not start from the reference SVM direction")
    add(
        "--no-dual-start",
        action="store_true",
        help="do not start from the SVM-free direction phi_q(A^T 1) (uniform dual multipliers)",
    )
    add(
        "--loss",
        default="logistic",
        choices=["logistic", "exponential"],
        help="loss (default logistic)",
    )
    add(
        "--digits",
        type=int,
        default=30,
        help="precision requested from the certified SVM solve (default 30)",
    )
    add("--joint", action="store_true", help="joint path over (W, v) with ||v||_p <= r(R)")
    add(
        "--r-of-R",
        dest="r_of_R",
        default=None,
        metavar="EXPR",
        help="decoder radius as a function of R for --joint, e.g. 'R', 'sqrt(R)', '2*log(R)+1'",
    )
    add(
        "--md-steps",
        type=int,
        default=0,
        help="with --joint: also run the joint mirror-descent path (W(0)=v(0)=0, normalized steps) "
        "for this many steps",
    )
    add(
        "--md-lr",
        type=float,
        default=0.1,
        help="step size of the joint mirror-descent path (default 0.1)",
    )
    add("--overwrite", action="store_true", help="replace an existing non-empty run directory")
    add(
        "-o",
        "--output",
        required=True,
        metavar="RUN",
        help="run directory to write (written to a temporary directory, renamed when complete)",
    )


#: option (argparse dest) -> its flag in messages
_FLAGS = {
    "problem": "PROBLEM",
    "p": "--p",
    "radii": "--radii",
    "starts": "--starts",
    "seed": "--seed",
    "alpha": "--alpha",
    "no_svm_start": "--no-svm-start",
    "no_dual_start": "--no-dual-start",
    "loss": "--loss",
    "digits": "--digits",
    "joint": "--joint",
    "r_of_R": "--r-of-R",
    "md_steps": "--md-steps",
    "md_lr": "--md-lr",
    "overwrite": "--overwrite",
    "output": "-o",
}


@functools.lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    """Each option's default, read from `add_arguments` (the one schema)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return {dest: parser.get_default(dest) for dest in _FLAGS}


def _integer(value: Any, dest: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MdcertError(f"invalid {_FLAGS[dest]} {value!r}; give an integer")
    return value


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert regpath`` run (build it with `from_options`).

    Attributes:
        problem: problem file, or `JOINT_EXAMPLE`.
        p: the exact exponent; p_text: as given (recorded in summary.json's ``command``).
        radii: the geometric grid of R; radii_text: as given (``START:STOP:COUNT``).
        starts, seed: random chains per radius and their seed.
        alpha: reference tokens as given (None: the problem's stored alpha, else 'opt').
        svm_start, dual_start: whether the SVM and uniform-dual directions are starts.
        loss: "logistic" or "exponential"; digits: precision of the certified SVM solve.
        joint: the joint (W, v) path; r_of_R: its decoder radius r(R) (None unless joint).
        md_steps, md_lr: the joint mirror-descent path (0 steps: none) and its step size.
        output: the run directory; overwrite: whether it may replace a regpath run there.
    """

    problem: str
    p: Fraction
    p_text: str
    radii: tuple[float, ...]
    radii_text: str
    starts: int
    seed: int
    alpha: str | None
    svm_start: bool
    dual_start: bool
    loss: str
    digits: int
    joint: bool
    r_of_R: str | None
    md_steps: int
    md_lr: float
    output: Path
    overwrite: bool

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate the options (argparse dests, e.g. ``vars(args)``; a missing one takes its
        default, other keys are ignored) before any work, the run directory ``-o`` last.

        Raises:
            MdcertError: one line naming the option and the fix.
        """
        from certify import parse_p
        from experiments.runtime.outputs import check_output_dir, check_seed
        from experiments.regpath.grid import parse_radii

        o = {**_defaults(), **{k: v for k, v in options.items() if k in _FLAGS}}
        for dest in ("problem", "p", "output"):
            if o[dest] is None:
                raise MdcertError(f"missing {_FLAGS[dest]}; see 'mdcert regpath --help'")
        p = parse_p(o["p"], name="--p")
        radii = parse_radii(o["radii"])
        seed = check_seed(_integer(o["seed"], "seed"))
        starts, digits = _integer(o["starts"], "starts"), _integer(o["digits"], "digits")
        md_steps, md_lr, joint = _integer(o["md_steps"], "md_steps"), o["md_lr"], bool(o["joint"])
        if not 0 <= starts <= MAX_STARTS:
            raise MdcertError(f"invalid --starts {starts}; give a number in 0..{MAX_STARTS}")
        if starts == 0 and o["no_svm_start"] and o["no_dual_start"]:
            raise MdcertError(
                "no starts: use --starts >= 1 or drop --no-svm-start / --no-dual-start"
            )
        if digits < 5:
            raise MdcertError(f"invalid --digits {digits}; use at least 5")
        if md_steps < 0 or (md_steps and not joint):
            raise MdcertError("--md-steps needs --joint and a number >= 0")
        if md_steps > MAX_MD_STEPS:
            raise MdcertError(
                f"invalid --md-steps {md_steps}; give at most {MAX_MD_STEPS:.0e} steps"
            )
        if not (isinstance(md_lr, (int, float)) and md_lr > 0 and math.isfinite(md_lr)):
            raise MdcertError(f"invalid --md-lr {md_lr}; give a positive step size")
        if o["loss"] not in ("logistic", "exponential"):
            raise MdcertError(f"invalid --loss {o['loss']!r}; use logistic or exponential")
        if joint:
            if not o["r_of_R"]:
                raise MdcertError(
                    "--joint needs --r-of-R EXPR (the decoder radius as a function "
                    "of R, e.g. 'R' or 'sqrt(R)')"
                )
            from experiments.regpath.radius_function import parse_radius_function

            parse_radius_function(o["r_of_R"]).values(radii)
        elif o["r_of_R"]:
            raise MdcertError("--r-of-R is only used with --joint")
        problem = str(o["problem"])
        output = check_output_dir(
            o["output"],
            option="-o",
            overwrite=bool(o["overwrite"]),
            kind=KIND,
            inputs={"the problem file": None if problem == JOINT_EXAMPLE else problem},
        )
        return cls(
            problem=problem,
            p=p,
            p_text=str(o["p"]),
            radii=tuple(float(r) for r in radii),
            radii_text=str(o["radii"]),
            starts=starts,
            seed=seed,
            alpha=o["alpha"],
            svm_start=not o["no_svm_start"],
            dual_start=not o["no_dual_start"],
            loss=o["loss"],
            digits=digits,
            joint=joint,
            r_of_R=o["r_of_R"] if joint else None,
            md_steps=md_steps,
            md_lr=float(md_lr),
            output=output,
            overwrite=bool(o["overwrite"]),
        )
