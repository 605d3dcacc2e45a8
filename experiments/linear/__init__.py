"""p-GD (mirror descent with psi = ||w||_p^p / p) on linear classifiers (docs/theory.md section 7.5)."""

from experiments.linear.engine import Loss, PgdConfig, PgdPaths, PgdStatus, run_pgd_paths
from experiments.linear.study import PgdRun, run_pgd

__all__ = ["Loss", "PgdConfig", "PgdPaths", "PgdRun", "PgdStatus", "run_pgd", "run_pgd_paths"]
