"""Regression problems and their certified interpolation programs (docs/theory.md section 8).

The setting of smoothed sign descent (arXiv 2410.14158): data X (N x D), targets y, and the
programs whose solutions the training limits are compared with. Names are exported lazily
(PEP 562, `certify.lazy`) so that the trusted checker (`certify.check`), which reads
`certify.regression.problem` and `certify.regression.certificate`, does not load the solver
(`certify.regression.interpolate`) through this package.
"""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "DeltaKKT": "certify.regression.deltakkt",
    "delta_kkt": "certify.regression.deltakkt",
    "ExactVec": "certify.regression.certificate",
    "InterpolationCertificate": "certify.regression.certificate",
    "InterpStatus": "certify.regression.certificate",
    "InterpCheck": "certify.regression.check",
    "check_interpolation": "certify.regression.check",
    "InterpResult": "certify.regression.interpolate",
    "certify_interpolation": "certify.regression.interpolate",
    "ECertificate": "certify.regression.echeck",
    "check_e": "certify.regression.echeck",
    "EResult": "certify.regression.eprog",
    "certify_e": "certify.regression.eprog",
    "PsiCertificate": "certify.regression.psicheck",
    "check_psi": "certify.regression.psicheck",
    "PsiResult": "certify.regression.psi",
    "certify_psi": "certify.regression.psi",
    "RegressionProblem": "certify.regression.problem",
    "exact_float64": "certify.regression.problem",
    "load_regression": "certify.regression.problem",
    "regression_problem": "certify.regression.synth",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
