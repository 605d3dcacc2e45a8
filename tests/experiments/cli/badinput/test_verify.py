"""``mdcert verify`` against hostile command lines and certificates that are not certificates."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

P, C = "{d}/good.npz", "{d}/cert.json"
NOT = "NOT verified: "  # a failing claim is reported with this prefix (exit 1)
CASES = [
    (["verify", P, "{d}/missing.json"], r"certificate file not found"),
    (["verify", P, "{d}/adir.npz"], r"is a directory"),
    (["verify", P, "{d}/cert_trunc.json"], r"not valid JSON"),
    (["verify", P, "{d}/cert_bin.json"], r"not valid JSON"),
    (["verify", P, "{d}/cert_empty.json"], r"not valid JSON"),
    (["verify", P, "{d}/cert_list.json"], r"must be a JSON object"),
    (["verify", P, "{d}/cert_deep.json"], r"nests arrays/objects 200000 deep"),
    (["verify", P, "{d}/good.npz"], r"not valid JSON"),
    (["verify", P, "{d}/unreadable.json"], r"Input/output error"),
    (["verify", P, C, "--p", "junk"], r"invalid p"),
    (["verify", P, C, "--p", "1"], r"p > 1"),
    (["verify", P, C, "--alpha", "problem"], r"stores no alpha"),
    (["verify", P, C, "--alpha", "9,9"], r"alpha\[0\] = 9 is not a token index"),
    (["verify", P, C, "--svm", "bogus"], r"invalid choice"),
    (["verify", P], r"required: certificate"),
    (["verify", P, C, "--p", "3"], r"^NOT verified: p: certificate p = 2, expected 3$", 1, NOT),
    (
        ["verify", P, C, "--p", "1e400"],
        r"^NOT verified: p: certificate p = 2, expected 1e400$",
        1,
        NOT,
    ),
    (
        ["verify", P, C, "--svm", "decoder"],
        r"svm: certificate svm = attention, expected decoder",
        1,
        NOT,
    ),
    (["verify", "{d}/other.npz", C], r"data_hash: .*other data", 1, NOT),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_verify_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
