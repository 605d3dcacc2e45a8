"""certify: exact data, certified l_p SVM solves and the independent certificate checker.

Imports neither torch nor matplotlib. Names are exported lazily (PEP 562) so that importing the
trusted checker (`certify.check`) does not pull in any solver module: add each public name to
`_EXPORTS` (name -> defining module), never as an eager import here.
"""

from __future__ import annotations

from certify.lazy import lazy_exports

#: public name -> defining module
_EXPORTS: dict[str, str] = {
    "MdcertError": "certify.errors",
    "DyadicArray": "certify.exact",
    "conjugate": "certify.exact",
    "dyadic": "certify.exact",
    "format_fraction": "certify.exact",
    "parse_fraction": "certify.exact",
    "parse_p": "certify.exact",
    "AttentionProblem": "certify.problem",
    "ConstraintSystem": "certify.rows",
    "OptimalTokens": "certify.rows",
    "resolve_alpha": "certify.problem",
    "synthetic_problem": "certify.synth",
    "classification_problem": "certify.synth",
    "ClassificationProblem": "certify.classification",
    "load_problem": "certify.classification",
    "certify_max_margin": "certify.maxmargin",
    "Exponents": "certify.lp",
    "bregman": "certify.lp",
    "bregman_terms": "certify.lp",
    "dual_exponent": "certify.lp",
    "exponents_of": "certify.lp",
    "inverse_mirror_map": "certify.lp",
    "lp_norm": "certify.lp",
    "lp_normalize": "certify.lp",
    "mirror_map": "certify.lp",
    "psi": "certify.lp",
    "Certificate": "certify.certificate",
    "CertStatus": "certify.certificate",
    "ExactVector": "certify.certificate",
    "SupportClass": "certify.certificate",
    "FeasibilityResult": "certify.feasible",
    "feasibility": "certify.feasible",
    "certify_svm": "certify.svm",
    "CheckResult": "certify.check",
    "ClaimCheck": "certify.check",
    "check_certificate": "certify.check",
    "CertifiedSolution": "certify.export",
    "certified_solution": "certify.export",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
