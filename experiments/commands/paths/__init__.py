"""``mdcert paths``: batched mirror-descent training paths and certified directional Bregman rates.

The paper's synthetic study (arXiv 2410.14581, section 6), reproducible from ``--seed``:
``mdcert paths --trials 100 --p 1.75,2,3 --steps 1500,2000,20000 --lr 0.1 --normalize -o RUN``.
Trial t uses ``certify.synthetic_problem(n, T, d, seed=1_000_000*seed + t)``; W(0) has N(0,1)
entries from ``torch.Generator().manual_seed(seed)`` (float64 on the CPU, so every device starts
from the same bits) and is shared by all p and step sizes of a trial (common random numbers).
Your own data: ``mdcert paths A.npz B.npz [--init W0.npy | --init-std S --inits K] ...`` runs the
same grid on the given problem files (equal n and d; shorter T padded, docs/theory.md section 1.3),
each with its own certified SVM directions; the summary's ``config.problems`` records each file's
path and sha256 and ``config.init`` how W(0) was made; ``arrays.npz`` maps trajectories to
``trial`` (problem index) and ``init`` (initialization index).

After training, each trajectory's alpha is read from its final attention (argmax, as the paper
does); the SVM of that alpha at the trajectory's own p is certified with `certify.certify_svm`
(direction error required below 1e-12, digits raised until it is), as is the SVM of the globally
optimal alpha. ``D_psi(Wbar_mm, Wbar(k))`` is then evaluated on the recorded iterates. ``--cross``
adds the paper's cross grid: the SVM of exponent q against the path of exponent p, measured in the
path's potential psi_p with both directions normalized in the p-norm. SVMs are cached by
(data hash, alpha, p); certification runs in a pool of worker processes that import no torch,
started before training: the globally optimal SVMs, and the SVMs of trajectories that finish early
(shorter step counts), are solved while the remaining paths still run.

The application layer's shape (`experiments.commands`): `add_arguments`, `Config.from_options`
(every option validated before any work), `run(config) -> Result`; `Result.write(out)` writes
``OUT/summary.json`` (``kind: "paths"``), ``OUT/arrays.npz`` and ``OUT/certificates.jsonl.gz`` into a
temporary directory renamed at the end, and `Result.lines(width)` gives, per (p, lr), how many
trajectories ended at the optimal tokens and every D and rate with the SVM it is measured against,
``vs SVM(alpha_final)`` and, where they differ, ``vs SVM(opt)`` (`experiments.paths.text.per_p_lines`;
docs/theory.md sections 6.2 and 6.3).

On one classification problem file, ``mdcert paths`` runs the p-GD paths of ``mdcert pgd`` instead
(`experiments.commands.paths.linear`, docs/theory.md section 7.7): its options mapped, a ``pgd`` run
directory, the options of the attention model refused in one line.
"""

from __future__ import annotations

from experiments.commands.paths.options import Config, add_arguments
from experiments.commands.paths.work import Result, run

__all__ = ["Config", "Result", "add_arguments", "run"]
