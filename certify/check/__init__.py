"""The independent certificate checker that `mdcert verify` trusts (docs/theory.md section 4.6).

The subpackage holds the checker's own code, written independently of the solvers:

- `certify.check.checker`: `check_certificate`, which re-derives every claim of an attention,
  decoder or max-margin certificate (theory.md sections 4.6 and 7);
- `certify.check.rows`: the checker's own constraint rows;
- `certify.check.verified`: verified inverse-diagonal and Gordan-correction bounds with exact
  integer products (the solvers reuse them, so that what they claim is what the checker accepts).

Besides these, the checker trusts only the data model it reads through (the problem kinds, the
certificate record, exact numbers and the size limits of untrusted input) and python-flint;
theory.md section 4.6 lists every module and `tests/certify/check/test_trusted_base.py` checks that
importing this package loads exactly those. None of them imports a solver module, scipy, cvxpy,
Clarabel or torch (the import-linter contract in pyproject.toml). The regression checker
`certify.regression.check` (theory.md section 8.3) is trusted too; it stays beside the regression
data model it reads, since the regression solver reuses its bounds (see theory.md section 4.6).
"""

from __future__ import annotations

from certify.check.checker import CheckResult, ClaimCheck, check_certificate

__all__ = ["CheckResult", "ClaimCheck", "check_certificate"]
