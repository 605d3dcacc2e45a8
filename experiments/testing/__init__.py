"""Property-test kit for l_p mirror-descent implementations, built on hypothesis (docs/theory.md section 2)."""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "PROPERTIES": "experiments.testing.kit",
    "as_step_function": "experiments.testing.kit",
    "attention_problems": "experiments.testing.kit",
    "bounded_tensors": "experiments.testing.kit",
    "check_mirror_update": "experiments.testing.kit",
    "exponents": "experiments.testing.kit",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
