"""``mdcert data`` against hostile command lines (all refused before the corpus or the encoder is read)."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

SUB = "mdcert data "  # argparse errors of a source carry its name ('mdcert data text: error: ...')
CASES = [
    (["data"], r"give a source"),
    (["data", "bogus", "-o", "{o}/x.npz"], r"invalid choice: 'bogus'"),
    *[
        (["data", "text", *extra, "-o", "{o}/x.npz"], m)
        for extra, m in [
            (["--n", "0"], r"invalid --n 0"),
            (["--n=-5"], r"invalid --n -5"),
            (["--T", "1"], r"invalid --T 1"),
            (["--T", "9999"], r"at most 512 tokens"),
            (["--d", "0"], r"invalid --d 0"),
            (["--d", "99999"], r"invalid --d"),
            (["--seed=-1"], r"invalid --seed -1"),
            (["--limit", "0"], r"invalid --limit 0"),
            (["--limit=-1"], r"invalid --limit -1"),
        ]
    ],
    (["data", "text", "--embed", "bogus", "-o", "{o}/x.npz"], r"invalid choice: 'bogus'", 1, SUB),
    (["data", "text", "-o", "{o}/x.txt"], r"use a \.npz or \.json file name"),
    (["data", "text", "-o", "{o}/nodir/x.npz"], r"does not exist"),
    (["data", "text", "-o", "{d}/adir.npz"], r"is a directory"),
    (["data", "text", "-o", ""], r"-o is empty"),
    *[
        (["data", "digits", *extra, "-o", "{o}/x.npz"], m)
        for extra, m in [
            (["--classes", "3,3"], r"two different digits"),
            (["--classes", "3"], r"two different digits"),
            (["--classes", "a,b"], r"two different digits"),
            (["--classes", "3,99"], r"two different digits"),
            (["--n", "0"], r"invalid --n 0"),
            (["--d", "999"], r"invalid --d"),
        ]
    ],
    (["data", "digits", "--patch", "3", "-o", "{o}/x.npz"], r"invalid choice: 3", 1, SUB),
    (["data", "digits", "-o", "{o}/x.txt"], r"use a \.npz or \.json file name"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_data_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
