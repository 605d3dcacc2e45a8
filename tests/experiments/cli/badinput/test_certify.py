"""``mdcert certify`` against hostile command lines: one line, exit 1, nothing written, inputs unchanged."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

P = "{d}/good.npz"
CASES = [
    *[
        (["certify", P, "--p", p], match)
        for p, match in [
            ("1", r"needs p > 1"),
            ("0.5", r"needs p > 1"),
            ("-2", r"needs p > 1"),
            ("1e-400", r"needs p > 1"),
            ("inf", r"inf is not supported"),
            ("nan", r"not a number"),
            ("abc", r"e\.g\. 1\.75"),
            ("1e400000", r"e\.g\. 1\.75"),
            ("1/0", r"e\.g\. 1\.75"),
            ("", r"e\.g\. 1\.75"),
            ("1_5", r"e\.g\. 1\.75"),
            ("\uff12", r"e\.g\. 1\.75"),
            ("9" * 5000, r"invalid p"),
        ]
    ],
    (["certify", P, "--p=-2"], r"needs p > 1"),
    (["certify", P], r"required: --p"),
    (["certify", P, "--p", "2", "--alpha", "-1,0"], r"expected one argument.*--opt=-1"),
    (["certify", P, "--p", "2", "--digits", "0"], r"invalid digits 0"),
    (["certify", P, "--p", "2", "--digits", "-1"], r"invalid digits -1"),
    (["certify", P, "--p", "2", "--digits", "2001"], r"invalid digits 2001"),
    (["certify", P, "--p", "2", "--digits", "99999999999999999999999"], r"invalid digits"),
    (["certify", P, "--p", "2", "--digits", "abc"], r"invalid int value"),
    (["certify", P, "--p", "2", "--svm", "bogus"], r"invalid choice: 'bogus'"),
    (["certify", P, "--p", "2", "--alpha", "junk"], r"invalid alpha 'junk'"),
    (
        ["certify", P, "--p", "2", "--alpha", "0"],
        r"one token index per example \(2\), got 1: \[0\]",
    ),
    (["certify", P, "--p", "2", "--alpha", "0,,1"], r"invalid alpha"),
    (["certify", P, "--p", "2", "--alpha", ","], r"invalid alpha"),
    (["certify", P, "--p", "2", "--alpha", "0.5,1"], r"invalid alpha"),
    (
        ["certify", P, "--p", "2", "--alpha", "99999999999999999999999,0"],
        r"alpha must be 'opt' or a list",
    ),
    (["certify", P, "--p", "2", "--time-limit", "nan"], r"--time-limit"),
    (["certify", P, "--p", "2", "--time-limit", "-1"], r"--time-limit -1"),
    (["certify", P, "--p", "2", "--time-limit", "inf"], r"--time-limit inf"),
    (["certify", P, "--p", "2", "--time-limit", "1e400"], r"--time-limit inf"),
    # outputs: suffix, directories, and never an input (same file, symlink, hard link, relative path)
    (["certify", P, "--p", "2", "-o", "{o}/c.txt"], r"must be a \.json file"),
    (["certify", P, "--p", "2", "-o", "{o}/nodir/c.json"], r"does not exist"),
    (["certify", P, "--p", "2", "-o", "{d}/afile/c.json"], r"not a directory"),
    (["certify", P, "--p", "2", "-o", "{d}/adir.npz"], r"must be a \.json file"),
    (["certify", P, "--p", "2", "-o", "/proc/c.json"], r"not writable"),
    (["certify", P, "--p", "2", "-o", ""], r"must be a \.json file|empty"),
    (["certify", "{d}/good.json", "--p", "2", "-o", "{d}/good.json"], r"is the problem file"),
    (["certify", "{d}/good.json", "--p", "2", "-o", "{d}/good_hard.json"], r"is the problem file"),
    (
        ["certify", "{d}/good.json", "--p", "2", "-o", "{d}/adir.npz/../good.json"],
        r"is the problem file",
    ),
    (["certify", "{d}/good_hard.json", "--p", "2", "-o", "{d}/good.json"], r"is the problem file"),
    (["certify", P, "--p", "2", "--export-w", "{d}/good.npz"], r"\.npy"),
    (
        ["certify", P, "--p", "2", "--export-w", "{o}/w.npy", "--export-direction", "{o}/w.npy"],
        r"same file",
    ),
    (["certify", P, "--p", "2", "-o", "{o}/c.json", "--export-w", "{o}/c.json"], r"\.npy"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_certify_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
