"""The ``mdcert`` command line: the entry point (`experiments.cli.main`), one module per command."""

from __future__ import annotations

from experiments.cli.main import COMMANDS, main

__all__ = ["COMMANDS", "main"]
