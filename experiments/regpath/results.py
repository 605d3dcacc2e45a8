"""Results of the regularization paths (docs/theory.md section 5): per-start and per-radius records, the path
and its JSON form, and the winner selection shared by the fixed-decoder and the joint path."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.exact import format_fraction
from experiments.regpath.sphere import lp_norm_rows
from experiments.regpath.svm_reference import Reference, reference_json

__all__ = ["StartSummary", "RadiusResult", "RegPath", "json_number", "start_queue", "rank_starts"]


def json_number(x) -> float | str | None:
    """A float for JSON: finite as is, infinities as "inf"/"-inf", NaN as "nan", None kept."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


@dataclass(frozen=True)
class StartSummary:
    """One start (chain) at one radius.

    Attributes:
        label: "random-k" (a chain started at a random direction at the first radius and warm-started
            along the grid), "svm" (restarted at every radius from the reference SVM direction),
            "uniform-dual" (restarted at every radius from the SVM-free direction phi_q(A^T 1)),
            "previous-best" (warm-started from the previous radius' winner).
        log_excess: ``log(L - L_*)`` reached; log_excess_gap: its excess over the winner's (>= 0).
        loss_ratio: ``E / E_winner`` = exp(log_excess_gap) (inf if it overflows).
        direction_distance: ``||W/R - W_winner/R||_p``.
        stationarity: relative ball gap reached; iterations: L-BFGS iterations.
        selected: softmax-argmax tokens.
    """

    label: str
    log_excess: float
    log_excess_gap: float
    loss_ratio: float
    direction_distance: float
    stationarity: float
    iterations: int
    selected: tuple[int, ...]

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "log_excess": json_number(self.log_excess),
            "log_excess_gap": json_number(self.log_excess_gap),
            "loss_ratio": json_number(self.loss_ratio),
            "direction_distance": json_number(self.direction_distance),
            "stationarity": json_number(self.stationarity),
            "iterations": self.iterations,
            "selected_tokens": list(self.selected),
        }


@dataclass(frozen=True)
class RadiusResult:
    """The winning solution at one radius and how the other starts fared.

    Attributes:
        R: radius; W: winner (d, d); norm: ``||W||_p``.
        loss: ``L(W)`` (float64); log_excess: ``log(L(W) - L_*)`` (exact in log domain).
        stationarity: relative l_p-ball first-order gap; gap_abs: absolute gap of log E.
        bregman_to_svm: ``D_psi(Wbar_mm, W/||W||_p)``.
        selected: softmax-argmax tokens; selects_alpha: whether they equal the reference tokens.
        winner: label of the winning start; starts: every start's summary.
    """

    R: float
    W: np.ndarray
    norm: float
    loss: float
    log_excess: float
    stationarity: float
    gap_abs: float
    bregman_to_svm: float
    selected: tuple[int, ...]
    selects_alpha: bool
    winner: str
    starts: tuple[StartSummary, ...]

    def to_json(self) -> dict:
        return {
            "R": self.R,
            "norm": self.norm,
            "bregman_to_svm": json_number(self.bregman_to_svm),
            "loss": json_number(self.loss),
            "log_excess_loss": json_number(self.log_excess),
            "stationarity": json_number(self.stationarity),
            "stationarity_abs": json_number(self.gap_abs),
            "selected_tokens": list(self.selected),
            "selects_alpha": self.selects_alpha,
            "winner": self.winner,
            "starts": [s.to_json() for s in self.starts],
        }


@dataclass(frozen=True)
class RegPath:
    """A regularization path W(R) over a grid (Theorem 6)."""

    p: Fraction
    alpha: tuple[int, ...]
    loss: str
    base_loss: float
    reference: Reference
    results: tuple[RadiusResult, ...]
    elapsed_s: float
    settings: dict

    @property
    def radii(self) -> np.ndarray:
        return np.array([r.R for r in self.results])

    @property
    def bregman(self) -> np.ndarray:
        return np.array([r.bregman_to_svm for r in self.results])

    def decay(self) -> dict:
        """First/last divergence, their ratio, and whether the sequence is non-increasing."""
        b = self.bregman
        ratio = float(b[0] / b[-1]) if b[-1] > 0 else math.inf
        return {
            "bregman_first": json_number(b[0]),
            "bregman_last": json_number(b[-1]),
            "ratio_first_over_last": json_number(ratio),
            "monotone_nonincreasing": bool(np.all(np.diff(b) <= 0)),
            "largest_increase": json_number(float(np.max(np.diff(b))) if len(b) > 1 else 0.0),
        }

    def to_json(self) -> dict:
        return {
            "p": format_fraction(self.p),
            "p_float": float(self.p),
            "alpha": list(self.alpha),
            "loss": self.loss,
            "base_loss": self.base_loss,
            "reference": reference_json(self.reference),
            "settings": self.settings,
            "elapsed_s": self.elapsed_s,
            "decay": self.decay(),
            "path": [r.to_json() for r in self.results],
        }


def start_queue(chains: dict, *, svm=None, dual=None, previous=None) -> list[tuple[str, object]]:
    """The starts solved at one radius: the random chains, then "svm", "uniform-dual" and
    "previous-best" where given (None: not used)."""
    todo = list(chains.items())
    for label, start in (("svm", svm), ("uniform-dual", dual), ("previous-best", previous)):
        if start is not None:
            todo.append((label, start))
    return todo


def rank_starts(
    runs: dict[str, tuple], R: float, pf: float
) -> tuple[str, tuple[StartSummary, ...]]:
    """The winning start at one radius and every start's summary.

    Args:
        runs: label -> ``(log objective, W flat, stationarity, iterations, selected tokens)``.
        R: the radius (distances are between ``W / R``); pf: p as a float.

    Returns:
        ``(winner label, summaries)``; the lowest objective wins, "previous-best" on ties.
    """
    best_label = min(runs, key=lambda k: (runs[k][0], k != "previous-best"))
    best_value, best_W = runs[best_label][0], runs[best_label][1]
    summaries = []
    for label, (value, W, stationarity, iterations, selected) in runs.items():
        gap = value - best_value
        dist = float(lp_norm_rows(((W - best_W) / R)[None, :], pf)[0])
        summaries.append(
            StartSummary(
                label,
                value,
                gap,
                math.exp(gap) if gap < 700 else math.inf,
                dist,
                stationarity,
                iterations,
                selected,
            )
        )
    return best_label, tuple(summaries)
