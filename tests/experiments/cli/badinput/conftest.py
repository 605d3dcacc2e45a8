"""Fixtures of the bad-command-line tables: one directory of hostile inputs for the whole session."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import build_files


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    return build_files(tmp_path_factory.mktemp("bad_inputs"))
