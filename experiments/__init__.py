"""experiments: mirror-descent optimizer and models, batched training paths, rates, plots, CLI.

Attributes are imported lazily (PEP 562) so that the CLI starts without importing torch.
"""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "LpMirrorDescent": "experiments.optim.optimizer",
    "mirror_step": "experiments.optim.optimizer",
    "AttentionModel": "experiments.model",
    "ProblemTensors": "experiments.model",
    "problem_tensors": "experiments.model",
    "attention_logits": "experiments.model",
    "attention_softmax": "experiments.model",
    "attention_scores": "experiments.model",
    "model_output": "experiments.model",
    "logistic_loss": "experiments.model",
    "loss": "experiments.model",
    "AttentionOutput": "experiments.model.attention_output",
    "attention_output": "experiments.model.attention_output",
    "lp_norm": "experiments.optim.mirror",
    "psi": "experiments.optim.mirror",
    "mirror_map": "experiments.optim.mirror",
    "inverse_mirror_map": "experiments.optim.mirror",
    "bregman": "experiments.optim.mirror",
    "lp_normalize": "experiments.optim.mirror",
    "dual_exponent": "experiments.optim.mirror",
    "check_mirror_update": "experiments.testing.check",
    "regularization_path": "experiments.regpath.fixed",
    "parse_radii": "experiments.regpath.grid",
    "joint_regularization_path": "experiments.regpath.joint",
    "joint_md_path": "experiments.regpath.joint_md",
    "joint_example": "experiments.regpath.joint",
    "parse_radius_function": "experiments.regpath.radius_function",
    "plot_regpath_run": "experiments.regpath.plots",
    "run_paths": "experiments.paths.engine",
    "PathResult": "experiments.paths.result",
    "TrajectoryStatus": "experiments.paths.result",
    "directional_bregman": "experiments.paths.engine",
    "fit_rates": "experiments.paths.rates",
    "fit_norm_growth": "experiments.paths.growth",
    "plot_paths_run": "experiments.paths.plots",
    "text_problem": "experiments.data.text",
    "digits_problem": "experiments.data.digits",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
