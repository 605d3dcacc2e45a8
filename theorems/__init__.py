"""theorems: the paper's hypotheses as three-valued certified predicates (HOLDS / FAILS / UNDECIDED).

Built on `certify` (exact data, certified SVM solves); imports neither torch nor matplotlib nor
`experiments`. Trajectories come in as float64 numpy arrays.
"""

from theorems.catalogue import REFERENCE, THEOREMS, Theorem, check_theorem, get_theorem
from theorems.context import CheckContext, Predicate
from theorems.loss import NAMED_LOSSES, LossAdmissible, loss_admissible
from theorems.region import InitInRegion, init_in_region
from theorems.segment import SegmentCheck, segment_convexity
from theorems.stepsize import (
    StepCheck,
    StepSizeConvexAlongPath,
    check_steps,
    step_size_convex_along_path,
)
from theorems.tokens import (
    JointSvmsFeasible,
    SvmFeasible,
    TokensGloballyOptimal,
    TokensLocallyOptimal,
    decoder_svm_feasible,
    joint_svms_feasible,
    svm_feasible,
    tokens_globally_optimal,
    tokens_locally_optimal,
)
from theorems.verdict import (
    Evidence,
    EvidenceError,
    HypothesisReport,
    Method,
    TheoremReport,
    Verdict,
    kleene_and,
)

__all__ = [
    "CheckContext",
    "Evidence",
    "EvidenceError",
    "HypothesisReport",
    "InitInRegion",
    "JointSvmsFeasible",
    "LossAdmissible",
    "Method",
    "NAMED_LOSSES",
    "Predicate",
    "REFERENCE",
    "SegmentCheck",
    "StepCheck",
    "StepSizeConvexAlongPath",
    "SvmFeasible",
    "THEOREMS",
    "Theorem",
    "TheoremReport",
    "TokensGloballyOptimal",
    "TokensLocallyOptimal",
    "Verdict",
    "check_steps",
    "check_theorem",
    "decoder_svm_feasible",
    "get_theorem",
    "init_in_region",
    "joint_svms_feasible",
    "kleene_and",
    "loss_admissible",
    "segment_convexity",
    "step_size_convex_along_path",
    "svm_feasible",
    "tokens_globally_optimal",
    "tokens_locally_optimal",
]
