"""``mdcert verify`` in the application layer (`experiments.commands`): re-check every claim of a
certificate with the independent checker (`certify.check`; `certify.regression.check_interpolation`
for an interpolation certificate of a regression problem, `certify.regression.psicheck.check_psi` for
a certificate of the gradient-descent potential, ``mdcert interpolate --potential psi``;
`certify.regression.echeck.check_e` for one of ``--potential E``).

`Result.exit_code` is 0 when every claim is verified, 1 otherwise (the first failing claim on stderr);
bad input raises (exit 1). ``--p``, ``--svm`` and ``--alpha`` reject a certificate about anything
else. Without ``--alpha``, a certificate whose alpha differs from the one stored in the problem file
is still verified (it proves what it claims), with a note on stderr. ``--export-w`` /
``--export-direction`` write the verified solution (as ``mdcert certify``), only when every claim is
verified. Nothing here imports a solver or torch: the base install runs this command.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from experiments.commands.exports import (
    add_export_options,
    check_export_paths,
    export_lines,
    write_export,
)

__all__ = ["Config", "Result", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert verify``."""
    parser.add_argument(
        "problem",
        help="problem file (.npz or .json); a regression problem's certificate comes "
        "from 'mdcert interpolate'",
    )
    parser.add_argument("certificate", help="certificate JSON written by 'mdcert certify'")
    parser.add_argument(
        "--p", default=None, help="reject the certificate unless it is about this exact p"
    )
    parser.add_argument(
        "--svm",
        choices=("attention", "decoder", "binary", "multiclass"),
        default=None,
        help="reject the certificate unless it is about this SVM (or max-margin program)",
    )
    parser.add_argument(
        "--alpha",
        default=None,
        help="reject the certificate unless it is about these token indices: 'opt' (globally "
        "optimal), 'problem' (the alpha stored in the problem file) or comma-separated "
        "indices like 0,3,1",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every claim")
    add_export_options(parser)


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert verify`` run: the problem and certificate files, the expected p, svm and
    alpha (as given), the export paths, and whether the problem declares regression data."""

    problem: str
    certificate: str
    p: Fraction | None = None
    svm: str | None = None
    alpha: str | None = None
    verbose: bool = False
    export_w: str | None = None
    export_direction: str | None = None
    regression: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate p and the export paths (one line each, before any work); a regression problem
        takes none of --svm, --alpha and the exports."""
        from certify.errors import MdcertError
        from certify.exact import parse_p
        from certify.regression.problem import declares_regression

        problem, certificate = options["problem"], options["certificate"]
        exports = {
            "export_w": options.get("export_w"),
            "export_direction": options.get("export_direction"),
        }
        regression = declares_regression(problem)
        if regression:
            for name in ("svm", "alpha", "export_w", "export_direction"):
                if options.get(name) is not None:
                    raise MdcertError(
                        f"--{name.replace('_', '-')} does not apply to a regression problem"
                    )
        else:
            check_export_paths(
                **exports,
                output=None,
                inputs={"the problem file": problem, "the certificate": certificate},
            )
        p = None if options.get("p") is None else parse_p(options["p"])
        return cls(
            problem=problem,
            certificate=certificate,
            p=p,
            svm=options.get("svm"),
            alpha=options.get("alpha"),
            verbose=bool(options.get("verbose", False)),
            regression=regression,
            **exports,
        )


@dataclass(frozen=True, kw_only=True)
class Result:
    """The checker's verdict: the claims in order (name, ok, detail or None), the certificate's status,
    the first failing claim (None: all hold), notes for stderr and the solution to export."""

    config: Config
    problem: Any
    claims: tuple[tuple[str, bool, str | None], ...]
    status: Any
    seconds: float
    failure: str | None = None
    notes: tuple[str, ...] = ()
    solution: Any = None

    @property
    def exit_code(self) -> int:
        return 0 if self.failure is None else 1

    def write(self, out: str | None = None) -> None:
        """The exports the config names (only when every claim holds); verify writes nothing else."""
        write_export(
            self.solution,
            export_w=self.config.export_w,
            export_direction=self.config.export_direction,
        )

    def lines(self, width: int) -> list[str]:
        """The problem (as 'mdcert certify' shows it), every claim with -v, the verdict, the exports."""
        from certify.classification import ClassificationProblem
        from experiments.runtime.terminal import problem_lines, shorten_lists

        lines: list[str] = []
        if isinstance(self.problem, ClassificationProblem):
            lines.append(f"problem: {self.problem.describe()}")
        elif not self.config.regression and (
            self.problem.lengths is not None or self.problem.provenance
        ):
            lines.extend(problem_lines(self.problem, width))
        if self.config.verbose:
            lines += [
                f"  {'ok  ' if ok else 'FAIL'} {name}"
                + ("" if detail is None else f": {shorten_lists(detail)}")
                for name, ok, detail in self.claims
            ]
        if self.failure is None:
            lines.append(
                f"verified: all {len(self.claims)} claims hold (status {self.status}, {self.seconds:.2f} s)"
            )
            lines += export_lines(
                self.solution,
                export_w=self.config.export_w,
                export_direction=self.config.export_direction,
            )
        return lines

    def messages(self) -> list[str]:
        """The lines for stderr: the first failing claim, or the notes of a verified certificate."""
        return [f"NOT verified: {self.failure}"] if self.failure is not None else list(self.notes)


def _regression(config: Config) -> Result:
    """An interpolation certificate of a regression problem, re-checked."""
    import time

    from certify.errors import MdcertError
    from certify.limits import read_json_file
    from certify.regression import InterpolationCertificate, check_interpolation, load_regression

    from certify.regression.echeck import E_FORMAT, ECertificate, check_e
    from certify.regression.psicheck import PSI_FORMAT, PsiCertificate, check_psi

    problem = load_regression(config.problem)
    data = read_json_file(config.certificate, what=f"certificate {str(config.certificate)!r}")
    kind = data.get("format") if isinstance(data, dict) else None
    psi, e_prog = kind == PSI_FORMAT, kind == E_FORMAT
    if psi and config.p is not None:
        raise MdcertError("--p does not apply to a psi certificate (min Q_alpha, not an l_p norm)")
    if e_prog and config.p is not None:
        raise MdcertError("--p does not apply to an E certificate (min E(beta), not an l_p norm)")
    if e_prog:
        cert = ECertificate.from_json(data)
    else:
        cert = PsiCertificate.from_json(data) if psi else InterpolationCertificate.from_json(data)
    t0 = time.perf_counter()
    if e_prog:
        result = check_e(problem, cert)
    else:
        result = check_psi(problem, cert) if psi else check_interpolation(problem, cert, p=config.p)
    seconds = time.perf_counter() - t0
    claims = tuple(
        (name, not any(f.startswith(name) for f in result.failures), None)
        for name in result.checked
    )
    return Result(
        config=config,
        problem=problem,
        claims=claims,
        status=cert.status.value,
        seconds=seconds,
        failure=None if result.ok else result.failures[0],
    )


def run(config: Config) -> Result:
    """Load the problem and the certificate (bounded reads) and re-check every claim."""
    import time
    from pathlib import Path

    from certify.check import check_certificate
    from certify.classification import ClassificationProblem, load_problem
    from certify.errors import MdcertError
    from certify.limits import max_certificate_bytes, read_json_file
    from certify.problem import resolve_alpha
    from experiments.runtime.terminal import summarize_sequence

    if config.regression:
        return _regression(config)
    problem = load_problem(config.problem)
    classification = isinstance(problem, ClassificationProblem)
    if classification and config.alpha is not None:
        raise MdcertError(
            f"--alpha is for attention problems; {config.problem!r} is a {problem.kind} "
            "classification problem"
        )
    path = Path(config.certificate)
    if path.is_dir():
        raise MdcertError(
            f"certificate {str(path)!r} is a directory; give the JSON file written by 'mdcert certify -o'"
        )
    if not path.is_file():
        raise MdcertError(
            f"certificate file not found: {str(path)!r}; write one with 'mdcert certify ... -o cert.json'"
        )
    # bounded before and during parsing: size relative to the problem, depth, duplicate keys, NaN, UTF-8
    data = read_json_file(
        path, what=f"certificate {str(path)!r}", max_bytes=max_certificate_bytes(problem)
    )
    if not isinstance(data, dict):
        raise MdcertError(
            f"certificate {str(path)!r}: a certificate must be a JSON object (written by 'mdcert certify -o')"
        )
    stored = None if classification or problem.alpha is None else [int(a) for a in problem.alpha]
    alpha = config.alpha
    if alpha is not None and alpha.strip().lower() == "problem":
        if stored is None:
            raise MdcertError(
                f"--alpha problem: {config.problem!r} stores no alpha; give 'opt' or the indices, "
                f"e.g. --alpha 0,3,1"
            )
        alpha = stored
    if alpha is not None:
        alpha = list(resolve_alpha(problem, alpha))  # bad input is an error, not a failed claim
    t0 = time.perf_counter()
    result = check_certificate(problem, data, p=config.p, svm=config.svm, alpha=alpha)
    seconds = time.perf_counter() - t0
    claims = tuple((claim.name, claim.ok, claim.detail) for claim in result.claims)
    if not result.ok:
        return Result(
            config=config,
            problem=problem,
            claims=claims,
            status=data.get("status"),
            seconds=seconds,
            failure=result.first_failure,
        )
    notes = []
    certified = list(data.get("alpha", []))
    if config.alpha is None and stored is not None and certified != stored:
        notes.append(
            f"note: the certificate is about alpha = {summarize_sequence(certified)}, the problem file "
            f"stores alpha = {summarize_sequence(stored)}; pass --alpha problem to require the stored one"
        )
    from certify import Certificate
    from experiments.commands.exports import prepare_export

    sol, export_notes = prepare_export(
        Certificate.from_json(data),
        export_w=config.export_w,
        export_direction=config.export_direction,
    )
    return Result(
        config=config,
        problem=problem,
        claims=claims,
        status=data.get("status"),
        seconds=seconds,
        notes=tuple(notes + export_notes),
        solution=sol,
    )
