"""The records of a measured rate (`experiments.paths.rates`): the verdict and curve-state enums,
one law's fit, the held-out model selection, and the whole `RateFit` with its JSON form
(docs/theory.md section 6.3)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum

from experiments.paths.fitting import clean_json

__all__ = ["Verdict", "CurveState", "ModelFit", "Selection", "RateFit"]


class Verdict(str, Enum):
    """Which decay law predicts the held-out tail better, or neither decidably."""

    LOG = "log"
    POWER = "power"
    INCONCLUSIVE = "inconclusive"


class CurveState(str, Enum):
    """Whether the fitted window of a curve is in an asymptotic regime (the laws' domain)."""

    ASYMPTOTIC = "asymptotic"  #: decreasing, decay not accelerating
    TRANSIENT = "transient"  #: the decay accelerates over the window (still in its transient)
    FLAT = "flat"  #: not significantly decreasing over the window
    FLOOR = "float_floor"  #: late values at the float64 / certificate resolution floor


@dataclass(frozen=True)
class ModelFit:
    """One law ``D = C x^(-exponent)``, x = log k (``log``) or k (``power``), fitted on the whole window.

    Attributes:
        model: "log" or "power"; exponent: a or b; C: prefactor.
        ci: bootstrap interval (level of the `RateFit`) of the exponent, None without a bootstrap.
        rmse_log: residual RMS of ``log D`` on the window; r2: coefficient of determination there.
    """

    model: str
    exponent: float
    C: float
    ci: tuple[float, float] | None
    rmse_log: float
    r2: float


@dataclass(frozen=True)
class Selection:
    """Model choice by prediction of the held-out tail ``k >= split_step``.

    Attributes:
        verdict: `Verdict`; reason: one line saying what decided it.
        split_step: first held-out step (both laws are fitted on the steps before it).
        error_log, error_power: RMS log error of each law's prediction of the held-out mean curve.
        difference: ``error_log - error_power`` (> 0 favours power); difference_ci: its bootstrap interval.
        ratio: worse error / better error.
        early_fits: {"log": (exponent, C), "power": (exponent, C)} fitted before ``split_step``
            (the predictions that were compared).
    """

    verdict: Verdict
    reason: str
    split_step: int
    error_log: float
    error_power: float
    difference: float
    difference_ci: tuple[float, float] | None
    ratio: float
    early_fits: dict


@dataclass(frozen=True)
class RateFit:
    """Both laws on one curve, the held-out choice between them and the state of the curve.

    Attributes:
        fits: {"log": ModelFit, "power": ModelFit}; selection: `Selection`.
        state: `CurveState`; state_reason: one line.
        slopes: local power-law decay slopes (early half, late half) of the window and the bootstrap
            interval of their difference (late - early; > 0 is an accelerating decay).
        tail_from: first step of the window; points: its record points; trials: curves averaged;
        bootstrap: resamples used; level: interval level; floor: the resolution floor used (or None);
        predicted: a theoretical exponent of the log law given by the caller, and whether it lies in
            the interval (None when not given).
        average: the fitted curve, "geometric" (exp of the mean of log D) or "arithmetic" (mean of D).
        default_from: first step of the window by the tail rule; ``tail_from`` is later when an initial
            transient was skipped.
        needs: what would make an inconclusive verdict decidable: ``("trajectories", 8)``,
            ``("horizon", "longer")``, ``("horizon", "before the floor")``; empty when nothing is missing.
    """

    fits: dict
    selection: Selection
    state: CurveState
    state_reason: str
    slopes: tuple
    tail_from: int
    points: int
    trials: int
    bootstrap: int
    level: float
    floor: float | None
    predicted: tuple | None = None
    average: str = "geometric"
    default_from: int | None = None
    needs: tuple = ()

    @property
    def transient_skipped(self) -> bool:
        """Whether the window's start was moved past an initial transient."""
        return self.default_from is not None and self.tail_from > self.default_from

    @property
    def verdict(self) -> Verdict:
        return self.selection.verdict

    def to_json(self) -> dict:
        sel = asdict(self.selection)
        sel["verdict"] = self.selection.verdict.value
        return clean_json(
            {
                "verdict": self.verdict.value,
                "reason": self.selection.reason,
                "state": self.state.value,
                "state_reason": self.state_reason,
                "selection": sel,
                "slopes": {
                    "early": self.slopes[0],
                    "late": self.slopes[1],
                    "late_minus_early_ci": self.slopes[2],
                },
                "tail_from_step": self.tail_from,
                "points": self.points,
                "trials": self.trials,
                "bootstrap": self.bootstrap,
                "level": self.level,
                "floor": self.floor,
                "average": self.average,
                "window": {
                    "from_step": self.tail_from,
                    "default_from_step": self.default_from,
                    "transient_skipped": self.transient_skipped,
                },
                "needs": {k: v for k, v in self.needs},
                "predicted_log_exponent": None
                if self.predicted is None
                else {"value": self.predicted[0], "in_interval": self.predicted[1]},
                **{name: asdict(f) for name, f in self.fits.items()},
            }
        )
