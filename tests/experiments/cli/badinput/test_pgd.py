"""``mdcert pgd`` against hostile command lines: grid values, output directory, problem files (one line,
exit 1, inputs unchanged, nothing written)."""

from __future__ import annotations

import numpy as np
import pytest

from certify import classification_problem
from tests.experiments.cli.badinput.kit import check_case, params

P = "{d}/cls_good.npz"
CASES = [
    *[
        (["pgd", P, *extra, "-o", "{o}/run"], match)
        for extra, match in [
            (["--p", "1"], r"--p values must lie in \(1, 20\]"),
            (["--p", "25"], r"--p values must lie in \(1, 20\]"),
            (["--p", "junk"], r"--p must be comma-separated numbers"),
            (["--p", "2,2"], r"--p has a repeated value"),
            (["--lr", "0"], r"--lr values must be finite and > 0"),
            (["--lr", "nan"], r"--lr values must be finite and > 0"),
            (["--lr=-1"], r"--lr values must be finite and > 0"),
            (["--inits", "0"], r"--inits must be an integer in \[1, 4096\]"),
            (["--steps", "0"], r"--steps must be an integer"),
            (["--records", "1"], r"--records must be an integer"),
            (["--init-scale", "nan"], r"--init-scale must be finite"),
            (["--seed=-1"], r"--seed -1"),
            (["--digits", "0"], r"invalid --digits 0"),
            (["--loss", "hinge"], r"invalid choice: 'hinge'"),
        ]
    ],
    (["pgd", P], r"-o RUN is required"),
    (
        ["pgd", "{d}/good.npz", "-o", "{o}/run"],
        r"is an attention problem; mdcert pgd needs a classification",
    ),
    (["pgd", "{d}/cls_nan.npz", "-o", "{o}/run"], r"finite|NaN|nan"),
    (["pgd", "{d}/no_such_file.npz", "-o", "{o}/run"], r"(?i)not found|does not exist|no such"),
    (["pgd", P, "-o", "{d}/run_nonempty"], r"not empty; use --overwrite"),
    (["pgd", P, "-o", ""], r"-o is empty"),
    (["pgd", P, "-o", "{d}"], r"contains the problem file"),
    (["pgd", P, "-o", "{d}/userdir", "--overwrite"], r"not an mdcert run directory"),
]


@pytest.fixture(scope="module")
def cls_files(files):
    """Classification inputs added once to the shared directory (before any case takes its digest)."""
    if not (files / "cls_good.npz").exists():
        pr = classification_problem(n=12, d=3, seed=0)
        pr.save(files / "cls_good.npz")
        X = np.array(pr.X, dtype=np.float64)
        X[0, 0] = np.nan
        with open(files / "cls_nan.npz", "wb") as fh:
            np.savez(fh, X=X, y=np.asarray(pr.y, dtype=np.float64), kind=np.array("classification"))
    return files


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_pgd_bad_command_line(argv, match, rc, prefix, cls_files, tmp_path, capsys) -> None:
    check_case(argv, match, files=cls_files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
