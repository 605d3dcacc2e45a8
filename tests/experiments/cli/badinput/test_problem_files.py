"""Bad problem files through every command that reads one (certify, verify, check, regpath): one line,
exit 1, nothing written, inputs unchanged (the loader is shared: certify.problem.AttentionProblem.load)."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

#: file -> what the one line must say
BAD_PROBLEMS = [
    ("missing.npz", r"not found.*mdcert synth"),
    ("dangling.npz", r"not found"),
    ("adir.npz", r"is a directory"),
    ("prob.txt", r"unknown problem format"),
    ("unreadable.npz", r"cannot read problem.*Input/output error"),
    ("unreadable.json", r"cannot read problem.*Input/output error"),
    ("nokeys.npz", r"lacks X"),
    ("str.npz", r"X must be a numeric array.*<U1"),
    ("complex.npz", r"X must be a numeric array.*complex"),
    ("object.npz", r"cannot read problem.*[Oo]bject"),
    ("zerod.npz", r"X must have 3 dimensions"),
    ("nan.npz", r"X contains NaN or Inf"),
    ("inf.npz", r"X contains NaN or Inf \(first at index \(1, 2, 1\)\)"),
    ("y0.npz", r"labels must be -1 or \+1; y\[1\] = 0\.0"),
    ("y2.npz", r"labels must be -1 or \+1; y\[0\] = 2\.0"),
    ("yshape.npz", r"y must have shape \(2,\)"),
    ("T1.npz", r"T >= 2"),
    ("n0.npz", r"n >= 1"),
    ("alpha_str.npz", r"alpha must be 'opt' or a list of 2 integer"),
    ("alpha_range.npz", r"alpha\[1\] = 7 is not a token index in 0\.\.2"),
    ("alpha_neg.npz", r"alpha\[1\] = -1 is not a token index"),
    ("lengths_bad.npz", r"lengths\[0\] = 0 leaves fewer than 2 tokens"),
    ("alpha_dict.json", r"alpha must be 'opt' or a list"),
    ("npy_named.npz", r"not a \.npz archive"),
    ("empty.npz", r"not a \.npz archive"),
    ("trunc.npz", r"cannot read problem.*zip"),
    ("corrupt.npz", r"cannot read problem.*zip"),
    ("empty.json", r"not valid JSON"),
    ("space.json", r"not valid JSON"),
    ("corrupt.json", r"not valid JSON"),
    ("binary.json", r"not valid JSON"),
    ("deep.json", r"cannot read problem.*recursion"),
    ("deep_obj.json", r"cannot read problem.*recursion"),
    ("bigint.json", r"cannot read problem.*4300 digits"),
    ("bigexp.json", r"X\[0, 0, 0\] = 1E\+999 is beyond the float64 range"),
    ("nan.json", r"X contains NaN or Inf"),
    ("list.json", r"JSON object with keys X, y, z, v"),
    ("ragged.json", r"ragged"),
    ("tie.npz", r"tied in example"),
]

COMMANDS = {
    "certify": ["certify", "{d}/FILE", "--p", "2"],
    "verify": ["verify", "{d}/FILE", "{d}/cert.json"],
    "check": ["check", "{d}/FILE", "--p", "2"],
    "regpath": ["regpath", "{d}/FILE", "--p", "2", "--radii", "1:10:2", "-o", "{o}/run"],
}

CASES = [
    ([a.replace("FILE", f) for a in argv], m)
    for argv in COMMANDS.values()
    for f, m in BAD_PROBLEMS
    # verify and check take tied problems (no alpha needed to read or to check a theorem's hypotheses)
    if not (f == "tie.npz" and argv[0] in ("verify", "check"))
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_bad_problem_file(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
