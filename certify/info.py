"""What a problem file holds, and what looks suspicious in it (docs/theory.md sections 1.2, 1.3 and 3.1).

`problem_info` summarizes a problem for ``mdcert info``: sizes, lengths, zero padding detected
without ``lengths``, exact ties in the token scores, the globally optimal tokens, duplicated tokens,
the number N of attention-SVM rows against the d^2 variables, and a feasibility hint.
`input_warnings` gives the one-line warnings every command prints when it reads a problem.

All comparisons are exact (token scores from `AttentionProblem.token_scores_exact`, token equality
of float64 vectors). The feasibility hint is a proof only when it says "infeasible": a zero row
``vec((x_{i alpha_i} - x_it) z_i^T) = 0`` (a selected token equal to another token of its example, or
``z_i = 0``) cannot satisfy ``<row, W> >= 1`` (docs/theory.md section 3.1). Otherwise it is a hint:
N <= d^2 rows in general position are feasible, N > d^2 may not be.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

__all__ = [
    "Feasibility",
    "ProblemInfo",
    "problem_info",
    "trailing_zero_tokens",
    "duplicate_tokens",
    "input_warnings",
    "summarize",
]


class Feasibility(Enum):
    """The feasibility hint of the attention SVM for the selected tokens."""

    INFEASIBLE = "infeasible"  #: proven: a zero row
    FEW_ROWS = (
        "few rows"  #: N <= d^2: feasible when the rows are linearly independent (generic data)
    )
    MANY_ROWS = "many rows"  #: N > d^2: may be infeasible; certify it


@dataclass(frozen=True)
class ProblemInfo:
    """A summary of a problem (module docstring).

    Attributes:
        n, T, d: sizes.
        lengths: tokens per example, or None (full length).
        data_hash: `AttentionProblem.data_hash`.
        padded: (example, trailing all-zero tokens) for each example ending in zero tokens, only when the
            problem has no ``lengths`` (with lengths the padding is declared).
        ties: (example, tied tokens) where the largest exact token score is shared.
        optimal: the globally optimal token of each example (the first one when tied).
        duplicates: (example, tokens) groups of identical valid tokens (trailing zeros reported in
            ``padded`` are left out).
        rows: N, the number of attention-SVM rows (sum over examples of valid tokens - 1).
        variables: m = d^2.
        alpha: the tokens the hint is about: the stored alpha, else ``optimal``.
        alpha_source: "stored" or "optimal" ("optimal, tied" when some example is tied).
        zero_rows: (example, token) rows ``x_alpha - x_t = 0`` or with ``z_i = 0``.
        feasibility: the hint; ``hint`` says it in words.
    """

    n: int
    T: int
    d: int
    lengths: tuple[int, ...] | None
    data_hash: str
    padded: tuple[tuple[int, int], ...]
    ties: tuple[tuple[int, tuple[int, ...]], ...]
    optimal: tuple[int, ...]
    duplicates: tuple[tuple[int, tuple[int, ...]], ...]
    rows: int
    variables: int
    alpha: tuple[int, ...]
    alpha_source: str
    zero_rows: tuple[tuple[int, int], ...]
    feasibility: Feasibility
    hint: str

    @property
    def rows_per_variable(self) -> float:
        """N / d^2."""
        return self.rows / self.variables

    def to_json(self) -> dict:
        """Everything, in full (no list is shortened)."""
        return {
            "n": self.n,
            "T": self.T,
            "d": self.d,
            "lengths": None if self.lengths is None else list(self.lengths),
            "data_hash": self.data_hash,
            "padding_without_lengths": [{"example": i, "zero_tokens": k} for i, k in self.padded],
            "ties": [{"example": i, "tokens": list(ts)} for i, ts in self.ties],
            "optimal_tokens": list(self.optimal),
            "duplicated_tokens": [{"example": i, "tokens": list(ts)} for i, ts in self.duplicates],
            "rows": self.rows,
            "variables": self.variables,
            "rows_per_variable": self.rows_per_variable,
            "alpha": list(self.alpha),
            "alpha_source": self.alpha_source,
            "zero_rows": [list(r) for r in self.zero_rows],
            "feasibility": self.feasibility.value,
            "hint": self.hint,
        }


def trailing_zero_tokens(problem) -> np.ndarray:
    """Per example, the number of all-zero tokens at its end (int64, (n,)); all zeros when the problem
    declares ``lengths`` (its padding is declared, not suspicious)."""
    if problem.lengths is not None:
        return np.zeros(problem.n, dtype=np.int64)
    nonzero = np.any(problem.X != 0, axis=2)  # (n, T)
    last = np.where(nonzero.any(axis=1), problem.T - 1 - np.argmax(nonzero[:, ::-1], axis=1), -1)
    return (problem.T - 1 - last).astype(np.int64)


def duplicate_tokens(
    problem, *, skip: np.ndarray | None = None
) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Groups of identical valid tokens within an example (exact float64 equality, -0.0 = 0.0); the last
    ``skip[i]`` tokens of example i are left out. Linear in the data: a 64-bit hash of each token
    finds the candidate examples (sorted hashes per example), whose tokens are then compared exactly."""
    valid = problem.token_mask.copy()
    if skip is not None:
        valid &= np.arange(problem.T)[None, :] < (problem.valid_lengths - skip)[:, None]
    bits = np.ascontiguousarray(problem.X + 0.0).view(np.uint64)  # (n, T, d)
    coef = np.random.default_rng(0).integers(1, 2**63, size=problem.d, dtype=np.uint64) | np.uint64(
        1
    )
    h = np.zeros(valid.shape, dtype=np.uint64)
    for k in range(problem.d):  # wrapping uint64 arithmetic
        h = h * np.uint64(0x9E3779B97F4A7C15) + bits[:, :, k] * coef[k]
    h[~valid] = np.arange(
        np.count_nonzero(~valid), dtype=np.uint64
    )  # candidates only; checked below
    s = np.sort(h, axis=1)
    out = []
    for i in np.flatnonzero(np.any(s[:, 1:] == s[:, :-1], axis=1)):
        groups: dict[bytes, list[int]] = {}
        for t in np.flatnonzero(valid[i]):
            groups.setdefault(bits[i, t].tobytes(), []).append(int(t))
        out += [(int(i), tuple(ts)) for ts in groups.values() if len(ts) > 1]
    return tuple(sorted(out))


def _zero_rows(problem, alpha: np.ndarray) -> tuple[tuple[int, int], ...]:
    sel = problem.X[np.arange(problem.n), alpha]  # (n, d)
    same = np.all(problem.X == sel[:, None, :], axis=2) | ~np.any(problem.z != 0, axis=1)[:, None]
    same &= problem.token_mask
    same[np.arange(problem.n), alpha] = False
    return tuple((int(i), int(t)) for i, t in zip(*np.nonzero(same)))


def problem_info(problem) -> ProblemInfo:
    """The `ProblemInfo` of an `AttentionProblem` (module docstring)."""
    pad = trailing_zero_tokens(problem)
    padded = tuple((int(i), int(pad[i])) for i in np.flatnonzero(pad))
    tokens = problem.optimal_indices()
    dups = duplicate_tokens(problem, skip=pad)
    if problem.alpha is not None:
        alpha, source = tuple(int(a) for a in problem.alpha), "stored"
    else:
        alpha, source = tokens.indices, "optimal, tied (first token)" if tokens.ties else "optimal"
    zero = _zero_rows(problem, np.asarray(alpha, dtype=np.int64))
    rows = int((problem.valid_lengths - 1).sum())
    m = problem.d * problem.d
    if zero:
        i, t = zero[0]
        why = "z_i = 0" if not np.any(problem.z[i]) else f"x_{i},{alpha[i]} = x_{i},{t}"
        feas = Feasibility.INFEASIBLE
        hint = (
            f"infeasible for alpha = {source}: {len(zero)} zero row(s), first example {i} token {t} ({why}); "
            f"a zero row cannot reach margin 1"
        )
    elif rows <= m:
        feas = Feasibility.FEW_ROWS
        hint = (
            f"N = {rows} <= d^2 = {m}: feasible when the rows are linearly independent (generic data); "
            f"mdcert certify decides"
        )
    else:
        feas = Feasibility.MANY_ROWS
        hint = f"N = {rows} > d^2 = {m}: may be infeasible; mdcert certify decides (exit 3 with a Gordan certificate)"
    return ProblemInfo(
        problem.n,
        problem.T,
        problem.d,
        None if problem.lengths is None else tuple(int(k) for k in problem.lengths),
        problem.data_hash(),
        padded,
        tokens.ties,
        tokens.indices,
        dups,
        rows,
        m,
        alpha,
        source,
        zero,
        feas,
        hint,
    )


def summarize(items, *, first: int = 5) -> str:
    """``a, b, c, ... (K in all)``: the first items of a long list and its count."""
    items = list(items)
    shown = ", ".join(str(x) for x in items[:first])
    return shown + (f", ... ({len(items)} in all)" if len(items) > first else "")


def input_warnings(problem) -> tuple[str, ...]:
    """One-line warnings about suspicious but valid data: trailing all-zero tokens without ``lengths``
    (docs/theory.md section 1.3), identical tokens within an example."""
    out = []
    pad = trailing_zero_tokens(problem)
    hit = np.flatnonzero(pad)
    if hit.size:
        out.append(
            f"{hit.size} of {problem.n} examples end in all-zero tokens (example {int(hit[0])}: last "
            f"{int(pad[hit[0]])} of {problem.T}) and the file has no 'lengths': the zeros are tokens of the "
            f"problem; if they are padding, store lengths (tokens per example, docs/formats.md 'Problem files')"
        )
    dups = duplicate_tokens(problem, skip=pad)
    if dups:
        i, ts = dups[0]
        out.append(
            f"{len(dups)} group(s) of identical tokens within an example (example {i}: tokens "
            f"{summarize(ts, first=4)}); selecting one of them makes the attention SVM infeasible"
        )
    return tuple(out)
