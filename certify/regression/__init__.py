"""Regression problems and their certified interpolation programs (docs/theory.md section 8).

The setting of smoothed sign descent (arXiv 2410.14158): data X (N x D), targets y, and the
programs whose solutions the training limits are compared with.
"""

from __future__ import annotations

from certify.regression.certificate import ExactVec, InterpolationCertificate, InterpStatus
from certify.regression.check import InterpCheck, check_interpolation
from certify.regression.deltakkt import DeltaKKT, delta_kkt
from certify.regression.interpolate import InterpResult, certify_interpolation
from certify.regression.problem import RegressionProblem, exact_float64, load_regression
from certify.regression.synth import regression_problem

__all__ = ["DeltaKKT", "delta_kkt", "ExactVec", "InterpolationCertificate", "InterpStatus", "InterpCheck", "check_interpolation",
           "InterpResult", "certify_interpolation", "RegressionProblem", "exact_float64", "load_regression", "regression_problem"]
