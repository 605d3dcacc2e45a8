"""The exported solution of a certificate, shared by ``mdcert certify`` and ``mdcert verify``
(docs/formats.md, "exports"): the ``--export-w`` / ``--export-direction`` options, their paths checked
before any work, the solution prepared from a verified certificate, written atomically and reported;
and ``--memory-budget`` sizes."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = [
    "add_export_options",
    "check_export_paths",
    "export_lines",
    "parse_size",
    "prepare_export",
    "write_export",
]


def parse_size(text: str) -> int:
    """Bytes from ``123``, ``512M``, ``4G``, ``1.5GiB`` (binary units K, M, G, T)."""
    import re

    from certify.errors import MdcertError

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), flags=re.IGNORECASE)
    value = float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ") if m else 0.0
    if not m or not 1 <= value < 2**62:
        raise MdcertError(
            f"invalid --memory-budget {text!r}; give a size like 4G, 512M or a number of bytes"
        )
    return int(value)


# ------------------------------------------------------------------ exports (shared with verify)
def add_export_options(parser: argparse.ArgumentParser) -> None:
    """``--export-w`` and ``--export-direction`` (shared with ``mdcert verify``)."""
    parser.add_argument(
        "--export-w",
        default=None,
        metavar="W.npy",
        help="also write the certified feasible point as float64 .npy: W (d x d, row-major, "
        "W[j,k] = w[j*d+k]) for the attention SVM, v (length d) for the decoder SVM",
    )
    parser.add_argument(
        "--export-direction",
        default=None,
        metavar="U.npy",
        help="also write its unit direction w/||w||_p as float64 .npy (same shape)",
    )


def check_export_paths(
    *, export_w: str | None, export_direction: str | None, output: str | None, inputs: dict
) -> None:
    """Validate the export paths before any work: .npy names, not an input, not another output."""
    from experiments.runtime.outputs import check_distinct, check_output_file

    for opt, path in (("--export-w", export_w), ("--export-direction", export_direction)):
        if path is not None:
            check_output_file(path, option=opt, suffixes=(".npy",))
    check_distinct(
        {"-o": output, "--export-w": export_w, "--export-direction": export_direction}, inputs
    )


def prepare_export(
    cert, *, export_w: str | None, export_direction: str | None, problem=None
) -> tuple[Any, list[str]]:
    """``(solution, notes)``: the `CertifiedSolution` to export (None when no export is asked for or
    nothing was certified; a note for stderr then). Computed before any output is written, so a
    failure (the independent checker rejecting the certificate) writes nothing."""
    from certify import CertStatus, certified_solution

    wanted = [path for path in (export_w, export_direction) if path is not None]
    if not wanted:
        return None, []
    if cert.status is not CertStatus.OPTIMAL:
        return None, [
            f"no certified solution (status {cert.status.value}): {', '.join(wanted)} not written"
        ]
    return certified_solution(cert, problem=problem), []


def write_export(sol, *, export_w: str | None, export_direction: str | None) -> None:
    """Write the arrays of a `CertifiedSolution` to the requested paths (each atomically)."""
    from experiments.runtime.outputs import write_npy_atomic

    if sol is None:
        return
    for path, arr in ((export_w, sol.point), (export_direction, sol.direction)):
        if path is not None:
            write_npy_atomic(path, arr)


def export_lines(sol, *, export_w: str | None, export_direction: str | None) -> list[str]:
    """The terminal lines of a written export (none when nothing was exported)."""
    if sol is None:
        return []
    written = [
        f"{path} ({what})"
        for path, what in ((export_w, "point"), (export_direction, "direction"))
        if path is not None
    ]
    return [sol.describe(), "wrote " + ", ".join(written)]
