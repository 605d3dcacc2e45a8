"""``mdcert paths`` against hostile command lines: every option validated before torch runs (the p range
of the float64 engine, a memory budget), the run directory never replaces user files."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

BASE = [
    "paths",
    "--trials",
    "1",
    "--n",
    "2",
    "--T",
    "3",
    "--d",
    "2",
    "--workers",
    "0",
    "--progress",
    "off",
]
CASES = [
    *[
        ([*BASE, *extra, "-o", "{o}/run"], match)
        for extra, match in [
            (["--p", "2,3", "--steps", "10,20,30"], r"--steps has 3 values but --p has 2"),
            (["--p", "2,2"], r"lists a value twice"),
            (["--p", "2,"], r"without empty items"),
            (["--p", "abc"], r"invalid --p: 'abc'"),
            (["--p", "1"], r"p > 1"),
            (["--p", "1e400"], r"--p 1e400 is outside the range of the float64 training paths"),
            (
                ["--p", "1.0000000000000000000000000001"],
                r"outside the range of the float64 training paths",
            ),
            (["--p", "1026"], r"outside the range"),
            (["--p", "9" * 5000], r"invalid --p|outside the range"),
            (["--trials", "0"], r"--trials must be >= 1"),
            (["--trials", "99999999999999999999"], r"--trials must be at most"),
            (["--inits", "0"], r"--inits must be >= 1"),
            (["--n", "0"], r"--n must be >= 1"),
            (["--T", "1"], r"--T must be >= 2"),
            (["--d", "0"], r"--d must be >= 1"),
            (["--d", "9999999"], r"--d must be at most"),
            (["--steps", "0"], r"--steps must be >= 1"),
            (["--steps=-5"], r"--steps must be >= 1"),
            (["--steps", "99999999999999999999999"], r"--steps must be at most"),
            (["--steps", "1e3"], r"--steps must be integers"),
            (["--records", "0"], r"--records must be >= 2"),
            (["--records", "99999999"], r"--records must be at most"),
            (["--seed", "99999999999999999999"], r"--seed must be in"),
            (["--seed=-1"], r"--seed must be in 0\.\.2\*\*63-1"),
            (["--lr", "0"], r"finite and > 0"),
            (["--lr", "nan"], r"finite and > 0"),
            (["--lr", "-1"], r"finite and > 0"),
            (["--lr", "1e400"], r"finite and > 0"),
            (["--lr", "1e-400"], r"finite and > 0"),
            (["--lr", "inf"], r"finite and > 0"),
            (["--decoder-lr", "nan"], r"--decoder-lr must be finite"),
            (["--digits", "0"], r"--digits must be in 1\.\.2000"),
            (["--tail", "nan"], r"--tail"),
            (["--tail", "1"], r"--tail must be in \[0, 1\)"),
            (["--dtype", "float16"], r"invalid choice: 'float16'"),
            (["--device", "junk"], r"unknown device 'junk'"),
            (["--device", "cuda:x"], r"unknown device"),
            (["--workers=-1"], r"--workers must be >= 0"),
            # arrays that cannot fit are refused before any allocation (not killed by the OOM killer)
            (
                ["--trials", "1000000", "--n", "1000", "--T", "1000", "--d", "1000"],
                r"would need about .* of memory",
            ),
            (["--trials", "100000", "--records", "100000"], r"would need about .* of memory"),
        ]
    ],
    ([*BASE, "-o", ""], r"-o is empty"),
    ([*BASE, "-o", "/proc/run"], r"not writable"),
    ([*BASE, "--steps", "5", "-o", "{d}/run_nonempty"], r"not empty; use --overwrite"),
    ([*BASE, "--steps", "5", "-o", "{d}/afile"], r"not a directory"),
    ([*BASE, "--steps", "5", "-o", "{d}/afile/run"], r"is a file, not a directory"),
    # --overwrite replaces a run directory, never a directory of the user's files
    (
        [*BASE, "--steps", "5", "--no-certify", "-o", "{d}", "--overwrite"],
        r"is not an mdcert run directory",
    ),
    (
        [*BASE, "--steps", "5", "--no-certify", "-o", "{d}/userdir", "--overwrite"],
        r"not an mdcert run",
    ),
    # ... nor a folder with a stray summary.json, nor a study: only a run whose .mdcert-run marker says "paths"
    (
        [*BASE, "--steps", "5", "--no-certify", "-o", "{d}/run_nonempty", "--overwrite"],
        r"no valid \.mdcert-run",
    ),
    (
        [*BASE, "--steps", "5", "--no-certify", "-o", "{d}/study_dir", "--overwrite"],
        r"not an mdcert run",
    ),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_paths_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)


def test_cuda_request_without_cuda_is_a_clear_error(files, tmp_path, capsys) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    check_case(
        [*BASE, "--steps", "2", "--device", "cuda", "--no-certify", "-o", "{o}/run"],
        r"CUDA is not available; use --device cpu",
        files=files,
        out_dir=tmp_path,
        capsys=capsys,
    )
