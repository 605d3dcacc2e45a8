"""``mdcert certify`` in the application layer (`experiments.commands`): the certified l_p
attention-SVM / decoder-SVM solution, or the certified l_p max-margin classifier of a classification
problem file (docs/formats.md; docs/theory.md section 7).

Exit codes (`Result.exit_code`): 0 certified (status optimal) to the requested digits, 3 infeasible
(a Gordan certificate of infeasibility is written), 2 no verified result or an optimal certificate
short of the requested digits; bad input raises `certify.errors.MdcertError` (exit 1).

``--export-w W.npy`` / ``--export-direction U.npy`` (shared with ``mdcert verify``: the export helpers
below) write the certified feasible point and its unit direction as float64 ``.npy`` after the
independent checker has accepted the certificate; neither is written when nothing was certified.
Nothing here imports torch: the base install runs this command.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping
from experiments.commands.exports import (
    add_export_options,
    check_export_paths,
    export_lines,
    parse_size,
    prepare_export,
    write_export,
)

__all__ = [
    "Config",
    "Result",
    "add_arguments",
    "run",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert certify`` (the one schema of the command)."""
    parser.add_argument(
        "problem",
        help="problem file (.npz or .json, e.g. from 'mdcert synth'): attention data, or "
        "a classification problem (kind = classification: the l_p max-margin program)",
    )
    parser.add_argument(
        "--p",
        required=True,
        help="exponent p > 1, read exactly from its decimal string (1.75 is 7/4)",
    )
    parser.add_argument(
        "--svm",
        choices=("attention", "decoder"),
        default=None,
        help="attention SVM (variable W, m = d^2; default) or decoder SVM (variable v); attention "
        "problems only (a classification problem names its own program)",
    )
    parser.add_argument(
        "--alpha",
        default=None,
        help="token indices: 'opt' (globally optimal, default unless the problem stores alpha) "
        "or comma-separated indices like 0,3,1",
    )
    parser.add_argument(
        "--digits",
        type=int,
        default=60,
        help="requested relative width 1e-DIGITS of the OPT enclosure, 1 to 2000 (default 60); "
        "exit 2 if it is not reached",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds after which precision is not raised further",
    )
    parser.add_argument(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help="memory the solve may use, e.g. 4G or 512M (default: 80%% of the available memory); "
        "a larger problem gets a no_verified_result certificate and exit 2; a problem file "
        "whose arrays need more than half of it to read is refused (exit 1)",
    )
    parser.add_argument(
        "-o", "--output", default=None, help="write the certificate JSON here (written atomically)"
    )
    add_export_options(parser)


# ------------------------------------------------------------------------------------- config
@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert certify`` run: the problem file, the exact p, the program's options and
    the output paths (checked: suffixes, parent directories, never an input)."""

    problem: str
    p: Fraction
    svm: str | None = None
    alpha: str | None = None
    digits: int = 60
    time_limit: float | None = None
    memory_budget: int | None = None
    output: str | None = None
    export_w: str | None = None
    export_direction: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate the options (one `MdcertError` line on bad input, before any work)."""
        from pathlib import Path

        from certify.errors import MdcertError
        from certify.exact import parse_p
        from experiments.runtime.outputs import check_output_file

        problem, output = options["problem"], options.get("output")
        export_w, export_direction = options.get("export_w"), options.get("export_direction")
        if output is not None:
            if Path(output).suffix.lower() != ".json":
                raise MdcertError(f"certificate output {output!r} must be a .json file")
            check_output_file(output, option="-o", suffixes=(".json",))
        check_export_paths(
            export_w=export_w,
            export_direction=export_direction,
            output=output,
            inputs={"the problem file": problem},
        )
        time_limit = options.get("time_limit")
        if time_limit is not None and not (math.isfinite(time_limit) and time_limit >= 0):
            raise MdcertError(
                f"invalid --time-limit {time_limit}; give a finite number of seconds >= 0"
            )
        budget = options.get("memory_budget")
        budget = None if budget is None else parse_size(budget)
        p = parse_p(options["p"])
        if options.get("alpha") is not None:  # its syntax now; its range once the data is read
            from certify.problem import alpha_indices

            alpha_indices(str(options["alpha"]))
        digits = options.get("digits", 60)
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 2000:
            raise MdcertError(f"invalid digits {digits!r}; give an integer between 1 and 2000")
        return cls(
            problem=problem,
            p=p,
            svm=options.get("svm"),
            alpha=options.get("alpha"),
            digits=digits,
            time_limit=time_limit,
            memory_budget=budget,
            output=output,
            export_w=export_w,
            export_direction=export_direction,
        )


# ------------------------------------------------------------------------------------- result
def _dec(x, digits: int = 25) -> str:
    """``x`` to ``digits`` significant digits, exponents as everywhere else (``4.13e+150``, ``1.5e-07``)."""
    import re
    from decimal import Context, Decimal

    ctx = Context(prec=digits)
    text = str(ctx.divide(Decimal(x.numerator), Decimal(x.denominator)))
    return re.sub(r"E([+-])(\d+)$", lambda m: f"e{m.group(1)}{int(m.group(2)):02d}", text)


@dataclass(frozen=True, kw_only=True)
class Result:
    """A certify run: the problem, its certificate, the solution to export (checked) and the time."""

    config: Config
    problem: Any
    certificate: Any
    solution: Any = None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())  # stderr lines from the export step

    @property
    def classification(self) -> bool:
        from certify.classification import ClassificationProblem

        return isinstance(self.problem, ClassificationProblem)

    def _width(self) -> tuple[Fraction, bool]:
        """The certified relative width and whether it reaches the requested digits."""
        from certify import CertStatus
        from certify.exact import decimal_digits

        if self.certificate.status is not CertStatus.OPTIMAL:
            return Fraction(0), True
        rw = self.certificate.relative_width()
        return rw, rw == 0 or decimal_digits(rw) >= self.config.digits

    @property
    def exit_code(self) -> int:
        from certify import CertStatus

        if not self._width()[1]:
            return 2
        return {CertStatus.OPTIMAL: 0, CertStatus.INFEASIBLE: 3}.get(self.certificate.status, 2)

    def write(self, out: str | None = None) -> None:
        """The certificate JSON to ``out`` (default: the config's ``-o``; none when both are None),
        then the exports the config names, each atomically."""
        import json

        from experiments.runtime.outputs import write_text_atomic

        out = self.config.output if out is None else out
        if out is not None:
            write_text_atomic(out, json.dumps(self.certificate.to_json()))
        write_export(
            self.solution,
            export_w=self.config.export_w,
            export_direction=self.config.export_direction,
        )

    def lines(self, width: int) -> list[str]:
        """The terminal summary (after `write` to the config's paths)."""
        from pathlib import Path

        from certify import CertStatus
        from certify.exact import format_exact, format_sci
        from experiments.runtime.terminal import problem_lines, summarize_sequence, width_phrase

        cert, problem, cfg = self.certificate, self.problem, self.config
        lines: list[str] = []
        if self.classification:
            lines.append(f"problem: {problem.describe()}")
            lines.append(
                f"l_p max-margin ({problem.kind}, {problem.m} variables, {problem.N} constraint rows), "
                f"p = {format_exact(cert.p)}"
            )
        else:
            if problem.lengths is not None or problem.provenance:
                lines.extend(problem_lines(problem, width))
            lines.append(
                f"{cfg.svm or 'attention'} SVM, p = {format_exact(cert.p)}, "
                f"alpha = {summarize_sequence(list(cert.alpha))}"
            )
        lines.append(f"status: {cert.status.value}")
        if cert.status is CertStatus.OPTIMAL:
            rw = cert.relative_width()
            lines.append(
                f"OPT in [{_dec(cert.opt_lower)}, {_dec(cert.opt_upper)}] ({width_phrase(rw)})"
            )
            lines.append(
                f"direction error <= {format_sci(cert.direction_error_upper)}, Bregman <= "
                f"{format_sci(cert.bregman_upper)}"
                f"{', exact rational KKT certificate' if cert.exact_kkt else ''}"
            )
            t, i, u = cert.support.counts()
            lines.append(f"support: {t} tight, {i} inactive, {u} undecided constraint rows")
            if self.classification:
                lines.append(
                    "support examples (a tight row): "
                    f"{summarize_sequence(sorted({r[0] for r in cert.support.tight}))}"
                )
        elif cert.status is CertStatus.INFEASIBLE:
            what = "the data are not separable" if self.classification else "the SVM is infeasible"
            lines.append(f"{what}: Gordan certificate g >= 0, g != 0, A^T g = 0 (exact)")
            if "feasibility" in cert.info:
                lines.append(f"  by: {cert.info['feasibility']}")
        else:
            lines.append(f"nothing proven: {cert.info.get('reason', 'no rigorous enclosure')}")
        wrote = "" if cfg.output is None else f"; wrote {Path(cfg.output)}"
        lines.append(f"time {self.seconds:.2f} s{wrote}")
        return lines + export_lines(
            self.solution, export_w=cfg.export_w, export_direction=cfg.export_direction
        )

    def messages(self) -> list[str]:
        """The lines for stderr: a skipped export, a memory budget or nothing verified, digits not reached."""
        from certify import CertStatus
        from certify.exact import decimal_digits, format_exact, format_sci

        cert, lines = self.certificate, list(self.notes)
        if (
            "memory_budget_bytes" in cert.info
        ):  # too large for the budget, or out of memory: one line
            lines.append(f"mdcert certify: {cert.info.get('reason')}")
        elif (
            cert.status is CertStatus.NO_VERIFIED_RESULT
        ):  # exit 2: say so on stderr, with the reason
            why = cert.info.get("reason", "no rigorous enclosure")
            if (
                "warm start" in why and cert.p > 8
            ):  # measured: the paper's problems certify up to p = 8
                why += (
                    f"; the float64 warm start is ill-conditioned at large p (p = {format_exact(cert.p)}), "
                    "try a smaller p"
                )
            lines.append(f"mdcert certify: nothing could be verified: {why}")
        rw, reached = self._width()
        if not reached:
            lines.append(
                f"mdcert certify: the requested {self.config.digits} digits were not reached (certified "
                f"relative width {format_sci(rw)}, {decimal_digits(rw)} digits); the bounds proven are "
                "in the certificate; raise --time-limit or lower --digits"
            )
        return lines


def run(config: Config) -> Result:
    """Load the problem, certify it (a progress bar on stderr) and, when exports are asked for,
    check the certificate with the independent checker; nothing is written here."""
    import time

    from certify import certify_svm
    from certify.classification import ClassificationProblem, load_problem
    from certify.errors import MdcertError
    from experiments.runtime.progress import progress

    problem = load_problem(
        config.problem, memory_budget=config.memory_budget
    )  # half the budget to read it
    classification = isinstance(problem, ClassificationProblem)
    if classification and (config.svm is not None or config.alpha is not None):
        raise MdcertError(
            f"{'--svm' if config.svm is not None else '--alpha'} is for attention problems; "
            f"{config.problem!r} is a {problem.kind} classification problem (drop the option)"
        )
    t0 = time.perf_counter()
    with progress(1.0, desc="certify", fraction=True) as bar:

        def report(fraction: float, stage: str) -> None:
            bar.set(fraction)
            bar.stage(stage)

        if classification:
            from certify.maxmargin import certify_max_margin

            cert = certify_max_margin(
                problem,
                config.p,
                digits=config.digits,
                time_limit=config.time_limit,
                memory_budget=config.memory_budget,
                progress=report,
            )
        else:
            cert = certify_svm(
                problem,
                config.p,
                svm=config.svm or "attention",
                alpha=config.alpha,
                digits=config.digits,
                time_limit=config.time_limit,
                memory_budget=config.memory_budget,
                progress=report,
            )
    seconds = time.perf_counter() - t0
    sol, notes = prepare_export(
        cert, export_w=config.export_w, export_direction=config.export_direction, problem=problem
    )  # the independent checker accepts it first
    return Result(
        config=config,
        problem=problem,
        certificate=cert,
        solution=sol,
        seconds=seconds,
        notes=tuple(notes),
    )
