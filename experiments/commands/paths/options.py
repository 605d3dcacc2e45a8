"""The options of ``mdcert paths``: its argparse schema (`add_arguments`) and the frozen `Config`
validated from them (`Config.from_options`) before any work starts; one-line errors."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from certify.errors import MdcertError
from experiments.runtime.problemkind import is_classification_file

__all__ = ["DEFAULTS", "add_arguments", "Config"]

#: the value of each option that a mapping given to `Config.from_options` may leave out
DEFAULTS: dict[str, Any] = {
    "problems": [],
    "init": None,
    "init_std": None,
    "trials": None,
    "p": "1.75,2,3",
    "steps": "1500,2000,20000",
    "lr": "0.1",
    "normalize": False,
    "inits": None,
    "seed": 0,
    "device": "auto",
    "dtype": "float64",
    "cross": False,
    "train_decoder": False,
    "decoder_lr": None,
    "records": 64,
    "spacing": "auto",
    "tail": 0.01,
    "average": "geometric",
    "digits": 30,
    "workers": None,
    "no_certify": False,
    "n": None,
    "T": None,
    "d": None,
    "progress": "auto",
    "overwrite": False,
}
_CHOICES = {
    "dtype": ("float64", "float32"),
    "spacing": ("auto", "log", "linear"),
    "average": ("geometric", "arithmetic"),
    "progress": ("auto", "on", "off"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert paths`` (the one schema: the CLI and the sweep build their parser here)."""
    D = DEFAULTS
    add = parser.add_argument
    add(
        "problems",
        nargs="*",
        metavar="PROBLEM",
        help="problem files (.npz/.json, equal n and d; shorter T padded) to run instead of the "
        "synthetic trials; each gets its own certified SVM directions",
    )
    add(
        "--init",
        default=None,
        metavar="W0.npy",
        help="initializations: a .npy of shape (d, d) or (K, d, d), used for every dataset",
    )
    add(
        "--init-std",
        type=float,
        default=None,
        dest="init_std",
        help="random initializations with N(0, S^2) entries (default S = 1)",
    )
    add("--trials", type=int, default=None, help="synthetic datasets (trials), default 100")
    add("--p", default=D["p"], help="comma-separated exponents p > 1 (default 1.75,2,3)")
    add(
        "--steps",
        default=D["steps"],
        help="steps per p: one value, or one per p (default 1500,2000,20000)",
    )
    add(
        "--lr",
        default=D["lr"],
        help="comma-separated step sizes, each run with every p (default 0.1)",
    )
    add("--normalize", action="store_true", help="normalized steps G/||G||_q (the paper's setting)")
    add("--inits", type=int, default=None, help="random initializations per dataset (default 1)")
    add("--seed", type=int, default=D["seed"], help="seed of data and initializations (default 0)")
    add("--device", default=D["device"], help="auto | cpu | cuda (default auto)")
    add("--dtype", default=D["dtype"], choices=list(_CHOICES["dtype"]), help="default float64")
    add("--cross", action="store_true", help="also the cross grid: SVM of exponent q vs path of p")
    add(
        "--train-decoder", action="store_true", help="train v jointly (default: fixed unit decoder)"
    )
    add("--decoder-lr", type=float, default=None, help="decoder step size (default: --lr)")
    add("--records", type=int, default=D["records"], help="records per trajectory (default 64)")
    add(
        "--spacing",
        choices=list(_CHOICES["spacing"]),
        default=D["spacing"],
        help="record steps: log-spaced, evenly spaced, or auto (default: log-spaced when the run "
        "is longer than 10x --records, else evenly spaced)",
    )
    add(
        "--tail",
        type=float,
        default=D["tail"],
        help="rate and norm fits use steps k >= TAIL * max k (default 0.01: the last two decades; "
        "the last third of that window, in log k, is held out to choose the law)",
    )
    add(
        "--average",
        choices=list(_CHOICES["average"]),
        default=D["average"],
        help="curve the rate laws are fitted to: geometric mean of D over trajectories (default, the "
        "typical trajectory) or arithmetic mean (what the paper plots; the slowest trajectory "
        "dominates it)",
    )
    add(
        "--digits",
        type=int,
        default=D["digits"],
        help="initial digits of the SVM certificates (default 30)",
    )
    add(
        "--workers",
        type=int,
        default=None,
        help="certification processes (default: 2 when 2+ CPUs; 0 = in-process)",
    )
    add("--no-certify", action="store_true", help="skip SVM certificates and Bregman curves")
    add("--n", type=int, default=None, help="examples per synthetic dataset (default 6)")
    add("--T", type=int, default=None, help="tokens per example, synthetic (default 8)")
    add("--d", type=int, default=None, help="dimension, synthetic (default 10)")
    add(
        "--progress",
        choices=list(_CHOICES["progress"]),
        default=D["progress"],
        help="progress bar on stderr (auto: only on a terminal)",
    )
    add("--overwrite", action="store_true", help="replace an existing run directory")
    add("-o", "--out", required=True, help="run directory to write")


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert paths`` run (build it with `from_options`).

    Attributes:
        problems: problem files (empty: the seeded synthetic trials).
        init, init_std: a ``--init`` file of W(0), or the std of random ones (None: 1).
        trials, n, T, d: datasets and their sizes; None where the problem files give them.
        inits: initializations per dataset; None where the ``--init`` file gives them.
        p, p_text: the exponents (exact) and their texts; steps: the step count of each p.
        lr: the step sizes (each run with every p); decoder_lr: of the decoder (None: lr).
        normalize, train_decoder, cross, certify: the switches of the command line.
        seed, device (normalized name), dtype, records, spacing, tail, average, digits, workers
        (resolved count), progress ("auto", "on", "off"), out, overwrite: as the options say.
        argv: the command line recorded in summary.json (not part of the comparison).
    """

    problems: tuple[str, ...] = ()
    init: str | None = None
    init_std: float | None = None
    trials: int | None
    n: int | None
    T: int | None
    d: int | None
    inits: int | None
    p: tuple[Fraction, ...]
    p_text: tuple[str, ...]
    steps: tuple[int, ...]
    lr: tuple[float, ...]
    normalize: bool = False
    train_decoder: bool = False
    decoder_lr: float | None = None
    cross: bool = False
    certify: bool = True
    seed: int = 0
    device: str = "auto"
    dtype: str = "float64"
    records: int = 64
    spacing: str = "auto"
    tail: float = 0.01
    average: str = "geometric"
    digits: int = 30
    workers: int = 0
    progress: str = "auto"
    out: str
    overwrite: bool = False
    argv: tuple[str, ...] = field(default=(), compare=False)

    @property
    def show_progress(self) -> bool | None:
        """The progress bars' switch: None on a terminal only, True / False forced."""
        return {"auto": None, "on": True, "off": False}[self.progress]

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Any:
        """Validate ``options`` (an argparse namespace's ``vars``, or any mapping with the names of
        `DEFAULTS` and ``out``; ``argv`` optional) before any work: the run directory against the
        inputs, the data and init options, the grid, the sizes and their memory, the device (a CUDA
        device where CUDA is missing). Problem and ``--init`` files are read by `run`. On a
        classification problem file it returns the `experiments.commands.paths.linear.LinearConfig`
        of its p-GD paths instead.

        Raises:
            MdcertError: one line naming the option and the fix.
        """
        from experiments.runtime.outputs import check_outside
        from experiments.paths.config import parse_config
        from experiments.paths.inputs import check_input_options

        o = {**DEFAULTS, **options}
        if o.get("out") is None:
            raise MdcertError("mdcert paths needs a run directory to write (-o)")
        for name, allowed in _CHOICES.items():
            if o[name] not in allowed:
                raise MdcertError(f"--{name} must be one of {', '.join(allowed)}, got {o[name]!r}")
        problems = tuple(str(x) for x in o["problems"] or ())
        kinds = [is_classification_file(x) for x in problems]
        if any(kinds):  # the p-GD paths of a linear classifier (mdcert pgd's work)
            from experiments.commands.paths.linear import linear_config

            return linear_config(o, problems, kinds, DEFAULTS)
        check_outside(
            o["out"],
            {f"the problem file {x!r}": x for x in problems} | {"the --init file": o["init"]},
            option="-o",
        )
        sizes = check_input_options(
            problems=problems,
            init=o["init"],
            init_std=o["init_std"],
            inits=o["inits"],
            trials=o["trials"],
            n=o["n"],
            T=o["T"],
            d=o["d"],
        )
        cfg = parse_config(
            p=o["p"],
            steps=o["steps"],
            lr=o["lr"],
            **sizes,
            records=o["records"],
            tail=o["tail"],
            digits=o["digits"],
            decoder_lr=o["decoder_lr"],
            seed=o["seed"],
            device=o["device"],
            workers=o["workers"],
        )
        if cfg["device"].startswith("cuda"):  # a CUDA device where CUDA is missing
            from experiments.paths.engine import resolve_device

            resolve_device(cfg["device"])
        return cls(
            problems=problems,
            init=o["init"],
            init_std=o["init_std"],
            **sizes,
            p=tuple(cfg["p"]),
            p_text=tuple(cfg["p_text"]),
            steps=tuple(cfg["steps"]),
            lr=tuple(cfg["lr"]),
            normalize=bool(o["normalize"]),
            train_decoder=bool(o["train_decoder"]),
            decoder_lr=o["decoder_lr"],
            cross=bool(o["cross"]),
            certify=not o["no_certify"],
            seed=o["seed"],
            device=cfg["device"],
            dtype=o["dtype"],
            records=o["records"],
            spacing=o["spacing"],
            tail=o["tail"],
            average=o["average"],
            digits=o["digits"],
            workers=cfg["workers"],
            progress=o["progress"],
            out=str(o["out"]),
            overwrite=bool(o["overwrite"]),
            argv=tuple(o.get("argv") or ()),
        )
