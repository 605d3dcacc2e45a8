"""Subsets of a real-data source for the frontier (`experiments.studies.realdata.frontier`): seeded
draws of n examples of T tokens, and the tokens a short mirror-descent training selects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["Subset", "draw_subsets", "train_alpha"]


@dataclass(frozen=True)
class Subset:
    """One drawn subset: its problem (with provenance) and what the frontier records about it."""

    n: int
    seed: int
    problem: Any
    ids: tuple

    @property
    def rows(self) -> int:
        """N = sum_i (L_i - 1), the attention SVM's constraint count (docs/theory.md section 1.3)."""
        return int(np.sum(self.problem.valid_lengths - 1))


def draw_subsets(
    source, projected, *, n: int, seeds: int, d: int | None, T: int, build: Callable[..., Any]
) -> list[Subset]:
    """``seeds`` subsets of size ``n`` (seeds 0..seeds-1) through the loaders' `select` and ``build``
    (the modality's provenance bundler, `experiments.data.provenance.data_problem` with its texts)."""
    from experiments.data.assemble import select

    out = []
    for seed in range(seeds):
        built = select(projected, n=n, seed=seed)
        data = build(source, built, n=n, T=T, d=d, seed=seed)
        out.append(
            Subset(
                n, seed, data.problem(), tuple(int(i) for i in data.provenance["selection"]["ids"])
            )
        )
    return out


def train_alpha(
    problems: list, *, p: str, lr: float, steps: int, device: Any = "cpu"
) -> tuple[np.ndarray, dict]:
    """Tokens attended to after ``steps`` normalized mirror-descent steps from ``W(0) = 0`` (one batch).

    Returns:
        ``(alpha (B, n), record)``: ``argmax_t a_it(W(K))`` per problem and the training's final loss,
        smallest top attention, saturation step, status and wall time.
    """
    from experiments.paths.engine import run_paths

    d = problems[0].d
    B = len(problems)
    res = run_paths(
        problems,
        data_index=list(range(B)),
        p=[p] * B,
        lr=[lr] * B,
        steps=[steps] * B,
        W0=np.zeros((B, d, d)),
        normalize=True,
        records=8,
        progress=False,
        device=device,
    )
    last = [int(np.flatnonzero(res.record_steps[b] >= 0)[-1]) for b in range(B)]
    record = {
        "p": p,
        "lr": lr,
        "steps": steps,
        "init": "W(0) = 0",
        "normalize": True,
        "device": res.device,
        "seconds": float(res.elapsed_s),
        "status": [str(s) for s in res.status],
        "loss_final": [float(res.loss[b, last[b]]) for b in range(B)],
        "top_attention_min": [float(np.min(res.top_attention[b, last[b]])) for b in range(B)],
        "saturated_step": [int(s) for s in res.saturated_step],
    }
    return res.final_alpha(), record
