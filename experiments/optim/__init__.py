"""Mirror descent with the l_p potential: the optimizer, its kernels, fused loop and mirror maps (docs/theory.md section 2)."""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "CHUNK": "experiments.optim.kernels",
    "GRAIN": "experiments.optim.threads",
    "DualCacheMixin": "experiments.optim.dual",
    "Exponents": "experiments.optim.mirror",
    "FUSED_MIN_NUMEL": "experiments.optim.optimizer",
    "KernelUnavailable": "experiments.optim.fused",
    "LpMirrorDescent": "experiments.optim.optimizer",
    "PowPlan": "experiments.optim.optimizer",
    "ThreadChoice": "experiments.optim.threads",
    "bregman": "experiments.optim.mirror",
    "bregman_terms": "experiments.optim.mirror",
    "cbrt_expr": "experiments.optim.fused",
    "chunk_bounds": "experiments.optim.threads",
    "chunked_dual": "experiments.optim.kernels",
    "chunked_inverse": "experiments.optim.kernels",
    "chunked_step_cached": "experiments.optim.kernels",
    "chunked_step_direct": "experiments.optim.kernels",
    "dual_exponent": "experiments.optim.mirror",
    "exponents_of": "experiments.optim.mirror",
    "foreach_update": "experiments.optim.foreach",
    "inverse_mirror_map": "experiments.optim.mirror",
    "inverse_reproduces": "experiments.optim.kernels",
    "lp_norm": "experiments.optim.mirror",
    "lp_normalize": "experiments.optim.mirror",
    "mirror_map": "experiments.optim.mirror",
    "mirror_step": "experiments.optim.optimizer",
    "psi": "experiments.optim.mirror",
    "signed_pow": "experiments.optim.mirror",
    "signed_pow_expr": "experiments.optim.fused",
    "signed_pow_into": "experiments.optim.kernels",
    "step_kernel": "experiments.optim.fused",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
