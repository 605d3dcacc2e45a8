"""``mdcert synth``, ``mdcert demo``, ``mdcert sweep`` (its command line; its SPECs have their own table in
tests/experiments/cli/test_sweep.py) and ``mdcert`` itself against hostile command lines."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

CASES = [
    (["synth", "--seed=-1", "-o", "{o}/x.npz"], r"--seed -1"),
    (["synth", "--T", "1", "-o", "{o}/x.npz"], r"invalid T: 1"),
    (["synth", "--n", "0", "-o", "{o}/x.npz"], r"invalid n: 0"),
    (["synth", "--n=-1", "-o", "{o}/x.npz"], r"invalid n: -1"),
    (["synth", "--d", "0", "-o", "{o}/x.npz"], r"invalid d: 0"),
    (["synth", "--n", "1e3", "-o", "{o}/x.npz"], r"invalid int value"),
    (["synth", "--n", "99999999999999999999", "-o", "{o}/x.npz"], r"invalid n: .*at most"),
    (["synth", "--d", "99999999999999999999999999", "-o", "{o}/x.npz"], r"invalid d: .*at most"),
    (
        ["synth", "--n", "10000", "--T", "1000", "--d", "1000", "-o", "{o}/x.npz"],
        r"would need about .* of memory",
    ),
    (["synth", "-o", "{o}/x.txt"], r"\.npz or \.json"),
    (["synth", "-o", "{o}/nodir/x.npz"], r"does not exist"),
    (["synth", "-o", "{d}/adir.npz"], r"is a directory"),
    (["synth", "-o", "{d}/afile/x.npz"], r"not a directory"),
    (["synth", "-o", "/proc/x.npz"], r"not writable"),
    (["synth", "-o", ""], r"-o is empty"),
    (["synth"], r"required: -o"),
    # demo: validated before anything is created (the float64 path it trains needs a moderate p)
    (["demo", "--quick", "--p", "1", "-o", "{o}/demo"], r"--p > 1"),
    (
        ["demo", "--quick", "--p", "1e400", "-o", "{o}/demo"],
        r"outside the range of the float64 training paths",
    ),
    (
        ["demo", "--quick", "--p", "1.0000000000000000000000000001", "-o", "{o}/demo"],
        r"outside the range",
    ),
    (["demo", "--quick", "--seed=-1", "-o", "{o}/demo"], r"--seed -1"),
    (
        ["demo", "--quick", "--seed", "99999999999999999999999999", "-o", "{o}/demo"],
        r"invalid --seed",
    ),
    (["demo", "--quick", "-o", "{d}/afile"], r"already exists"),
    (["demo", "--quick", "-o", "{d}/run_nonempty"], r"already exists"),
    (["demo", "--quick", "-o", "{d}/afile/x"], r"is a file, not a directory"),
    (["demo", "--quick", "-o", "/proc/demo"], r"not writable"),
    (["demo", "--quick", "-o", ""], r"-o is empty"),
    # sweep's command line (SPEC contents: tests/experiments/cli/test_sweep.py)
    (["sweep", "{d}/missing.toml", "-o", "{o}/s"], r"not found"),
    (["sweep", "{d}/sweep_dir.toml", "-o", "{o}/s"], r"is a directory"),
    (["sweep", "{d}/sweep_bad.toml", "-o", "{o}/s"], r"not valid TOML"),
    (["sweep", "{d}/sweep_deep.toml", "-o", "{o}/s"], r"nested too deeply"),
    (["sweep", "{d}/prob.txt", "-o", "{o}/s"], r"use a \.toml or \.yaml file"),
    (["sweep", "{d}/sweep_bad.toml", "-o", "{o}/s", "--workers", "0"], r"invalid --workers 0"),
    (["sweep", "{d}/sweep_bad.toml", "-o", "{o}/s", "--retries=-1"], r"invalid --retries -1"),
    (
        ["sweep", "{d}/sweep_bad.toml", "-o", "{o}/s", "--address", "x"],
        r"--address is for --engine ray",
    ),
    (["sweep", "{d}/sweep_bad.toml", "-o", ""], r"-o is empty"),
]

MAIN = [
    (["bogus"], r"invalid choice: 'bogus'", 1, "mdcert: error: "),
    (["--bogus"], r"unrecognized arguments|required|invalid", 1, "mdcert: error: "),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES + MAIN))
def test_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
