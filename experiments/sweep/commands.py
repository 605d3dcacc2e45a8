"""The built-in sweep kinds: ``certify``, ``check``, ``synth`` and ``paths``, one `JobKind` per command.

Each job runs the command exactly as a user would (docs/theory.md section 4.5 for certify, section 5
for check, section 6 for paths); the parameters and their checks mirror the command's options, so a
SPEC value the command would refuse is refused before any job starts.
"""

from __future__ import annotations

import json
from pathlib import Path

from certify.errors import MdcertError

from experiments.sweep.kinds import JobKind, Param, ParamType

__all__ = ["CERTIFY", "CHECK", "SYNTH", "PATHS"]

FROM_TRAINING = "locally-optimal-from-training"


# ------------------------------------------------------------------------------------ value checks
def check_p(value: object) -> None:
    """An exact exponent p > 1 (`certify.exact.parse_p`)."""
    from certify.exact import parse_p

    parse_p(value, name="grid.p")


def check_p_list(value: object) -> None:
    """A comma-separated list of exponents, each > 1 (``mdcert paths --p``)."""
    parts = [s for s in str(value).split(",")]
    if not parts or any(not s.strip() for s in parts):
        raise MdcertError(f"invalid grid.p {value!r}; give exponents like \"1.75\" or \"1.75,2,3\"")
    for s in parts:
        check_p(s.strip())


def alpha_text(value: object) -> object:
    """A list of token indices becomes the command's ``"0,3,1"``."""
    if isinstance(value, list) and value and all(isinstance(a, int) and not isinstance(a, bool) for a in value):
        return ",".join(str(a) for a in value)
    return value


def _alpha(value: object, named: tuple[str, ...]) -> None:
    text = str(value).strip().lower()
    if text in named:
        return
    parts = text.split(",")
    if not all(s.strip().isdigit() for s in parts):
        raise MdcertError(f"invalid grid.alpha {value!r}; give {' or '.join(repr(n) for n in named)} "
                          f"or token indices like \"0,3,1\" (or [0, 3, 1])")


def check_alpha(value: object) -> None:
    """certify's alpha: opt or comma-separated indices."""
    _alpha(value, ("opt",))


def check_alpha_check(value: object) -> None:
    """check's alpha: opt, locally-optimal-from-training or indices."""
    _alpha(value, ("opt", FROM_TRAINING))


def _int_range(name: str, lo: int, hi: int):
    def check(value: object) -> None:
        if not lo <= int(value) <= hi:  # type: ignore[arg-type]
            raise MdcertError(f"invalid grid.{name} {value!r}; give an integer between {lo} and {hi}")
    return check


def _nonnegative(name: str):
    def check(value: object) -> None:
        if float(value) < 0:  # type: ignore[arg-type]
            raise MdcertError(f"invalid grid.{name} {value!r}; must be >= 0")
    return check


def check_decimal(name: str):
    """A non-negative exact decimal (`certify.exact.parse_nonnegative`)."""
    def check(value: object) -> None:
        from certify.exact import parse_nonnegative

        parse_nonnegative(value, f"grid.{name}")
    return check


def check_theorem(value: object) -> None:
    """A theorem of the catalogue (docs/theory.md section 5.7)."""
    from theorems.catalogue import get_theorem

    get_theorem(value)


# -------------------------------------------------------------------------------------- verdicts
def _json(record: Path, name: str) -> dict:
    with open(record / name) as fh:
        return json.load(fh)


def certify_verdict(record: Path, code: int) -> str:
    """The certificate's status: optimal, infeasible or no_verified_result."""
    return str(_json(record, "cert.json")["status"])


def check_verdict(record: Path, code: int) -> str:
    """The theorem's Kleene AND of its hypotheses: holds, fails or undecided."""
    return str(_json(record, "report.json")["verdict"])


def written(record: Path, code: int) -> str:
    """Kinds without a verdict: the command finished and wrote its output."""
    return "done"


# ----------------------------------------------------------------------------------------- kinds
#: what a certification imports on first use (numpy, scipy, python-flint, the solver)
#: what a certify job imports on its first run (loaded by the worker's start-up, not charged to the job)
_CERTIFY_STACK = ("numpy", "scipy.linalg", "scipy.optimize", "flint", "certify.problem", "certify.svm",
                  "certify.certificate", "certify.export", "certify.check.verified", "certify.workingset",
                  "certify.warmstart", "certify.classify", "certify.info", "certify.loaders", "threadpoolctl",
                  "experiments.runtime.progress")
_DIGITS = Param("digits", ParamType.INT, "--digits", check=_int_range("digits", 1, 2000))

CERTIFY = JobKind(
    name="certify", command="certify",
    params=(Param("problem", ParamType.FILE, None, required=True),
            Param("p", ParamType.DECIMAL, "--p", required=True, check=check_p),
            Param("svm", ParamType.TEXT, "--svm", choices=("attention", "decoder")),
            Param("alpha", ParamType.TEXT, "--alpha", convert=alpha_text, check=check_alpha),
            _DIGITS,
            Param("time_limit", ParamType.FLOAT, "--time-limit", check=_nonnegative("time_limit"))),
    output_flag="-o", output_name="cert.json", ok_codes=frozenset({0, 2, 3}),
    verdict=certify_verdict, verdicts=("optimal", "infeasible", "no_verified_result"), preload=_CERTIFY_STACK)

CHECK = JobKind(
    name="check", command="check",
    params=(Param("problem", ParamType.FILE, None, required=True),
            Param("p", ParamType.DECIMAL, "--p", required=True, check=check_p),
            Param("theorem", ParamType.TEXT, "--theorem", check=check_theorem),
            Param("alpha", ParamType.TEXT, "--alpha", convert=alpha_text, check=check_alpha_check),
            Param("init", ParamType.FILE, "--init"),
            Param("lr", ParamType.DECIMAL, "--lr", check=check_decimal("lr")),
            Param("steps", ParamType.INT, "--steps", check=_int_range("steps", 1, 10 ** 9)),
            Param("mu", ParamType.DECIMAL, "--mu", check=check_decimal("mu")),
            Param("R", ParamType.DECIMAL, "--R", check=check_decimal("R")),
            Param("loss", ParamType.TEXT, "--loss"),
            Param("segment", ParamType.BOOL, "--segment"),
            _DIGITS),
    output_flag="--json", output_name="report.json", ok_codes=frozenset({0}),
    verdict=check_verdict, verdicts=("holds", "fails", "undecided"),
    preload=_CERTIFY_STACK + ("theorems.catalogue", "theorems.loss_parse", "certify.check", "experiments.runtime.terminal",
                              "experiments.paths.trajectory",
                              "sympy", "sympy.combinatorics", "sympy.tensor.tensor", "sympy.sets.setexpr",
                              "sympy.assumptions.wrapper"))  # sympy loads these on its first use

_SIZE = (1, 10 ** 7)
SYNTH = JobKind(
    name="synth", command="synth",
    params=(Param("n", ParamType.INT, "--n", check=_int_range("n", *_SIZE)),
            Param("T", ParamType.INT, "--T", check=_int_range("T", *_SIZE)),
            Param("d", ParamType.INT, "--d", check=_int_range("d", *_SIZE)),
            Param("seed", ParamType.INT, "--seed", check=_int_range("seed", 0, 2 ** 63 - 1))),
    output_flag="-o", output_name="problem.npz", ok_codes=frozenset({0}), verdict=written,
    preload=("numpy", "certify.problem"))

def validate_paths(argv: list[str]) -> None:
    """One ``paths`` job's argv through ``mdcert paths``'s own options and validation
    (`experiments.commands.parse`: the parser, then ``Config.from_options``, which leaves the sizes of
    problem files to the job and refuses a CUDA device where CUDA is missing)."""
    from experiments.commands import parse

    try:
        parse("paths", argv[1:])
    except ValueError as exc:
        raise MdcertError(str(exc)) from None


PATHS = JobKind(
    name="paths", command="paths",
    params=(Param("problem", ParamType.FILE, None),     # one problem file a job (the command takes several)
            Param("p", ParamType.TEXT, "--p", check=check_p_list),
            Param("steps", ParamType.TEXT, "--steps"),
            Param("lr", ParamType.TEXT, "--lr"),
            Param("trials", ParamType.INT, "--trials", check=_int_range("trials", 1, 10 ** 6)),
            Param("inits", ParamType.INT, "--inits", check=_int_range("inits", 1, 10 ** 6)),
            Param("seed", ParamType.INT, "--seed", check=_int_range("seed", 0, 2 ** 63 - 1)),
            Param("normalize", ParamType.BOOL, "--normalize"),
            Param("cross", ParamType.BOOL, "--cross"),
            Param("train_decoder", ParamType.BOOL, "--train-decoder"),
            Param("decoder_lr", ParamType.FLOAT, "--decoder-lr"),
            Param("records", ParamType.INT, "--records", check=_int_range("records", 2, 10 ** 6)),
            Param("tail", ParamType.FLOAT, "--tail"),
            _DIGITS,
            Param("workers", ParamType.INT, "--workers", check=_int_range("workers", 0, 1024)),
            Param("no_certify", ParamType.BOOL, "--no-certify"),
            Param("device", ParamType.TEXT, "--device", choices=("auto", "cpu", "cuda")),
            Param("dtype", ParamType.TEXT, "--dtype", choices=("float64", "float32")),
            Param("n", ParamType.INT, "--n", check=_int_range("n", *_SIZE)),
            Param("T", ParamType.INT, "--T", check=_int_range("T", *_SIZE)),
            Param("d", ParamType.INT, "--d", check=_int_range("d", *_SIZE))),
    output_flag="-o", output_name="run", ok_codes=frozenset({0}), verdict=written,
    preload=("numpy", "torch") + _CERTIFY_STACK, validate=validate_paths)
