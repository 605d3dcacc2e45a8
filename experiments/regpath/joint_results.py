"""The records of a joint regularization path (`experiments.regpath.joint`): the winner at one
(R, r) with the other starts, and the whole path with its references, Theorem 31 quantities and
settings (docs/theory.md section 5, Theorem 31)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.exact import format_fraction
from experiments.regpath.results import StartSummary, json_number
from experiments.regpath.svm_reference import Reference, reference_json

__all__ = ["JointRadiusResult", "JointPath"]


@dataclass(frozen=True)
class JointRadiusResult:
    """Winner at one (R, r) and how the other starts fared (fields as `RadiusResult`, plus v)."""

    R: float
    r: float
    W: np.ndarray
    v: np.ndarray
    loss: float
    log_loss: float
    stationarity: float
    stationarity_W: float
    stationarity_v: float
    bregman_to_svm: float
    bregman_v_to_svm: float
    selected: tuple[int, ...]
    selects_alpha: bool
    winner: str
    rounds: int
    starts: tuple[StartSummary, ...]
    bregman_to_selected_svm: float | None = None
    bregman_v_to_selected_svm: float | None = None

    def to_json(self) -> dict:
        return {
            "R": self.R,
            "r": self.r,
            "bregman_to_svm": json_number(self.bregman_to_svm),
            "bregman_v_to_svm": json_number(self.bregman_v_to_svm),
            "bregman_to_selected_svm": json_number(self.bregman_to_selected_svm),
            "bregman_v_to_selected_svm": json_number(self.bregman_v_to_selected_svm),
            "loss": json_number(self.loss),
            "log_loss": json_number(self.log_loss),
            "stationarity": json_number(self.stationarity),
            "stationarity_W": json_number(self.stationarity_W),
            "stationarity_v": json_number(self.stationarity_v),
            "selected_tokens": list(self.selected),
            "selects_alpha": self.selects_alpha,
            "winner": self.winner,
            "rounds": self.rounds,
            "v": [float(x) for x in self.v],
            "starts": [s.to_json() for s in self.starts],
        }


@dataclass(frozen=True)
class JointPath:
    """A joint regularization path (W, v)(R) over a grid (Theorem 31): winners per radius, the
    certified attention and decoder references, and the measured Theorem 31 quantities."""

    p: Fraction
    alpha: tuple[int, ...]
    r_of_R: str
    reference: Reference
    v_reference: Reference
    results: tuple[JointRadiusResult, ...]
    quantities: dict
    elapsed_s: float
    settings: dict

    def decay(self) -> dict:
        b = np.array([r.bregman_to_svm for r in self.results])
        bv = np.array([r.bregman_v_to_svm for r in self.results])
        return {
            "bregman_first": json_number(b[0]),
            "bregman_last": json_number(b[-1]),
            "ratio_first_over_last": json_number(b[0] / b[-1] if b[-1] > 0 else math.inf),
            "monotone_nonincreasing": bool(np.all(np.diff(b) <= 0)),
            "bregman_v_first": json_number(bv[0]),
            "bregman_v_last": json_number(bv[-1]),
            "ratio_v_first_over_last": json_number(bv[0] / bv[-1] if bv[-1] > 0 else math.inf),
        }

    def to_json(self) -> dict:
        return {
            "p": format_fraction(self.p),
            "p_float": float(self.p),
            "alpha": list(self.alpha),
            "r_of_R": self.r_of_R,
            "reference": reference_json(self.reference),
            "v_reference": reference_json(self.v_reference),
            "theorem31_quantities": self.quantities,
            "settings": self.settings,
            "elapsed_s": self.elapsed_s,
            "decay": self.decay(),
            "path": [r.to_json() for r in self.results],
        }
