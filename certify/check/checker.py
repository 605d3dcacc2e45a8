"""The independent certificate checker (docs/theory.md section 4.6; issue 3 item 5).

Trusted code, meant to be read in one sitting. It imports no solver (no cvxpy, no scipy, no
torch) and none of the solver modules of `certify`: only the data model, the certificate record
and python-flint. From the problem data and the certificate's exact vectors it recomputes, with
exact integers and outward-rounded arb balls:

- rows (built by the trusted `certify.check.rows`): attention / decoder, or max-margin (docs/theory.md section 7);
- identity: data hash, svm, alpha, p (and, if the caller passes them, that they are the expected ones);
- optimal: ``min A w >= 1`` exactly; ``lam >= 0``; ``OPT <= ||w||_p``; ``OPT >= 1^T lam/||A^T lam||q``;
  distance ``||w - w*||_p``, normalized-direction and Bregman bounds (docs/theory.md section 4 formulas);
  each row claimed inactive: ``a_i^T w - 1 > ||a_i||q dist``; each row claimed tight: a positive
  lower bound on its unique multiplier ``t lam_i - ||r_i||_p eps`` with ``||r_i||_2^2 = (M^-1)_ii``,
  ``M = A_S' A_S'^T`` on the rows S' not claimed inactive (which must carry all of lam; at most
  ``min(m, TIGHT_GROUPS)`` distinct rows, else the tight claims are refused before M is formed);
  with ``exact_kkt`` (p = 2): ``w = A^T lam`` and complementary slackness, in exact rationals;
- infeasible: ``g >= 0``, ``g != 0``, ``A^T g = 0`` exactly (Gordan), or up to a correction on a basis of
  rows verified with exact products (`certify.check.verified`).

A claim is accepted only if it is implied by (at least as weak as) what is recomputed. A certificate
is untrusted input: before any arithmetic, every integer, exponent and bound must lie within the
size limits of `certify.limits` (relative to the problem: integers of at most about 213,000 bits
plus a data-size term, exponents likewise; claim ``size_limits``), and no quantity of the
certificate is ever converted to a float (detail strings use `format_sci`): it is rejected, never
a crash or a hang.
"""

from __future__ import annotations

from typing import NamedTuple


from certify.certificate import Certificate, CertStatus
from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.exact import format_exact
from certify.limits import size_budget, size_violation
from certify.problem import AttentionProblem
from certify.check.verified import gordan_check
from certify.check.claims import Rows, check_optimal

__all__ = ["ClaimCheck", "CheckResult", "check_certificate"]


class ClaimCheck(NamedTuple):
    """One re-checked claim of a certificate (docs/theory.md section 4.6)."""

    name: str
    ok: bool
    detail: str


class CheckResult(NamedTuple):
    """Every claim re-checked; ``ok`` only if all hold (docs/theory.md section 4.6)."""

    ok: bool
    claims: tuple[ClaimCheck, ...]
    first_failure: str | None


_ONLY = {
    CertStatus.OPTIMAL: (
        "opt_lower",
        "opt_upper",
        "distance_upper",
        "direction_error_upper",
        "bregman_upper",
        "support",
        "w",
        "lam",
        "exact_kkt",
    ),
    CertStatus.INFEASIBLE: ("gordan", "gordan_basis"),
}  # fields that only this status proves


def check_certificate(
    problem: AttentionProblem | ClassificationProblem,
    cert: Certificate | dict,
    *,
    p=None,
    svm: str | None = None,
    alpha=None,
    bits: int | None = None,
) -> CheckResult:
    """Recompute every claim of ``cert`` from ``problem`` (docs/theory.md section 4.6; see module docstring).

    Args:
        problem: the data the certificate claims to be about (attention or classification data).
        cert: a `Certificate` or its JSON dict.
        p, svm, alpha: optional expected values; a certificate about anything else is rejected.
        bits: ball precision (default: from the sizes of the exact vectors).
    """
    import flint

    from certify.exact import parse_p
    from certify.problem import resolve_alpha

    if not isinstance(cert, Certificate):
        cert = Certificate.from_json(cert)  # type-checks every field (MdcertError on bad input)
    claims: list[ClaimCheck] = []

    def add(name: str, ok: bool, detail: str) -> None:
        claims.append(ClaimCheck(name, bool(ok), detail))

    add(
        "data_hash",
        cert.data_hash == problem.data_hash(),
        "certificate names this data"
        if cert.data_hash == problem.data_hash()
        else "data hash differs: the certificate is about other data",
    )
    if p is not None:
        add(
            "p",
            parse_p(p) == cert.p,
            f"certificate p = {format_exact(cert.p)[:80]}, expected {format_exact(parse_p(p))}",
        )
    if svm is not None:
        add("svm", svm == cert.svm, f"certificate svm = {cert.svm}, expected {svm}")
    if cert.d != problem.d:  # consumers reshape w with it
        add("d", False, f"certificate d = {cert.d}, the data has d = {problem.d}")
    extra = [
        k
        for s, keys in _ONLY.items()
        if s is not cert.status
        for k in keys
        if getattr(cert, k) not in (None, False)
    ]
    add(
        "unverified_fields",
        not extra,
        f"status {cert.status.value} cannot carry {extra}"
        if extra
        else "no field beyond what the status proves",
    )
    if isinstance(problem, ClassificationProblem):  # the problem's own program, no token indices
        a = () if cert.svm == problem.kind and not cert.alpha else None
        if a is None:
            add(
                "svm",
                False,
                f"certificate svm = {cert.svm}, alpha = {list(cert.alpha)[:4]}; this data needs "
                f"svm = {problem.kind}, alpha = []",
            )
    else:
        try:
            a = resolve_alpha(problem, list(cert.alpha))
            if cert.svm not in ("attention", "decoder"):
                add("svm", False, f"certificate svm = {cert.svm} is about classification data")
            if alpha is not None and tuple(resolve_alpha(problem, alpha)) != a:
                add(
                    "alpha",
                    False,
                    f"certificate alpha = {list(a)}, expected {list(resolve_alpha(problem, alpha))}",
                )
        except MdcertError as exc:
            add("alpha", False, str(exc))
            a = None
    if a is not None and all(cl.ok for cl in claims):
        rows = Rows(problem, cert.svm, a)
        why = size_violation(
            cert, size_budget(p=cert.p, rows_L=rows.L, rows_R=rows.R, rows_exp=rows.exp, m=rows.m)
        )
        add(
            "size_limits",
            why is None,
            why or "every integer and exponent within this problem's limits",
        )
    if a is not None and all(cl.ok for cl in claims):
        sizes = [abs(k).bit_length() for v in (cert.w, cert.lam) if v is not None for k in v.ints]
        with flint.ctx.workprec(bits or 64 + max([128] + sizes)):
            if cert.status is CertStatus.OPTIMAL:
                check_optimal(rows, cert, add)
            elif (
                cert.status is CertStatus.INFEASIBLE
            ):  # an exact Gordan vector, or one up to a verified correction
                add("gordan", *gordan_check(rows, cert.gordan, cert.gordan_basis))
            else:
                add("status", True, "no_verified_result: nothing is claimed")
    first = next((f"{cl.name}: {cl.detail}" for cl in claims if not cl.ok), None)
    return CheckResult(first is None, tuple(claims), first)
