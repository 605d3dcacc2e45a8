"""The configuration of the real-data study (`experiments.studies.realdata.study`): one modality
(text or digits: sizes, seeds, p values, training) and the whole study, with the default and quick
presets (docs/theory.md section 6.6)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT", "Modality", "QUICK", "RealDataConfig"]


@dataclass(frozen=True)
class Modality:
    """One data source of the study: dimensions, frontier sizes, the paths size."""

    name: str
    d: int
    T: int
    sizes: tuple[int, ...]
    paths_n: int
    limit: int | None = None  #: text: only the first LIMIT labelled snippets (the quick run)


@dataclass(frozen=True)
class RealDataConfig:
    """Everything that defines a run (recorded in summary.json).

    Attributes:
        modalities: the data sources.
        subsets: random subsets (seeds 0..subsets-1) per size.
        train_p, train_lr, train_steps: the training that defines the frontier's training-derived tokens.
        cert_p, cert_digits, cert_time_limit, cert_wall_limit: the frontier's certified solves (feasibility
            is p-free): digits, no precision increase after ``cert_time_limit`` s, stopped (undecided) after
            ``cert_wall_limit`` s; ``locality_digits`` for the trained tokens, whose support classification
            decides `TokensLocallyOptimal` at ``cert_p``.
        ps, path_steps, path_lr, inits, init_std, path_seed, records, ref_digits: the paths study.
        threshold: weight-count threshold (the paper's 0.06).
        embed: text features, "static" or "contextual".
    """

    modalities: tuple[Modality, ...]
    preset: str = "default"
    subsets: int = 5
    train_p: str = "2"
    train_lr: float = 0.25
    train_steps: int = 1000
    cert_p: str = "2"
    cert_digits: int = 12
    cert_time_limit: float | None = 30.0
    cert_wall_limit: float | None = 90.0
    locality_digits: int = 30
    ps: tuple[str, ...] = ("1.1", "1.75", "2", "3")
    path_steps: tuple[int, ...] = (2000, 3000, 4000, 20000)
    path_lr: float = 0.25
    inits: int = 6
    init_std: float = 0.1
    path_seed: int = 0
    records: int = 48
    ref_digits: int = 30
    threshold: float = 0.06
    embed: str = "static"


DEFAULT = RealDataConfig(
    modalities=(
        Modality("text", d=12, T=16, sizes=(6, 12, 24, 36, 48, 56, 64, 72, 80, 96), paths_n=16),
        Modality("digits", d=10, T=16, sizes=(4, 8, 16, 24, 32, 40, 48, 56, 64, 96), paths_n=16),
    )
)


QUICK = RealDataConfig(
    modalities=(
        Modality("text", d=6, T=8, sizes=(4, 8, 16, 32), paths_n=6, limit=1500),
        Modality("digits", d=6, T=8, sizes=(4, 8, 16, 32), paths_n=6),
    ),
    preset="quick",
    subsets=2,
    train_steps=300,
    path_steps=(300, 400, 500, 1200),
    inits=3,
    records=24,
)
