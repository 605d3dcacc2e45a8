"""``mdcert interpolate`` in the application layer (`experiments.commands`): certified
minimum-l_p-norm interpolation ``min ||beta||_p s.t. X beta = y`` (docs/theory.md section 8.3), or
with ``--potential psi --alpha A`` the gradient-descent limit of a depth-2 diagonal network,
``min Q_alpha(beta) s.t. X beta = y`` (section 8.9), or with ``--potential E --v FILE.npy`` the smoothed-sign
limit ``min E(beta) s.t. X beta = y`` with a trained network's realized v (section 8.10).

`run` reads a regression problem (``kind = "regression"``, docs/formats.md; with ``--synth block|gaussian``
it first writes a seeded one to the PROBLEM path, its input), certifies the program and re-checks the
certificate with the independent checker; `Result.write` writes the certificate and the point only
after that. `Result.exit_code`: 0 optimal, 3 when X beta = y is proven inconsistent (the certificate
is written), 2 when nothing could be verified; bad input raises (exit 1). Nothing here imports torch.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

__all__ = ["Config", "Result", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert interpolate``."""
    parser.add_argument(
        "problem", help="regression problem file (.npz or .json, kind = 'regression')"
    )
    parser.add_argument(
        "--p",
        default=None,
        help="exponent p > 1, exact decimal or num/den (3/2: sign descent's eps -> 0 idealization); "
        "required for the l_p program",
    )
    parser.add_argument(
        "--potential",
        choices=("lp", "psi", "E"),
        default="lp",
        help="the program: lp (min ||beta||_p, default), psi (min Q_alpha(beta), the limit of "
        "gradient descent on a depth-2 diagonal network from w+- = alpha 1; needs --alpha) or E "
        "(min (2/3) sum (|beta_i| + v_i^2)^(3/2), the smoothed-sign limit; needs --v)",
    )
    parser.add_argument(
        "--v",
        default=None,
        dest="v_file",
        metavar="FILE.npy",
        help="the realized v of --potential E: a float64 .npy of D entries (the non-dominant "
        "weights min(|w+_i|, |w-_i|) of a trained network)",
    )
    parser.add_argument(
        "--alpha",
        default=None,
        help="initialization scale alpha > 0 of --potential psi, exact decimal or num/den",
    )
    parser.add_argument("-o", "--output", default=None, help="certificate JSON to write")
    parser.add_argument(
        "--export-beta",
        default=None,
        dest="export_beta",
        help="write the certified point beta~ as float64 .npy (rounded once)",
    )
    parser.add_argument(
        "--bits", type=int, default=200, help="precision of the refined point (default 200)"
    )
    parser.add_argument(
        "--assumptions",
        action="store_true",
        help="also check Assumptions 3.2 and 3.8 of arXiv 2410.14158 on the data (exact verdicts)",
    )
    parser.add_argument(
        "--synth",
        choices=("block", "gaussian"),
        default=None,
        help="first write a seeded problem of this kind to PROBLEM",
    )
    parser.add_argument("--N", type=int, default=5, help="rows of --synth data (default 5)")
    parser.add_argument("--D", type=int, default=None, help="columns of --synth data (default 2N)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --synth data (default 0)")


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert interpolate`` run: the problem (or the seeded data to write there), the
    exact p, the refinement's bits, the outputs."""

    problem: str
    p: Fraction | None
    potential: str = "lp"
    alpha: Fraction | None = None
    v_file: str | None = None
    output: str | None = None
    export_beta: str | None = None
    bits: int = 200
    assumptions: bool = False
    synth: str | None = None
    N: int = 5
    D: int | None = None
    seed: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate p, bits, the output paths and the --synth sizes (one line each, before any work)."""
        from certify.errors import MdcertError
        from certify.exact import parse_p
        from experiments.runtime.outputs import check_distinct, check_output_file

        problem, output, export_beta = (
            options["problem"],
            options.get("output"),
            options.get("export_beta"),
        )
        potential, alpha = options.get("potential", "lp"), options.get("alpha")
        v_file = options.get("v_file")
        if v_file is not None and potential != "E":
            raise MdcertError("--v applies to --potential E only")
        if potential == "E":
            if options.get("p") is not None or alpha is not None:
                raise MdcertError("--p and --alpha do not apply to --potential E (give --v)")
            if v_file is None:
                raise MdcertError("--potential E needs --v FILE.npy (the realized v)")
            p = None
        elif potential == "psi":
            from certify.regression.psicheck import parse_alpha

            if options.get("p") is not None:
                raise MdcertError("--p does not apply to --potential psi (give --alpha)")
            if alpha is None:
                raise MdcertError("--potential psi needs --alpha A (the initialization scale)")
            p, alpha = None, parse_alpha(alpha)
        else:
            if alpha is not None:
                raise MdcertError("--alpha applies to --potential psi only")
            if options.get("p") is None:
                raise MdcertError(
                    "the following arguments are required: --p (or --potential psi --alpha A)"
                )
            p = parse_p(options["p"])
        bits = options.get("bits", 200)
        if not 16 <= bits <= 4096:
            raise MdcertError(f"invalid --bits {bits}; give 16..4096")
        for opt, path, suffixes in (
            ("-o", output, (".json",)),
            ("--export-beta", export_beta, (".npy",)),
        ):
            if path is not None:
                check_output_file(path, option=opt, suffixes=suffixes)
        check_distinct(
            {"-o": output, "--export-beta": export_beta},
            {"the problem file": problem, "the --v file": v_file},
        )
        synth, N, D = options.get("synth"), options.get("N", 5), options.get("D")
        if synth is not None:
            if not (1 <= N <= 10**5 and (D is None or 1 <= D <= 10**6)):
                raise MdcertError("--N must be in 1..1e5 and --D in 1..1e6")
            check_output_file(problem, option="PROBLEM", suffixes=(".npz", ".json"))
        return cls(
            problem=problem,
            p=p,
            potential=potential,
            alpha=alpha,
            v_file=v_file,
            output=output,
            export_beta=export_beta,
            bits=bits,
            assumptions=bool(options.get("assumptions", False)),
            synth=synth,
            N=N,
            D=D,
            seed=options.get("seed", 0),
        )


@dataclass(frozen=True, kw_only=True)
class Result:
    """The problem, the assumption reports, the certified solve and the checker's verdict on it."""

    config: Config
    problem: Any
    solve: Any  # `certify.regression.InterpolationResult`: certificate, point, seconds
    check: Any  # the independent checker's result (it accepted the certificate)
    reports: tuple = ()

    @property
    def exit_code(self) -> int:
        from certify.regression import InterpStatus

        return {
            InterpStatus.OPTIMAL: 0,
            InterpStatus.INCONSISTENT: 3,
            InterpStatus.NO_VERIFIED_RESULT: 2,
        }[self.solve.certificate.status]

    def write(self, out: str | None = None) -> None:
        """The certificate JSON to ``out`` (default: the config's ``-o``; none when both are None) and,
        when optimal, beta~ to ``--export-beta``, each atomically."""
        import json

        from certify.regression import InterpStatus
        from experiments.runtime.outputs import write_npy_atomic, write_text_atomic

        cert, out = self.solve.certificate, self.config.output if out is None else out
        if out is not None:
            write_text_atomic(out, json.dumps(cert.to_json(), indent=1) + "\n")
        if self.config.export_beta is not None and cert.status is InterpStatus.OPTIMAL:
            write_npy_atomic(self.config.export_beta, self.solve.point)

    def lines(self, width: int) -> list[str]:
        """The terminal summary (after `write` to the config's paths)."""
        from certify.exact import format_sci
        from certify.regression import InterpStatus
        from experiments.runtime.terminal import width_phrase

        def width(cert) -> str:
            """The enclosure's relative width and the digits it certifies (exact, no float)."""
            if cert.opt_lower is None or cert.opt_upper is None or cert.opt_lower <= 0:
                return ""
            return f" ({width_phrase((cert.opt_upper - cert.opt_lower) / cert.opt_lower)})"

        cfg, problem, cert = self.config, self.problem, self.solve.certificate
        lines = []
        if cfg.synth is not None:
            lines.append(
                f"wrote {cfg.problem}: {cfg.synth} regression data N={cfg.N} D={cfg.D or 2 * cfg.N} "
                f"seed={cfg.seed}"
            )
        lines += [
            f"{report.name}: {report.verdict.value.upper()} - {report.message}"
            for report in self.reports
        ]
        what = {
            "lp": f"p = {cfg.p}",
            "psi": f"potential psi, alpha = {cfg.alpha}",
            "E": f"potential E, v from {cfg.v_file}",
        }[cfg.potential]
        lines.append(
            f"problem: N={problem.N} D={problem.D} ({problem.data_hash()[:19]}...), {what}"
        )
        if cert.status is InterpStatus.OPTIMAL and cfg.potential == "psi":
            lines.append(
                f"OPT = min Q_alpha(beta) in [{format_sci(cert.opt_lower, 12)}, "
                f"{format_sci(cert.opt_upper, 12)}]{width(cert)}"
            )
            lines.append(
                f"||beta^ - beta*||_2 <= {format_sci(cert.distance_upper)} (beta^ solves X beta = y "
                "exactly; beta* the gradient-descent limit)"
            )
        elif cert.status is InterpStatus.OPTIMAL and cfg.potential == "E":
            lines.append(
                f"OPT = min E(beta) in [{format_sci(cert.opt_lower, 12)}, "
                f"{format_sci(cert.opt_upper, 12)}]{width(cert)}"
            )
            lines.append(
                f"||beta^ - beta*||_2 <= {format_sci(cert.distance_upper)} (beta^ solves X beta = y "
                "exactly; beta* the minimizer of E with the given v)"
            )
        elif cert.status is InterpStatus.OPTIMAL:
            lines.append(
                f"OPT = min ||beta||_p in [{format_sci(cert.opt_lower, 12)}, "
                f"{format_sci(cert.opt_upper, 12)}]{width(cert)}"
            )
            lines.append(
                f"||beta~ - beta*||_p <= {format_sci(cert.distance_upper)} (beta~ to the exact minimizer; "
                f"distance from beta~ to the affine set <= {format_sci(cert.residual_upper)})"
            )
        elif cert.status is InterpStatus.INCONSISTENT:
            lines.append(
                "X beta = y has no solution: proven by an exact g with X^T g = 0 and y^T g != 0"
            )
        else:
            lines.append(f"no verified result: {cert.reason}")
        lines.append(
            f"checked by the independent checker: {len(self.check.checked)} claims; solve "
            f"{self.solve.seconds:.2f} s wall"
        )
        if cfg.output is not None:
            lines.append(f"wrote {cfg.output}")
        if cfg.export_beta is not None and cert.status is InterpStatus.OPTIMAL:
            point = "beta~" if cfg.potential == "lp" else "beta^"
            lines.append(f"wrote {cfg.export_beta} ({point} as float64, rounded once)")
        return lines

    def messages(self) -> list[str]:
        """The lines for stderr: data outside the sign-descent setting (N >= D)."""
        if self.problem.N < self.problem.D:
            return []
        return [
            f"warning: N = {self.problem.N} >= D = {self.problem.D}: the sign-descent theory needs D > N "
            "(overparameterized); the program is still certified where it is well posed"
        ]


def load_v(path: str, D: int):
    """The realized v of ``--potential E``: a float64 ``.npy`` of D finite entries (read exactly)."""
    import numpy as np

    from certify.errors import MdcertError
    from certify.regression.problem import exact_float64

    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise MdcertError(f"--v {path!r}: not a readable .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise MdcertError(f"--v {path!r}: not a .npy array (an .npz archive?)")
    v = exact_float64("v", arr, 1)
    if v.shape != (D,):
        raise MdcertError(f"--v {path!r}: v must have D = {D} entries, got {v.shape[0]}")
    return v


def run(config: Config) -> Result:
    """(Write the --synth data to PROBLEM,) load, check the assumptions if asked, certify and re-check;
    a certificate the independent checker rejects is a RuntimeError (a bug), never a result."""
    from certify.regression import (
        certify_interpolation,
        check_interpolation,
        load_regression,
        regression_problem,
    )

    if config.synth is not None:
        regression_problem(config.synth, N=config.N, D=config.D, seed=config.seed).save(
            config.problem
        )
    problem = load_regression(config.problem)
    reports: tuple = ()
    if config.assumptions:
        from theorems.signdescent import assumption_3_2, assumption_3_8

        reports = (assumption_3_2(problem), assumption_3_8(problem))
    if config.potential == "psi":
        from certify.regression.psi import certify_psi
        from certify.regression.psicheck import check_psi

        solve = certify_psi(problem, config.alpha, bits=config.bits)
        check = check_psi(problem, solve.certificate, alpha=config.alpha)
    elif config.potential == "E":
        from certify.regression.echeck import check_e
        from certify.regression.eprog import certify_e

        v = load_v(config.v_file, problem.D)
        solve = certify_e(problem, v, bits=config.bits)
        check = check_e(problem, solve.certificate, v=v)
    else:
        solve = certify_interpolation(problem, config.p, bits=config.bits)
        check = check_interpolation(problem, solve.certificate, p=config.p)
    if not check.ok:  # never write a certificate the checker does not accept
        raise RuntimeError(
            f"the independent checker rejected the solver's certificate: {check.failures[0]}"
        )
    return Result(config=config, problem=problem, solve=solve, check=check, reports=reports)
