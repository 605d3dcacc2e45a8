"""``mdcert regpath`` against hostile command lines: radii, p, r(R), starts; the run directory never
contains the problem file and never replaces user files."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

P = "{d}/good.npz"
CASES = [
    *[
        (["regpath", P, "--p", "2", *extra, "-o", "{o}/run"], match)
        for extra, match in [
            (["--radii", "junk"], r"START:STOP:COUNT"),
            (["--radii", "1:10:3:4"], r"START:STOP:COUNT"),
            (["--radii", "0:10:3"], r"finite and positive"),
            (["--radii", "nan:10:3"], r"finite and positive"),
            (["--radii", "1e-400:1:3"], r"finite and positive"),
            (["--radii", "1:1e400:3"], r"finite and positive"),
            (["--radii", "10:1:3"], r"START 10\.0 > STOP 1\.0"),
            (["--radii", "1:10:0"], r"COUNT must be >= 1"),
            (["--radii", "1:10:1"], r"COUNT 1 needs START == STOP"),
            (["--radii", "1:10:99999999999"], r"at most"),
            (["--starts", "0", "--no-svm-start", "--no-dual-start"], r"no starts"),
            (["--starts", "99999999999"], r"--starts"),
            (["--seed=-1"], r"--seed -1"),
            (["--digits", "3"], r"invalid --digits 3"),
            (["--digits", "99999999"], r"invalid digits"),
            (["--loss", "hinge"], r"invalid choice: 'hinge'"),
            (["--joint"], r"needs --r-of-R"),
            (["--joint", "--r-of-R", "__import__('os')"], r"function call"),
            (["--joint", "--r-of-R", "R.__class__"], r"Attribute is not allowed"),
            (
                ["--joint", "--r-of-R", "log(R-1)", "--radii", "1:10:2"],
                r"cannot be evaluated at R = 1",
            ),
            (["--joint", "--r-of-R", "R**R**R"], r"cannot be evaluated"),
            (["--joint", "--r-of-R", "exp(exp(exp(exp(R))))"], r"cannot be evaluated"),
            (["--joint", "--r-of-R", "10**999"], r"cannot be evaluated"),
            (["--joint", "--r-of-R", "-R"], r"expected one argument"),
            (["--joint", "--r-of-R", "R", "--md-steps", "99999999999999999999"], r"--md-steps"),
            (["--joint", "--r-of-R", "R", "--md-lr", "0"], r"invalid --md-lr"),
            (["--joint", "--r-of-R", "R", "--md-lr", "nan"], r"invalid --md-lr"),
            (["--joint", "--r-of-R", "R", "--alpha", "9,9"], r"not a token index"),
            (["--r-of-R", "R"], r"only used with --joint"),
            (["--p", "1"], r"--p > 1"),
            (["--p", "1e400"], r"could not be certified"),
        ]
    ],
    (
        [
            "regpath",
            "joint-example",
            "--p",
            "1.0000000000000000000000000001",
            "--joint",
            "--r-of-R",
            "R",
            "-o",
            "{o}/run",
        ],
        r"could not be certified",
    ),
    (["regpath", P, "--p", "2", "-o", "{d}/run_nonempty"], r"not empty; use --overwrite"),
    (["regpath", P, "--p", "2", "-o", "{d}/afile/run"], r"is a file, not a directory"),
    (["regpath", P, "--p", "2", "-o", ""], r"-o is empty"),
    # the run directory is replaced when written: it must not be or contain the problem file
    (["regpath", P, "--p", "2", "-o", "{d}"], r"contains the problem file"),
    (["regpath", P, "--p", "2", "-o", "{d}", "--overwrite"], r"contains the problem file"),
    (
        ["regpath", "{d}/good_link.npz", "--p", "2", "-o", "{d}/adir.npz/..", "--overwrite"],
        r"contains the problem",
    ),
    (
        ["regpath", P, "--p", "2", "-o", "{d}/userdir", "--overwrite"],
        r"not an mdcert run directory",
    ),
    (
        ["regpath", P, "--p", "2", "-o", "{d}/run_nonempty", "--overwrite"],
        r"no valid \.mdcert-run marker",
    ),
    (
        ["regpath", P, "--p", "2", "-o", "{d}/study_dir", "--overwrite"],
        r"not an mdcert run directory",
    ),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_regpath_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
