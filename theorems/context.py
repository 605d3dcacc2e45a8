"""The shared interface of every hypothesis predicate, and a per-problem cache of certified solves.

A predicate is a small frozen object with a stable ``name`` and one method
``check(problem_or_context) -> HypothesisReport``. Several predicates of one theorem need the same
certified SVM solve; `CheckContext` runs each ``certify_svm`` / ``feasibility`` call once.
"""

from __future__ import annotations

import abc
from fractions import Fraction
from typing import Any, ClassVar

from certify.errors import MdcertError
from certify.exact import parse_p
from certify.problem import AttentionProblem, resolve_alpha
from theorems.verdict import HypothesisReport

__all__ = ["CheckContext", "Predicate", "as_context"]


class CheckContext:
    """A problem plus memoized certified computations on it.

    Args:
        problem: the data.
        digits: requested precision of certified SVM solves (relative width ~ 10**-digits).
        time_limit: optional time limit (seconds) passed to each certified solve.
    """

    def __init__(
        self, problem: AttentionProblem, *, digits: int = 30, time_limit: float | None = None
    ) -> None:
        if not isinstance(problem, AttentionProblem):
            raise TypeError(f"expected an AttentionProblem, got {type(problem).__name__}")
        self.problem = problem
        self.digits = int(digits)
        self.time_limit = time_limit
        self._cache: dict[tuple, Any] = {}

    def alpha(self, alpha: Any) -> tuple[int, ...]:
        """Resolve token indices ("opt", a list, a comma string) against the problem."""
        return resolve_alpha(self.problem, alpha)

    def certificate(self, p: Any, *, svm: str = "attention", alpha: Any = None):
        """The certified l_p SVM solve (`certify.certify_svm`), computed once per (svm, alpha, p)."""
        from certify import svm as _svm  # looked up at call time (tests may substitute the solver)

        pf: Fraction = parse_p(p)
        a = self.alpha(alpha)
        key = ("cert", svm, a, pf)
        if key not in self._cache:
            try:
                cert = _svm.certify_svm(
                    self.problem,
                    pf,
                    svm=svm,
                    alpha=list(a),
                    digits=self.digits,
                    time_limit=self.time_limit,
                )
            except MdcertError:
                raise
            except (ArithmeticError, RuntimeError, ValueError, FloatingPointError) as exc:
                # an internal failure of the solver proves nothing: report "no verified result"
                from certify.certificate import Certificate, CertStatus

                cert = Certificate(
                    status=CertStatus.NO_VERIFIED_RESULT,
                    svm=svm,
                    p=pf,
                    alpha=a,
                    data_hash=self.problem.data_hash(),
                    d=self.problem.d,
                    digits=self.digits,
                    info={"error": f"{type(exc).__name__}: {exc}"},
                )
            self._cache[key] = cert
        return self._cache[key]

    def computed_certificate(self, p: Any, *, svm: str = "attention", alpha: Any = None):
        """The certificate of (svm, alpha, p) if `certificate` has computed it, else None (never solves)."""
        return self._cache.get(("cert", svm, self.alpha(alpha), parse_p(p)))

    def feasibility(self, *, svm: str = "attention", alpha: Any = None):
        """Certified feasibility (`certify.feasibility`), computed once per (svm, alpha)."""
        from certify.feasible import feasibility

        a = self.alpha(alpha)
        key = ("feas", svm, a)
        if key not in self._cache:
            self._cache[key] = feasibility(self.problem, svm=svm, alpha=list(a))
        return self._cache[key]

    def checked(self, cert, *, p: Fraction, svm: str, alpha: tuple[int, ...]) -> bool | None:
        """Whether certify's independent checker accepts ``cert`` as a certificate of this problem's
        ``svm`` at ``p`` and ``alpha`` (run once per certificate and request; None when the checker is
        not available). The expected p, svm and alpha are checked too: a certificate about another
        problem (e.g. from a substituted or mis-keyed solver) is never used (docs/theory.md section 4)."""
        key = ("checked", id(cert), p, svm, tuple(alpha))
        if key not in self._cache:
            try:
                from certify import check_certificate
            except ImportError:
                return None
            res = check_certificate(self.problem, cert, p=p, svm=svm, alpha=list(alpha))
            self._cache[key] = (cert, bool(res.ok))  # keeps cert alive so that its id is not reused
        return self._cache[key][1]

    def constraints(self, *, svm: str = "attention", alpha: Any = None):
        """The exact constraint system of an SVM (cached)."""
        a = self.alpha(alpha)
        key = ("cons", svm, a)
        if key not in self._cache:
            if svm == "attention":
                self._cache[key] = self.problem.attention_constraints(list(a))
            else:
                self._cache[key] = self.problem.decoder_constraints(list(a))
        return self._cache[key]


def as_context(problem_or_context: AttentionProblem | CheckContext) -> CheckContext:
    """Wrap a bare problem in a fresh `CheckContext`."""
    if isinstance(problem_or_context, CheckContext):
        return problem_or_context
    return CheckContext(problem_or_context)


class Predicate(abc.ABC):
    """A hypothesis of a theorem as a three-valued certified predicate.

    Subclasses are frozen dataclasses holding the predicate's parameters and set ``name``.
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def check(self, problem: AttentionProblem | CheckContext) -> HypothesisReport:
        """Evaluate on a problem; returns a report whose verdict is backed by its evidence."""
