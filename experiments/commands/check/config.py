"""The options of ``mdcert check`` (`add_arguments`, the one schema) and their validation
(`Config.from_options`): every check on the options, with its one-line message, before any work.

``--run DIR --trajectory K`` is resolved here: the run's p, step size, step count and step rule
become the config's, and a setting given on the command line as well is refused (one source for
each), so that a config says which path is checked whatever its source.
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

__all__ = ["FROM_TRAINING", "TRAINING_LOSSES", "DEFAULT_STEPS", "add_arguments", "Config"]

#: the ``--alpha`` value that reads alpha from the final attention of the training path
FROM_TRAINING = "locally-optimal-from-training"
#: the losses the training path (`experiments.model`) supports
TRAINING_LOSSES = ("logistic", "exponential", "linear")
#: mirror-descent steps when neither ``--steps`` nor ``--run`` gives them
DEFAULT_STEPS = 2000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert check`` (the CLI and `experiments.commands.parse` build on it)."""
    parser.add_argument(
        "problem",
        nargs="?",
        default=None,
        help="problem file (.npz or .json, e.g. from 'mdcert synth'); not with --run",
    )
    parser.add_argument(
        "--p",
        default=None,
        help="exponent of the l_p potential, exact decimal or num/den (e.g. 1.75); "
        "required unless --run gives it",
    )
    parser.add_argument(
        "--theorem",
        default="10",
        help="theorem number: 6, 8, 10, 11 or 31 (default 10) on an attention problem, or pgd "
        "(the p-GD result of arXiv:2205.12808) on a classification problem",
    )
    parser.add_argument(
        "--alpha",
        default=None,
        help=f"token indices: 'opt', '{FROM_TRAINING}' (argmax of the final "
        f"attention of the --init/--lr path) or comma-separated indices like "
        f"0,3,1 (default: the problem's alpha, else opt)",
    )
    parser.add_argument(
        "--init", default=None, metavar="W0.npy", help="initial W (d x d float64 .npy)"
    )
    parser.add_argument(
        "--lr",
        default=None,
        help="step size eta of the mirror-descent path (exact decimal, e.g. 0.1)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="mirror-descent steps to run and check (default 2000)",
    )
    parser.add_argument(
        "--normalize",
        action="store_true",
        help="normalized steps G/||G||_q, the rule of 'mdcert paths --normalize' "
        "(default: constant steps); the step-size hypothesis then uses each "
        "step's lr/||G||_q",
    )
    parser.add_argument(
        "--run",
        default=None,
        metavar="DIR",
        help="a 'mdcert paths' run directory: check trajectory --trajectory K of "
        "it (its problem, W(0), p, lr, steps and step rule)",
    )
    parser.add_argument(
        "--trajectory",
        type=int,
        default=None,
        metavar="K",
        help="index of the trajectory in the --run directory (0-based, as in its arrays.npz)",
    )
    parser.add_argument(
        "--mu", default=None, help="Bregman radius of the initialization region (input)"
    )
    parser.add_argument(
        "--R", default=None, help="minimal ||W(0)||_p of the initialization region (input)"
    )
    parser.add_argument(
        "--loss", default="logistic", help="loss name or expression in u (default logistic)"
    )
    parser.add_argument(
        "--segment",
        action="store_true",
        help="also prove convexity of psi - eta L on every whole segment (interval bisection)",
    )
    parser.add_argument(
        "--digits", type=int, default=30, help="digits of the certified SVM solves (default 30)"
    )
    parser.add_argument(
        "--json", default=None, metavar="report.json", help="also write the report as JSON"
    )


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert check``: the texts as given (``p``, ``lr``, ``mu``, ``R``: what the
    JSON report's ``inputs`` records) and their exact values (``p_exact``, ``eta``, ``mu_exact``,
    ``R_exact``). With ``run``, ``p``, ``lr``, ``steps`` and ``normalize`` are the trajectory's.

    Attributes:
        problem: the problem file (None with ``run``); theorem: the theorem's number.
        alpha: ``--alpha`` as given (None: the problem's alpha, else opt).
        init: the W(0) file of the training path (None with ``run`` or without a path).
        steps: mirror-descent steps of the path; normalize: its step rule (normalized steps).
        run, trajectory: the ``mdcert paths`` run and the trajectory index checked (or None).
        loss: loss name or expression; segment: prove convexity on whole segments too.
        digits: digits of the certified SVM solves; json: the JSON report's path (or None).
    """

    problem: str | None
    theorem: str
    p: str
    p_exact: Fraction
    alpha: str | None
    init: str | None
    lr: str | None
    eta: Fraction | None
    steps: int
    normalize: bool
    run: str | None
    trajectory: int | None
    mu: str | None
    mu_exact: Fraction | None
    R: str | None
    R_exact: Fraction | None
    loss: str
    segment: bool
    digits: int
    json: str | None

    @property
    def training(self) -> bool:
        """Whether a mirror-descent path is run (``--init``/``--lr`` or ``--run``)."""
        return self.lr is not None

    @property
    def from_training(self) -> bool:
        """Whether alpha is read from the path's final attention (``--alpha`` `FROM_TRAINING`)."""
        return self.alpha is not None and self.alpha.strip().lower() == FROM_TRAINING

    @property
    def step_rule(self) -> str | None:
        """``"normalized"`` or ``"constant"`` for a path, None without one."""
        return None if self.lr is None else ("normalized" if self.normalize else "constant")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """The config of ``options`` (option name -> value, as `add_arguments` names them; missing
        names take their defaults). Raises `certify.errors.MdcertError` (one line) on bad input."""
        return _validate({**_defaults(), **_known(options)})


def _defaults() -> dict[str, Any]:
    """Each option's default, as `add_arguments` declares it."""
    return dict(_default_items())


@functools.lru_cache(maxsize=1)
def _default_items() -> tuple[tuple[str, Any], ...]:
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return tuple(vars(parser.parse_args([])).items())


def _known(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without argparse's ``command``; a name that is no option of check is refused."""
    names = set(_defaults())
    unknown = sorted(k for k in options if k not in names and k != "command")
    if unknown:
        raise ValueError(
            f"mdcert check has no option {', '.join(unknown)}; its options are "
            f"{', '.join(sorted(names))}"
        )
    return {k: v for k, v in options.items() if k != "command"}


def _text(value: Any) -> str | None:
    """An option's text (paths as strings, numbers as written); None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value) if isinstance(value, float) else str(value)


def _integer(value: Any, option: str) -> int | None:
    """An integer option (argparse's message for anything else); None stays None."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    try:
        if isinstance(value, str):
            return int(value)
    except ValueError:
        pass
    raise ValueError(f"argument {option}: invalid int value: {value!r}")


def _flag(value: Any, option: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{option} is a flag: give True or False, got {value!r}")
    return value


def _from_run(o: dict[str, Any]) -> None:
    """Fill ``o``'s p, lr, steps and normalize from trajectory ``o["trajectory"]`` of the run
    ``o["run"]`` (nothing without ``run``); a setting given as well is refused."""
    from certify.errors import MdcertError
    from experiments.paths.trajectory import load_trajectory

    if o["run"] is None:
        if o["trajectory"] is not None:
            raise MdcertError(
                "--trajectory K needs --run DIR, the 'mdcert paths' run it belongs to"
            )
        return
    if o["trajectory"] is None:
        raise MdcertError(
            "--run DIR needs --trajectory K: the index of the trajectory to check (0-based)"
        )
    given = [
        name
        for name, value in (
            ("a problem file", o["problem"]),
            ("--p", o["p"]),
            ("--init", o["init"]),
            ("--lr", o["lr"]),
            ("--steps", o["steps"]),
        )
        if value is not None
    ]
    if o["normalize"]:
        given.append("--normalize")
    if given:
        raise MdcertError(
            f"--run takes the problem, --p, --init, --lr, --steps and the step rule "
            f"from the run; drop {', '.join(given)}"
        )
    traj = load_trajectory(o["run"], o["trajectory"])
    if traj.steps < 1:
        raise MdcertError(
            f"trajectory {traj.index} of the run took no step (status "
            f"{traj.status}); choose another"
        )
    o.update(
        p=f"{traj.p.numerator}/{traj.p.denominator}",
        lr=traj.lr,
        steps=traj.steps,
        normalize=traj.normalize,
    )


def _validate(o: dict[str, Any]) -> Config:
    """Every check of today's ``mdcert check``, in its order (the first failing one is reported)."""
    from certify.errors import MdcertError
    from certify.exact import parse_nonnegative, parse_p
    from experiments.runtime.outputs import check_distinct, check_output_file
    from theorems.catalogue import get_theorem
    from theorems.loss_parse import parse_loss

    for name in ("problem", "p", "alpha", "init", "lr", "run", "mu", "R", "json"):
        o[name] = _text(o[name])
    o["loss"] = _text(o["loss"])
    o["steps"], o["digits"] = _integer(o["steps"], "--steps"), _integer(o["digits"], "--digits")
    o["trajectory"] = _integer(o["trajectory"], "--trajectory")
    o["normalize"] = _flag(o["normalize"], "--normalize")
    o["segment"] = _flag(o["segment"], "--segment")
    if str(o["theorem"]).strip().lower() == "pgd":  # a classification problem (docs/theory.md 7.6)
        from experiments.commands.check.pgd import pgd_fields

        return Config(**pgd_fields(o, default_steps=DEFAULT_STEPS))
    theorem = get_theorem(o["theorem"])
    _from_run(o)  # --run DIR --trajectory K: fills --p, --lr, --steps and the step rule
    if o["problem"] is None and o["run"] is None:
        raise MdcertError(
            "give a problem file (or --run DIR --trajectory K of a 'mdcert paths' run)"
        )
    if o["p"] is None:
        raise MdcertError("give --p, the exponent of the l_p potential (e.g. --p 1.75)")
    if o["steps"] is None:
        o["steps"] = DEFAULT_STEPS
    if o["json"] is not None:
        check_output_file(o["json"], option="--json")
        run_files = {}
        if o["run"] is not None and Path(o["run"]).is_dir():  # the run's own files are inputs too
            run_files = {
                f"the --run directory's {f.name}": f
                for f in sorted(Path(o["run"]).iterdir())
                if f.is_file()
            }
        check_distinct(
            {"--json": o["json"]},
            {
                "the problem file": o["problem"],
                "the --init file": o["init"],
                "the --run directory": o["run"],
                **run_files,
            },
        )
    p = parse_p(o["p"], name="--p")
    parse_loss(o["loss"])  # refused before any work (the symbolic check runs with the others)
    if not 1 <= o["steps"] <= 10**9:
        raise MdcertError(
            f"invalid --steps {o['steps']}; give a positive number of steps (at most 1e9)"
        )
    if not 1 <= o["digits"] <= 2000:
        raise MdcertError(f"invalid --digits {o['digits']}; give an integer between 1 and 2000")
    if o["run"] is None and (o["init"] is None) != (o["lr"] is None):
        raise MdcertError("give --init and --lr together to run a mirror-descent path (or neither)")
    if o["normalize"] and o["lr"] is None:
        raise MdcertError(
            "--normalize is the step rule of a training path: give --init W0.npy and --lr too"
        )
    if o["lr"] is not None:
        from experiments.paths.config import check_float_p

        check_float_p(p, str(o["p"]))
    from_training = o["alpha"] is not None and o["alpha"].strip().lower() == FROM_TRAINING
    if from_training and o["lr"] is None:
        raise MdcertError(
            f"--alpha {FROM_TRAINING} needs a training path: give --init W0.npy and --lr"
        )
    mu = None if o["mu"] is None else parse_nonnegative(o["mu"], "--mu")
    R = None if o["R"] is None else parse_nonnegative(o["R"], "--R")
    eta = None
    if o["lr"] is not None:
        eta = parse_nonnegative(o["lr"], "--lr")
        if eta <= 0:
            raise MdcertError(f"invalid --lr {o['lr']!r}; the step size must be > 0")
        if not Fraction(1, 10**300) <= eta <= 10**300:
            raise MdcertError(
                f"invalid --lr {o['lr']!r}; the step size must be a float64 in (1e-300, 1e300)"
            )
        if o["loss"].strip().lower() not in TRAINING_LOSSES:
            raise MdcertError(
                f"training supports the losses logistic, exponential, linear; got {o['loss']!r}"
            )
    return Config(
        problem=o["problem"],
        theorem=theorem.number,
        p=o["p"],
        p_exact=p,
        alpha=o["alpha"],
        init=o["init"],
        lr=o["lr"],
        eta=eta,
        steps=o["steps"],
        normalize=o["normalize"],
        run=o["run"],
        trajectory=o["trajectory"],
        mu=o["mu"],
        mu_exact=mu,
        R=o["R"],
        R_exact=R,
        loss=o["loss"],
        segment=o["segment"],
        digits=o["digits"],
        json=o["json"],
    )
