"""Property-test kit for l_p mirror-descent implementations, built on hypothesis (docs/theory.md section 2)."""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "PROPERTIES": "experiments.testing.check",
    "SIGN_PROPERTIES": "experiments.testing.check",
    "sample_smoothed_sign": "experiments.testing.sign",
    "smoothed_sign_reference": "experiments.testing.sign",
    "band_limits": "experiments.testing.sign",
    "REGIMES": "experiments.testing.strategies",
    "Exponent": "experiments.testing.adapters",
    "KitReport": "experiments.testing.report",
    "KitUsageError": "experiments.testing.adapters",
    "Outcome": "experiments.testing.report",
    "attention_problems": "experiments.testing.strategies",
    "bounded_tensors": "experiments.testing.strategies",
    "check_mirror_update": "experiments.testing.check",
    "exponents": "experiments.testing.strategies",
    "make_adapter": "experiments.testing.adapters",
    "regime_of": "experiments.testing.strategies",
    "run_kit": "experiments.testing.check",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
