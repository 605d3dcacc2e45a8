"""``mdcert plot`` against run directories that are not runs: a missing, unreadable, huge, deeply nested
or foreign summary.json, broken arrays, a figure that is an input (hard link)."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

CASES = [
    (["plot", "{d}/missing_run"], r"run directory not found"),
    (["plot", "{d}/afile"], r"run directory not found"),
    (["plot", "{d}/run_nosummary"], r"has no summary\.json"),
    (["plot", "{d}/run_summary_dir"], r"has no summary\.json"),
    (["plot", "{d}/run_corrupt"], r"not valid JSON"),
    (["plot", "{d}/run_empty_file"], r"not valid JSON"),
    (["plot", "{d}/run_list"], r"not a JSON object"),
    (["plot", "{d}/run_deep"], r"nested too deeply"),
    (["plot", "{d}/run_deep_ok"], r"not a JSON object"),
    (["plot", "{d}/run_bigint"], r"a number too large"),
    (["plot", "{d}/run_sparse"], r"larger than 256 MB"),
    (["plot", "{d}/run_unreadable"], r"unreadable.*Input/output error"),
    (["plot", "{d}/run_nan"], r"has kind nan"),
    (["plot", "{d}/run_kind"], r"has kind 'zzz'"),
    (["plot", "{d}/run_paths_empty"], r"per_p"),
    (["plot", "{d}/run_paths_junk"], r"cannot read .*arrays\.npz"),
    (["plot", "{d}/run_regpath_empty"], r"is not a regpath summary"),
    (["plot", "{d}/run_linked"], r"the figure bregman\.png .* is the run's summary\.json"),
    (["plot"], r"required: run"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_plot_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
