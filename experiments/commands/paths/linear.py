"""``mdcert paths PROBLEM.npz ...`` on a classification problem: the p-GD paths of a linear
classifier, run by ``mdcert pgd``'s own config, run and result (`experiments.commands.pgd`,
docs/theory.md section 7.5) with the paths options mapped onto them.

Mapped: ``--p``, ``--lr``, ``--normalize``, ``--seed``, ``--records``, ``--digits``, ``--overwrite``,
``-o``; ``--steps`` (one value: every trajectory runs the same steps; the attention default of one
count per p becomes ``mdcert pgd``'s 10,000), ``--inits`` (default 8, ``mdcert pgd``'s) and
``--init-std`` (``w(0) = S`` times seeded standard normals, default 0.1, ``mdcert pgd``'s
``--init-scale``). The loss is the logistic loss (``mdcert pgd --loss exponential`` runs the other).
Options that make no sense for a linear model or that its engine does not take (the decoder, the
cross grid, the synthetic sizes, a W(0) file, float32, the record spacing and rate-fit settings,
the certification workers, a CUDA device) are refused in one line. The run directory is a ``pgd``
one: ``summary.json``, ``arrays.npz``, ``pgd.png``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from certify.errors import MdcertError

__all__ = ["LinearConfig", "LinearResult", "PGD_STEPS", "linear_config", "run_linear"]

#: steps per trajectory when ``--steps`` is left at the attention default (``mdcert pgd``'s)
PGD_STEPS = 10_000
#: initializations per (p, lr) when ``--inits`` is not given (``mdcert pgd``'s default)
PGD_INITS = 8
#: the scale of w(0) when ``--init-std`` is not given (``mdcert pgd``'s ``--init-scale``)
PGD_INIT_SCALE = 0.1
#: (option name, flag, the value that means "not given") of the options refused on a linear model
_REFUSED = (
    ("train_decoder", "--train-decoder", False),
    ("decoder_lr", "--decoder-lr", None),
    ("cross", "--cross", False),
    ("trials", "--trials", None),
    ("n", "--n", None),
    ("T", "--T", None),
    ("d", "--d", None),
    ("init", "--init", None),
    ("no_certify", "--no-certify", False),
    ("workers", "--workers", None),
)


@dataclass(frozen=True, kw_only=True)
class LinearConfig:
    """``mdcert paths`` on a classification problem: the ``mdcert pgd`` config it runs (``pgd``),
    the run directory (``out``), ``overwrite`` and the command line (``argv``, not compared)."""

    pgd: Any
    out: str
    overwrite: bool = False
    argv: tuple[str, ...] = field(default=(), compare=False)


def _refused(o: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    out = [flag for name, flag, unset in _REFUSED if o[name] != unset]
    for name, flag, allowed in (
        ("dtype", "--dtype", ("float64",)),
        ("spacing", "--spacing", ("auto", "log")),
        ("average", "--average", (defaults["average"],)),
        ("device", "--device", ("auto", "cpu")),
    ):
        if o[name] not in allowed:
            out.append(f"{flag} {o[name]}")
    if o["tail"] != defaults["tail"]:
        out.append("--tail")
    return out


def _steps(text: Any, default_text: str) -> int:
    if str(text) == default_text:
        return PGD_STEPS
    try:
        values = {int(v) for v in str(text).split(",")}
    except ValueError:
        raise MdcertError(f"--steps must be comma-separated integers, got {text!r}") from None
    if len(values) != 1:
        raise MdcertError(
            f"on a classification problem every p-GD trajectory runs the same steps: give one "
            f"--steps value, got {text!r}"
        )
    return values.pop()


def linear_config(
    o: Mapping[str, Any], problems: tuple[str, ...], classification: list[bool], defaults
) -> LinearConfig:
    """The config of ``mdcert paths`` on the classification ``problems`` (``classification[i]``:
    whether file i is one), from the paths options ``o`` (`experiments.commands.paths.options`
    names, ``defaults`` their defaults); one line on what does not apply, before any work."""
    from experiments.commands.pgd import Config as PgdCommandConfig

    if not all(classification):
        other = problems[classification.index(False)]
        raise MdcertError(
            f"mdcert paths takes attention problems or one classification problem, not both: "
            f"{other!r} is not a classification problem"
        )
    if len(problems) != 1:
        raise MdcertError(
            f"mdcert paths runs the p-GD paths of one classification problem at a time; got "
            f"{len(problems)} (run each, or 'mdcert pgd' on each)"
        )
    refused = _refused(o, defaults)
    if refused:
        raise MdcertError(
            f"on a classification problem mdcert paths runs the p-GD paths of a linear classifier "
            f"(as mdcert pgd); {', '.join(refused)} do not apply to it: drop them"
        )
    pgd = PgdCommandConfig.from_options(
        {
            "problem": problems[0],
            "p": o["p"],
            "lr": o["lr"],
            "inits": PGD_INITS if o["inits"] is None else o["inits"],
            "init_scale": PGD_INIT_SCALE if o["init_std"] is None else o["init_std"],
            "loss": "logistic",
            "normalize": bool(o["normalize"]),
            "steps": _steps(o["steps"], defaults["steps"]),
            "records": o["records"],
            "seed": o["seed"],
            "digits": o["digits"],
            "check": False,
            "output": str(o["out"]),
            "overwrite": bool(o["overwrite"]),
        }
    )
    return LinearConfig(
        pgd=pgd,
        out=str(o["out"]),
        overwrite=bool(o["overwrite"]),
        argv=tuple(o.get("argv") or ()),
    )


@dataclass(frozen=True)
class LinearResult:
    """The ``mdcert pgd`` result (``pgd``) of a paths run on a classification problem, with the
    paths command's ``write(out)``, ``lines(width)`` and ``exit_code``."""

    config: LinearConfig
    pgd: Any

    @property
    def exit_code(self) -> int:
        return self.pgd.exit_code

    def write(self, out: str | Path) -> None:
        """The ``pgd`` run directory (summary.json, arrays.npz, pgd.png), renamed when complete."""
        self.pgd.write(out)

    def lines(self, width: int) -> list[str]:
        """What ``mdcert pgd`` says about the run, wrapped to ``width``."""
        from experiments.runtime.terminal import wrap_lines

        head = (
            "paths on a classification problem: p-GD paths of a linear classifier against the "
            "certified l_p max-margin direction (mdcert pgd; docs/theory.md section 7.5)"
        )
        return wrap_lines([head, *self.pgd.lines(width)], width)


def run_linear(config: LinearConfig) -> LinearResult:
    """Run ``mdcert pgd``'s work (certify ``w_p`` per p, the batched paths, their measurements)."""
    from experiments.commands.pgd import run

    return LinearResult(config, run(config.pgd))
