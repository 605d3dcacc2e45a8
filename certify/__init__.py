"""certify: exact data, certified l_p SVM solves and the independent certificate checker.

Imports neither torch nor matplotlib.
"""

from certify.errors import MdcertError
from certify.exact import DyadicArray, conjugate, dyadic, format_fraction, parse_fraction, parse_p
from certify.problem import AttentionProblem, ConstraintSystem, OptimalTokens, resolve_alpha
from certify.synth import synthetic_problem

__all__ = [
    "AttentionProblem",
    "ConstraintSystem",
    "DyadicArray",
    "MdcertError",
    "OptimalTokens",
    "conjugate",
    "dyadic",
    "format_fraction",
    "parse_fraction",
    "parse_p",
    "resolve_alpha",
    "synthetic_problem",
]
