"""``mdcert check``: check a theorem's hypotheses on a problem (HOLDS / FAILS / UNDECIDED +
evidence), in the application layer's shape (`experiments.commands`): `add_arguments`,
`Config.from_options`, `run(config) -> Result`, `Result.lines(width)`, `Result.write(out)`.

With ``--init W0.npy --lr ETA`` it first runs the mirror-descent path itself (fixed decoder, W from
W0, ``--steps`` steps of `experiments.optim.optimizer.LpMirrorDescent` on `experiments.model`,
every iterate recorded in float64) and checks the step-size hypothesis on that path, with the step
rule of the path: constant steps by default, normalized steps ``G/||G||_q`` with ``--normalize``
(the rule of ``mdcert paths --normalize``; the hypothesis is then checked with the effective step
``lr/||G(W_k)||_q`` of each step, docs/theory.md sections 2.3 and 5.5). ``--run DIR --trajectory
K`` takes the problem, W(0), p, lr, step count and step rule of trajectory K of a ``mdcert paths``
run, re-runs that path and reports whether it ends where the run's did, so that the hypotheses and
the run's measured conclusions concern one trajectory. ``--alpha locally-optimal-from-training``
reads alpha as the argmax of the final attention (as the paper's code does) and then checks whether
it is locally optimal. Exit 0 when the check ran (whatever the verdicts), 1 on bad input.

``--theorem pgd`` on a classification problem checks the hypotheses of the p-GD result instead
(`pgd`: the path run by ``mdcert pgd``'s engine; docs/theory.md section 7.7); an attention theorem on a
classification file, or ``pgd`` on an attention file, is refused in one line.

Modules: `config` (options and their validation), `training` (the path), `work` (`run`,
`Result`), `text` (the table and summary lines), `pgd` (``--theorem pgd``).
"""

from __future__ import annotations

from experiments.commands.check.config import FROM_TRAINING, Config, add_arguments
from experiments.commands.check.text import format_table
from experiments.commands.check.training import run_path, train_path
from experiments.commands.check.work import Result, run

__all__ = [
    "FROM_TRAINING",
    "Config",
    "Result",
    "add_arguments",
    "format_table",
    "run",
    "run_path",
    "train_path",
]
