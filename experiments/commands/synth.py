"""``mdcert synth`` in the application layer (`experiments.commands`): the paper's seeded synthetic
attention problem (`certify.synthetic_problem`), or with ``classification`` a seeded labelled point
set, planted separable or with random labels (`certify.synth.classification_problem`; docs/theory.md
sections 1 and 7), or with ``regression`` an overparameterized regression problem, block rows that
satisfy Assumptions 3.2 and 3.8 of arXiv 2410.14158 or Gaussian (`certify.regression.synth`;
docs/theory.md section 8). Sizes, the seed, ``--min-T`` and the memory the problem needs are refused before
any work; the problem is built by `run` and saved (atomically) by `Result.write`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

__all__ = ["Config", "Result", "add_arguments", "run"]

#: largest n, T or d accepted (the problem must fit in memory; the memory check comes after)
MAX_SIZE = 10**7
#: attention problems with more examples than this get no list of optimal tokens in the summary line
LIST_LIMIT = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert synth``."""
    parser.add_argument("--n", type=int, default=6, help="examples (default 6)")
    parser.add_argument("--T", type=int, default=8, help="tokens per example (default 8)")
    parser.add_argument(
        "--d",
        type=int,
        default=None,
        help="token dimension (default 10); with --regression the columns D (default 2n)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--min-T",
        type=int,
        default=None,
        dest="min_T",
        help="variable lengths: example i keeps lengths[i] tokens, uniform in MIN_T..T, "
        "the rest is zero padding (default: every example has T tokens)",
    )
    parser.add_argument(
        "--classification",
        action="store_true",
        help="write a classification problem (X: n x d, labels -1/+1 or 0..K-1) instead",
    )
    parser.add_argument(
        "--classes",
        type=int,
        default=None,
        help="with --classification: K >= 2 classes (labels 0..K-1); default binary (-1/+1)",
    )
    parser.add_argument(
        "--regression",
        choices=("block", "gaussian"),
        default=None,
        help="write a regression problem (X: N x D with N = --n and D = --d, y: N) instead: "
        "block rows (two nonzeros each, disjoint supports, y != 0: Assumptions 3.2 and 3.8 of "
        "arXiv 2410.14158; D = 2N) or gaussian entries",
    )
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--separable",
        dest="separable",
        action="store_true",
        default=True,
        help="with --classification: labels of a planted linear classifier, points near its "
        "boundary dropped (default)",
    )
    kind.add_argument(
        "--random",
        dest="separable",
        action="store_false",
        help="with --classification: uniform random labels (not separable for n well above K d)",
    )
    parser.add_argument("-o", "--output", required=True, help="output file, .npz or .json")


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert synth`` run."""

    output: str
    n: int = 6
    T: int = 8
    d: int = 10
    seed: int = 0
    min_T: int | None = None
    classification: bool = False
    classes: int | None = None
    separable: bool = True
    regression: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Refuse bad sizes, seed, ``--min-T``, ``--classes`` without ``--classification``, a problem
        that does not fit in memory and an unwritable output (one line each, nothing written)."""
        from certify.errors import MdcertError
        from experiments.runtime.outputs import check_output_file, check_seed
        from experiments.runtime.resources import check_memory

        values = {
            k: options[k]
            for k in cls.__dataclass_fields__
            if k in options and (options[k] is not None or k in ("min_T", "classes"))
        }
        if options.get("regression") is not None and options.get("d") is None:
            values["d"] = 2 * values.get("n", cls.n)  # D defaults to 2N for regression data
        if "output" not in values:
            raise MdcertError("-o/--output is required: the .npz or .json file to write")
        for name in ("n", "T", "d", "seed", "min_T", "classes"):
            value = values.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise MdcertError(f"invalid --{name.replace('_', '-')}: {value!r}; give an integer")
        cfg = cls(**values)
        check_seed(cfg.seed, bounded=False)
        if cfg.regression is not None:
            _check_regression(cfg)
        elif cfg.classification:
            for name in ("n", "d"):
                if not 1 <= getattr(cfg, name) <= MAX_SIZE:
                    raise MdcertError(
                        f"invalid --{name}: {getattr(cfg, name)}; give an integer in 1..1e7"
                    )
            check_memory(
                8 * 4 * cfg.n * cfg.d,
                what=f"a problem of n={cfg.n}, d={cfg.d}",
                fix="reduce --n or --d",
            )
        else:
            if cfg.classes is not None:
                raise MdcertError("--classes needs --classification")
            for name in ("n", "T", "d"):
                if getattr(cfg, name) > MAX_SIZE:
                    raise MdcertError(
                        f"invalid {name}: {getattr(cfg, name)}; at most 1e7 (the problem must "
                        f"fit in memory)"
                    )
            if cfg.min_T is not None and not 2 <= cfg.min_T <= cfg.T:
                raise MdcertError(
                    f"invalid --min-T {cfg.min_T}; give 2 <= MIN_T <= T (T = {cfg.T})"
                )
            check_memory(
                8 * 4 * cfg.n * cfg.T * cfg.d,
                what=f"a problem of n={cfg.n}, T={cfg.T}, d={cfg.d}",
                fix="reduce --n, --T or --d",
            )
        check_output_file(cfg.output, option="-o", suffixes=(".npz", ".json"))
        return cfg


def _check_regression(cfg: Config) -> None:
    """``--regression``: no attention or classification option beside it, sizes in range, block
    data with D = 2N, and the memory of X (one line each)."""
    from certify.errors import MdcertError
    from experiments.runtime.resources import check_memory

    if cfg.regression not in ("block", "gaussian"):
        raise MdcertError(f"invalid --regression {cfg.regression!r}; choose block or gaussian")
    if cfg.classification:
        raise MdcertError("--classification and --regression exclude each other; choose one")
    for name, given in (("classes", cfg.classes is not None), ("min-T", cfg.min_T is not None)):
        if given:
            raise MdcertError(f"--{name} is not an option of --regression data; drop it")
    if not cfg.separable:
        raise MdcertError("--random is an option of --classification data; drop it")
    for name in ("n", "d"):
        if not 1 <= getattr(cfg, name) <= MAX_SIZE:
            raise MdcertError(f"invalid --{name}: {getattr(cfg, name)}; give an integer in 1..1e7")
    if cfg.regression == "block" and cfg.d != 2 * cfg.n:
        raise MdcertError(
            f"block regression data have D = 2N (two nonzeros per row); got --n {cfg.n} and "
            f"--d {cfg.d}: drop --d or give --d {2 * cfg.n}"
        )
    check_memory(
        8 * 4 * cfg.n * cfg.d, what=f"a problem of N={cfg.n}, D={cfg.d}", fix="reduce --n or --d"
    )


@dataclass(frozen=True)
class Result:
    """The problem built, and what the terminal says about it."""

    config: Config
    problem: Any
    exit_code: int = 0

    def write(self, out: str | Path | None = None) -> Path:
        """Save the problem (atomically) to ``out`` (default: the config's ``-o``); its path."""
        path = Path(self.config.output if out is None else out)
        self.problem.save(path)  # attention and classification return the path, regression None
        return path

    def lines(self, width: int = 100) -> list[str]:
        """One line: the file written, the sizes and seed, and (attention) the optimal tokens."""
        cfg, problem = self.config, self.problem
        if cfg.regression is not None:
            return [
                f"wrote {Path(cfg.output)}: {cfg.regression} regression data N={cfg.n} "
                f"D={cfg.d}, seed={cfg.seed}"
            ]
        if cfg.classification:
            how = "planted separable" if cfg.separable else "random labels"
            return [f"wrote {Path(cfg.output)}: {problem.describe()}, {how}, seed={cfg.seed}"]
        head = f"wrote {Path(cfg.output)}: n={problem.n} T={problem.T} d={problem.d}"
        if problem.n > LIST_LIMIT:
            # the exact token scores of a large problem cost time and memory the write does not
            # need (Python integers per entry); `mdcert info` / `certify` compute them when asked
            spread = (
                ""
                if problem.lengths is None
                else f" lengths {int(min(problem.lengths))}..{int(max(problem.lengths))}"
            )
            return [
                f"{head}{spread} seed={cfg.seed}; globally optimal tokens not listed for n > "
                f"{LIST_LIMIT} (`mdcert info {Path(cfg.output).name}` gives them)"
            ]
        tokens = problem.optimal_indices()
        ties = f", ties in {len(tokens.ties)} example(s)" if tokens.ties else ""
        lengths = "" if problem.lengths is None else f" lengths={[int(k) for k in problem.lengths]}"
        return [
            f"{head}{lengths} seed={cfg.seed}, globally optimal tokens {list(tokens.indices)}{ties}"
        ]


def run(config: Config) -> Result:
    """Build the seeded problem the config describes (nothing written yet)."""
    if config.regression is not None:
        from certify.regression.synth import regression_problem

        problem = regression_problem(config.regression, N=config.n, D=config.d, seed=config.seed)
    elif config.classification:
        from certify.synth import classification_problem

        problem = classification_problem(
            n=config.n,
            d=config.d,
            classes=config.classes,
            separable=config.separable,
            seed=config.seed,
        )
    else:
        from certify import synthetic_problem

        problem = synthetic_problem(
            n=config.n, T=config.T, d=config.d, seed=config.seed, min_T=config.min_T
        )
    return Result(config, problem)
