"""Regularization paths with a fixed decoder and joint paths of (W, v) (docs/theory.md section 6, Theorems 6 and 31)."""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "DecoderLoss": "experiments.regpath.joint_objective",
    "ExcessLoss": "experiments.regpath.excess_loss",
    "JointMDPath": "experiments.regpath.joint_md",
    "JointObjective": "experiments.regpath.joint_objective",
    "JointPath": "experiments.regpath.joint_results",
    "JointRadiusResult": "experiments.regpath.joint_results",
    "LOSSES": "experiments.regpath.excess_loss",
    "MAX_RADII": "experiments.regpath.grid",
    "RadiusFunction": "experiments.regpath.radius_function",
    "RadiusResult": "experiments.regpath.results",
    "Reference": "experiments.regpath.svm_reference",
    "ReferenceCache": "experiments.regpath.svm_reference",
    "RegPath": "experiments.regpath.results",
    "SphereSolve": "experiments.regpath.sphere",
    "StartSummary": "experiments.regpath.results",
    "as_radii": "experiments.regpath.grid",
    "ball_gap": "experiments.regpath.sphere",
    "bregman_directional": "experiments.regpath.svm_reference",
    "check_radii": "experiments.regpath.grid",
    "geometric_radii": "experiments.regpath.grid",
    "joint_example": "experiments.regpath.joint",
    "joint_md_path": "experiments.regpath.joint_md",
    "joint_references": "experiments.regpath.joint",
    "joint_regularization_path": "experiments.regpath.joint",
    "json_number": "experiments.regpath.results",
    "log_loss_values": "experiments.regpath.excess_loss",
    "log_neg_derivative": "experiments.regpath.excess_loss",
    "logsumexp": "experiments.regpath.excess_loss",
    "lp_norm_rows": "experiments.regpath.sphere",
    "parse_radii": "experiments.regpath.grid",
    "parse_radius_function": "experiments.regpath.radius_function",
    "plot_regpath_run": "experiments.regpath.plots",
    "rank_starts": "experiments.regpath.results",
    "reference_direction": "experiments.regpath.svm_reference",
    "reference_json": "experiments.regpath.svm_reference",
    "regularization_path": "experiments.regpath.fixed",
    "solve_on_sphere": "experiments.regpath.sphere",
    "start_queue": "experiments.regpath.results",
    "theorem31_quantities": "experiments.regpath.theorem31",
    "uniform_dual_direction": "experiments.regpath.svm_reference",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
