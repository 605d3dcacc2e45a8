"""``mdcert regpath`` as a library command: regularization paths W(R) (Theorem 6) and joint (W, v)
paths (Theorem 31) against the certified SVM (`experiments.commands`: "one shape").

- `add_arguments` (options.py) is the command's one schema; `Config.from_options` validates every
  option, the run directory ``-o`` included, before any work (one `MdcertError` line);
- `run` (compute.py) loads the problem, certifies the reference SVM(s) of alpha and computes the
  path, reporting the problem read and one line per radius on stdout as progress;
- `Result` (summary.py): `Result.write` writes ``RUN/summary.json`` (``"kind": "regpath"``, one
  ``path`` entry per radius) and ``RUN/path.npz`` (the solutions) as one run directory, complete or
  nothing; `Result.lines` is the terminal summary; `exit_code` is 0.

Variable-length problems (docs/theory.md section 1.3) run on their valid tokens only. Importing this
package imports neither numpy nor torch (the CLI builds its parser from `add_arguments`).
"""

from __future__ import annotations

from experiments.commands.regpath.compute import run
from experiments.commands.regpath.options import (
    JOINT_EXAMPLE,
    KIND,
    MAX_MD_STEPS,
    MAX_STARTS,
    Config,
    add_arguments,
)
from experiments.commands.regpath.summary import DEFINITIONS, Result, token_notes

__all__ = [
    "DEFINITIONS",
    "JOINT_EXAMPLE",
    "KIND",
    "MAX_MD_STEPS",
    "MAX_STARTS",
    "Config",
    "Result",
    "add_arguments",
    "run",
    "token_notes",
]
