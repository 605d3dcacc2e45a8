"""``mdcert interpolate`` and ``mdcert signdescent`` against hostile command lines: one line, exit 1,
nothing written, inputs unchanged (regression problems, docs/formats.md)."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

_FILES = [
    ("missing.npz", r"not found.*--synth block"),
    ("adir.npz", r"is a directory"),
    ("good.npz", r"not a regression problem"),
    ("reg_nan.npz", r"X entry \(0, 1\) is not finite"),
    ("reg_bigint.npz", r"X\[0, 0\] = 9007199254740993 \(int64\) would round"),
    ("reg_noy.npz", r"missing key\(s\) y"),
    ("reg_shape.npz", r"y has 3 entries but X has 2 rows"),
    ("reg_dupkey.json", r"duplicate|twice|key"),
]

CASES = [
    *[(["interpolate", f"{{d}}/{f}", "--p", "1.5"], m) for f, m in _FILES],
    (["interpolate", "{d}/reg.npz", "--p", "1"], r"p"),
    (["interpolate", "{d}/reg.npz", "--p", "abc"], r"p"),
    (["interpolate", "{d}/reg.npz", "--p", "1.5", "--bits", "4"], r"invalid --bits 4"),
    (["interpolate", "{d}/reg.npz", "--p", "1.5", "-o", "{d}/reg.npz"], r"reg.npz"),
    (["interpolate", "{d}/reg.npz", "--p", "1.5", "-o", "{o}/nodir/c.json"], r"does not exist"),
    (["interpolate", "{d}/reg.npz", "--p", "1.5", "--export-beta", "{o}/b.txt"], r"\.npy"),
    (["interpolate", "{d}/reg.npz"], r"--p"),
    *[(["signdescent", f"{{d}}/{f}", "--steps", "10", "-o", "{o}/run"], m) for f, m in _FILES[:4]],
    (
        ["signdescent", "{d}/reg.npz", "--eps", "0", "-o", "{o}/run"],
        r"eps values must be finite and positive",
    ),
    (
        ["signdescent", "{d}/reg.npz", "--eps=-1e-3", "-o", "{o}/run"],
        r"eps values must be finite and positive",
    ),
    (
        ["signdescent", "{d}/reg.npz", "--alpha", "0", "-o", "{o}/run"],
        r"alpha values must be finite and positive",
    ),
    (
        ["signdescent", "{d}/reg.npz", "--lr", "abc", "-o", "{o}/run"],
        r"--lr must be comma-separated numbers",
    ),
    (
        ["signdescent", "{d}/reg.npz", "--rules", "sgd", "-o", "{o}/run"],
        r"--rules must be comma-separated",
    ),
    (
        ["signdescent", "{d}/reg.npz", "--betas", "0.9", "-o", "{o}/run"],
        r"--betas needs two numbers",
    ),
    (["signdescent", "{d}/reg.npz", "--steps", "0", "-o", "{o}/run"], r"steps must be in 1..1e9"),
    (
        ["signdescent", "{d}/reg.npz", "--steps", "10", "-o", "{d}/run_linked"],
        r"overwrite|exists|not empty",
    ),
    (
        ["signdescent", "{d}/reg_inc.json", "--steps", "10", "-o", "{o}/run"],
        r"no solution|no certified optimum",
    ),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_regression_commands_bad_command_line(
    argv, match, rc, prefix, files, tmp_path, capsys
) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
