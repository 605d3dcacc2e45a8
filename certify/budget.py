"""Memory budget of a certified solve (docs/theory.md section 4.5).

`certify_svm` estimates the memory a solve needs from the sizes alone (N rows, d, n examples, m
variables) before it allocates anything large, and answers NO_VERIFIED_RESULT with a message when the
estimate exceeds the budget; a MemoryError that still happens is caught the same way. The estimate
grows with N d (the data and its exact copies) plus the working sets (at most a few m rows), never
with N^2 or N m. The budget it is compared with is the project's one reading of the memory this
process may use, `certify.memory.default_budget`.
"""

from __future__ import annotations

__all__ = ["solve_bytes", "plain_solve_bytes", "PLAIN_BYTES_PER_ENTRY", "ROW_FACTOR_BYTES"]

#: peak bytes per entry of the N x m rows of a classification program (`certify.maxmargin`): the
#: int64 exact rows, their float copies and the solver's blocks; measured 67-82 (binary (20000, 256)
#: and (10^5, 512), digits K = 10; benchmarks/README.md), with a third more as margin
PLAIN_BYTES_PER_ENTRY = 112

#: peak bytes per entry of the N x d left factors of an attention program (`solve_bytes`): the
#: measured peaks grow by 2.31 GB from (2000, 32, 64) to (10^4, 32, 64) at every p, 129 bytes per
#: added entry once the data's own 16 per token entry is taken out; 144 keeps a ninth as margin
#: (224 before the split exact blocks of `certify.fmpzblocks`)
ROW_FACTOR_BYTES = 144


def solve_bytes(*, N: int, d: int, m: int, n: int, T: int, structured: bool) -> int:
    """Estimated peak bytes of `certify_svm` on a system of N rows (n examples of T tokens).

    The data (float64 tokens, 16 bytes per entry with their exact dyadic copy) and the rows'
    factors and per-row arrays (`ROW_FACTOR_BYTES` per entry of the N x d left factors: int64
    differences a block at a time, the split exact blocks of `certify.fmpzblocks`, float copies,
    L-BFGS-B and screening state) take O(N d + n T d); the dense path holds the N x m float rows and
    N x N Hessians; the structured path a working set of about ``min(N, m)`` dense rows (capped to
    the budget as it grows, see `certify.workingset`) and the refinement's systems on the active set
    ``|S| <= min(N, m)``. An upper estimate, calibrated on the measured peaks of planted (n, 32, 64)
    at every p in {1.1, 1.75, 2, 3} (benchmarks/README.md, the ladder after the sixth session of
    issue 25): 0.16-0.21 / 1.03-1.12 / 3.41-3.46 GB at n = 100 / 2000 / 10^4 against estimates of
    1.2 / 2.5 / 5.1 GB (1.5x at 10^4; 2.3x at 2000, where the fixed working-set term dominates)."""
    data = 16 * n * T * d + ROW_FACTOR_BYTES * N * d
    if not structured:
        return data + 8 * (3 * N * m + 4 * N * N)
    # the tight-row Gram of Kronecker rows is int64 limbs (`certify.check.kron`), its inverse
    # float64 and int64 digits: 32 bytes an entry (plain rows' Gram: Python integers, 176)
    return data + _active_bytes(N, m, tight_entry=32)


def _active_bytes(N: int, m: int, *, tight_entry: int = 176) -> int:
    """The working set of about ``s = min(N, m)`` dense rows (`certify.workingset`) and the
    refinement's systems on the active set ``|S| <= s``."""
    from certify.bounds import TIGHT_LIMIT
    from certify.workingset import working_set_bytes

    s = min(N, m)
    return (
        working_set_bytes(s, m) + 8 * (s * m + 3 * s * s) + tight_entry * min(s, TIGHT_LIMIT) ** 2
    )


def plain_solve_bytes(*, N: int, m: int) -> int:
    """Estimated peak bytes of `certify.maxmargin.certify_max_margin` on N dense rows of m variables
    (classification: the rows are stored, not Kronecker factors): `PLAIN_BYTES_PER_ENTRY` per entry
    plus the working sets and active-set systems of `solve_bytes`'s structured path."""
    return PLAIN_BYTES_PER_ENTRY * N * m + _active_bytes(N, m)
