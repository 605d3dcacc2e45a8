"""``mdcert check`` against hostile command lines: theorem, p, path options, W0 files, the loss (refused
before sympy sees it), the report output (never an input): one line, exit 1, nothing written."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

P = "{d}/good.npz"
INIT = ["--init", "{d}/W0.npy", "--lr", "0.1"]
CASES = [
    (["check", P, "--p", "2", "--theorem", "99"], r"unknown theorem"),
    (["check", P, "--p", "2", "--theorem", ""], r"unknown theorem ''"),
    (["check", P, "--p", "1"], r"--p > 1"),
    (["check", P], r"give --p, the exponent"),
    (["check", "--p", "2"], r"give a problem file \(or --run DIR --trajectory K"),
    (["check", P, "--p", "2", "--normalize"], r"--normalize is the step rule of a training path"),
    (["check", "--run", "{d}", "--trajectory", "0"], r"no summary.json"),
    (["check", "--run", "{d}"], r"--run DIR needs --trajectory K"),
    (["check", P, "--p", "2", "--trajectory", "0"], r"--trajectory K needs --run DIR"),
    (["check", P, "--p", "2", "--steps", "0"], r"--steps 0"),
    (["check", P, "--p", "2", "--steps", "99999999999999999999"], r"at most 1e9"),
    (["check", P, "--p", "2", "--digits", "0"], r"invalid --digits 0"),
    (["check", P, "--p", "2", "--digits", "99999999999999999999"], r"invalid --digits"),
    (["check", P, "--p", "2", "--init", "{d}/W0.npy"], r"--init and --lr together"),
    (
        ["check", P, "--p", "2", "--alpha", "locally-optimal-from-training"],
        r"needs a training path",
    ),
    (["check", P, "--p", "2", "--alpha", "9,9"], r"not a token index"),
    (["check", P, "--p", "2", "--mu", "junk"], r"invalid --mu"),
    (["check", P, "--p", "2", "--mu", "nan"], r"invalid --mu"),
    (["check", P, "--p", "2", "--mu", "inf"], r"invalid --mu"),
    (["check", P, "--p", "2", "--R=-1"], r"invalid --R.*>= 0"),
    (["check", P, "--p", "2", "--R", "1e99999999"], r"invalid --R"),
    # the mirror-descent path: step size, p range of the float64 path, memory, W0 files
    (["check", P, "--p", "2", *INIT[:3], "0"], r"must be > 0"),
    (["check", P, "--p", "2", *INIT[:3], "nan"], r"invalid --lr"),
    (["check", P, "--p", "2", *INIT[:3], "-1"], r"invalid --lr"),
    (["check", P, "--p", "2", *INIT[:3], "1e400"], r"invalid --lr"),
    (["check", P, "--p", "2", *INIT[:3], "1e-400"], r"invalid --lr"),
    (["check", P, "--p", "2", *INIT[:3], "5e-324"], r"invalid --lr"),
    (["check", P, "--p", "2", *INIT[:3], "1e999999999"], r"invalid --lr"),
    (["check", P, "--p", "1e400", *INIT], r"outside the range of the float64 training paths"),
    (["check", P, "--p", "1.0000000000000000000000000001", *INIT], r"outside the range"),
    (["check", P, "--p", "2", *INIT, "--steps", "1000000000"], r"would need about .* of memory"),
    (["check", P, "--p", "2", *INIT, "--loss", "hinge"], r"training supports the losses"),
    *[
        (["check", P, "--p", "2", "--init", f"{{d}}/{f}", "--lr", "0.1"], m)
        for f, m in [
            ("missing.npy", r"--init file not found"),
            ("dangling.npz", r"--init file not found"),
            ("adir.npz", r"is a directory"),
            ("W0_shape.npy", r"shape \(2, 2\)"),
            ("W0_scalar.npy", r"shape \(2, 2\)"),
            ("W0_nan.npy", r"NaN or Inf"),
            ("W0_inf.npy", r"NaN or Inf"),
            ("W0_complex.npy", r"real numeric.*complex"),
            ("W0_str.npy", r"real numeric"),
            ("W0_zero.npy", r"zero matrix"),
            ("W0_two.npz", r"holds 2 arrays"),
            ("W0.txt", r"not a NumPy \.npy file"),
            ("empty.npz", r"not a NumPy \.npy file"),
            ("corrupt.npz", r"cannot read --init"),
            ("W0_trunc.npy", r"cannot read --init"),
            ("W0_object.npy", r"cannot read --init.*[Oo]bject"),
            ("unreadable.npz", r"Input/output error"),
        ]
    ],
    # the loss: refused before any work (and before sympy sees it)
    *[
        (["check", P, "--p", "2", "--loss", loss], m)
        for loss, m in [
            ("__import__('os').getcwd()", r"function call .* not allowed"),
            ("u.__class__", r"Attribute is not allowed"),
            ("9**9**9**9", r"tower of powers"),
            ("u" + "**u" * 29, r"tower of powers"),
            ("exp(" * 80 + "u" + ")" * 80, r"nests functions more than 6 deep"),
            ("10**999*" * 34 + "u", r"numbers too large"),
            ("u^2", r"write powers as \*\*"),
            ("exp(-u) + I", r"the name 'I' \(the imaginary unit I\) is not allowed"),
            ("-u + I", r"the name 'I'"),
            ("-u + zoo", r"the name 'zoo'"),
            ("-u + oo", r"the name 'oo'"),
            ("-u + nan", r"the name 'nan'"),
            ("-u + sqrt(-1)", r"the constant I|the number I|not allowed"),
            ("-u + x", r"the name 'x'"),
            ("", r"invalid loss"),
            ("import os", r"cannot parse"),
            ("u" * 600, r"too long"),
            ("(" * 200_000 + "u" + ")" * 200_000, r"too long"),
        ]
    ],
    # the report: never an input, never a directory
    (["check", P, "--p", "2", "--json", "{o}/nodir/r.json"], r"does not exist"),
    (["check", P, "--p", "2", "--json", "{d}/adir.npz"], r"is a directory"),
    (["check", P, "--p", "2", "--json", "{d}/afile/x.json"], r"not a directory"),
    (["check", P, "--p", "2", "--json", "{d}/good.npz"], r"is the problem file"),
    (["check", P, "--p", "2", "--json", "{d}/good_link.npz"], r"is the problem file"),
    (
        ["check", "{d}/good.json", "--p", "2", "--json", "{d}/good_hard.json"],
        r"is the problem file",
    ),
    (["check", P, "--p", "2", *INIT, "--json", "{d}/W0.npy"], r"is the --init file"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_check_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
