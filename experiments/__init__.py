"""experiments: mirror-descent optimizer and models, batched training paths, rates, plots, CLI.

Attributes are imported lazily (PEP 562) so that the CLI starts without importing torch.
"""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "LpMirrorDescent": "experiments.optim",
    "mirror_step": "experiments.optim",
    "AttentionModel": "experiments.model",
    "ProblemTensors": "experiments.model",
    "problem_tensors": "experiments.model",
    "attention_logits": "experiments.model",
    "attention_softmax": "experiments.model",
    "attention_scores": "experiments.model",
    "model_output": "experiments.model",
    "logistic_loss": "experiments.model",
    "loss": "experiments.model",
    "lp_norm": "experiments.mirror",
    "psi": "experiments.mirror",
    "mirror_map": "experiments.mirror",
    "inverse_mirror_map": "experiments.mirror",
    "bregman": "experiments.mirror",
    "lp_normalize": "experiments.mirror",
    "dual_exponent": "experiments.mirror",
    "check_mirror_update": "experiments.testing",
    "regularization_path": "experiments.regpath",
    "parse_radii": "experiments.regpath_grid",
    "joint_regularization_path": "experiments.joint",
    "joint_md_path": "experiments.joint_md",
    "joint_example": "experiments.joint",
    "parse_radius_function": "experiments.radius_function",
    "plot_regpath_run": "experiments.regpath_plots",
    "run_paths": "experiments.paths",
    "PathResult": "experiments.path_result",
    "TrajectoryStatus": "experiments.path_result",
    "directional_bregman": "experiments.paths",
    "fit_rates": "experiments.rates",
    "fit_norm_growth": "experiments.rates",
    "plot_paths_run": "experiments.plots",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
