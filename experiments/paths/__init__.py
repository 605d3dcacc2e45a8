"""Batched mirror-descent training paths, their rates and figures (docs/theory.md sections 2 and 6)."""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "MAX_STEPS": "experiments.paths.config",
    "CurveState": "experiments.paths.rates",
    "ModelFit": "experiments.paths.rates",
    "NormFit": "experiments.paths.growth",
    "PathGroup": "experiments.paths.group",
    "PathResult": "experiments.paths.engine",
    "RateFit": "experiments.paths.rates",
    "Selection": "experiments.paths.rates",
    "Verdict": "experiments.paths.rates",
    "bregman_floor": "experiments.paths.rates",
    "rates_by_horizon": "experiments.paths.rates",
    "Recorder": "experiments.paths.loop",
    "SCALE_ABOVE": "experiments.paths.kernels",
    "TrajectoryStatus": "experiments.paths.engine",
    "apow": "experiments.paths.kernels",
    "directional_bregman": "experiments.paths.engine",
    "dual_normalize": "experiments.paths.kernels",
    "fit_line": "experiments.paths.rates",
    "fit_norm_growth": "experiments.paths.growth",
    "fit_rates": "experiments.paths.rates",
    "flat_exponent": "experiments.paths.kernels",
    "forward": "experiments.paths.kernels",
    "grad_W": "experiments.paths.kernels",
    "grad_v": "experiments.paths.kernels",
    "load_run": "experiments.paths.plots",
    "loss_and_grad": "experiments.paths.engine",
    "lp_norms": "experiments.paths.kernels",
    "mean_loss": "experiments.paths.kernels",
    "measure_against_svms": "experiments.paths.summary",
    "parse_config": "experiments.paths.config",
    "per_p_entry": "experiments.paths.summary",
    "plot_paths_run": "experiments.paths.plots",
    "progress_printer": "experiments.paths.loop",
    "record_schedule": "experiments.paths.engine",
    "resolve_device": "experiments.paths.engine",
    "run_loop": "experiments.paths.loop",
    "run_paths": "experiments.paths.engine",
    "select_rows": "experiments.paths.kernels",
    "spow": "experiments.paths.kernels",
    "stack_problems": "experiments.paths.engine",
    "tail_mask": "experiments.paths.rates",
    "token_values": "experiments.paths.kernels",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
