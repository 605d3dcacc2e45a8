"""``mdcert info`` against hostile command lines: the shared problem loader's refusals and the --json output
(never an input, never a directory). One line, exit 1, nothing written, inputs unchanged."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

CASES = [
    *[
        (["info", f"{{d}}/{f}"], m)
        for f, m in [
            ("missing.npz", r"not found.*mdcert synth"),
            ("adir.npz", r"is a directory"),
            ("prob.txt", r"unknown problem format"),
            ("nokeys.npz", r"lacks X"),
            ("str.npz", r"X must be a numeric array"),
            ("object.npz", r"cannot read problem.*[Oo]bject"),
            ("corrupt.npz", r"cannot read problem.*zip"),
            ("corrupt.json", r"not valid JSON"),
            ("bigint.json", r"4300 digits"),
            ("deep.json", r"recursion"),
            ("ragged.json", r"ragged"),
            ("nan.json", r"X contains NaN or Inf"),
            ("unreadable.npz", r"Input/output error"),
        ]
    ],
    (["info", "{d}/good.json", "--json", "{d}/good.json"], r"is the problem file"),
    (["info", "{d}/good.json", "--json", "{d}/good_hard.json"], r"is the problem file"),
    (["info", "{d}/good.npz", "--json", "{o}/nodir/x.json"], r"does not exist"),
    (["info", "{d}/good.npz", "--json", "{d}/adir.npz"], r"\.json|is a directory"),
    (["info", "{d}/good.npz", "--json", "{o}/x.txt"], r"\.json"),
    (["info"], r"the following arguments are required: problem"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_info_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
