"""The immutable classification-problem data model (docs/theory.md section 7).

`ClassificationProblem` holds plain labelled data: ``X [n, d]`` (float64) and ``y [n]``, either
binary labels in {-1, +1} or multiclass labels in {0, .., K-1} (K declared with ``classes`` or
inferred as ``max(y) + 1``), with an optional ``provenance`` record. It validates on construction
(one line on bad input), names its data by `data_hash`, loads and saves lossless ``.npz`` /
``.json`` files that carry ``kind = "classification"`` (docs/formats.md), and derives the exact
rows of the l_p max-margin program ``min ||w||_p s.t. A w >= 1``:

- binary: one row ``y_i x_i`` per example (variable w of d entries);
- multiclass (Crammer-Singer): one row ``vec((e_{y_i} - e_k) x_i^T)`` per example i and class
  ``k != y_i`` (variable W of K x d entries, row-major, so ``a^T vec(W) = (w_{y_i} - w_k)^T x_i``).

`conflicting_pair` finds two exactly equal points with different labels: the l_p program is then
infeasible, with a Gordan certificate of two entries (docs/theory.md section 7.2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from certify.exact import DyadicArray, dyadic
from certify.fields import check_provenance, numeric_array, provenance_text
from certify.rows import ConstraintSystem

__all__ = ["ClassificationProblem", "KIND", "load_problem"]

#: the value of the ``kind`` key of a classification problem file
KIND = "classification"


def _labels(y: np.ndarray, classes) -> int | None:
    """K (multiclass) or None (binary, labels +-1), after checking the labels; one line on bad input."""
    n = y.shape[0]
    if classes is not None:
        if isinstance(classes, np.ndarray) and classes.ndim == 0:
            classes = classes.item()
        if (
            isinstance(classes, bool)
            or not isinstance(classes, (int, np.integer, float))
            or not float(classes).is_integer()
            or not 2 <= int(classes) <= 10**6
        ):
            raise MdcertError(f"classes must be an integer K >= 2 (labels 0..K-1), got {classes!r}")
        classes = int(classes)
    elif np.all((y == 1.0) | (y == -1.0)):
        for label in (1.0, -1.0):
            if not np.any(y == label):
                raise MdcertError(
                    f"class {int(label):+d} has no example (all {n} labels are {int(-label):+d}); "
                    f"a binary problem needs both labels -1 and +1"
                )
        return None
    frac = np.flatnonzero(y != np.floor(y))
    if frac.size:
        raise MdcertError(
            f"labels must be -1/+1 (binary) or integers 0..K-1 (multiclass); "
            f"y[{frac[0]}] = {float(y[frac[0]])!r}"
        )
    K = classes if classes is not None else int(y.max()) + 1
    bad = np.flatnonzero((y < 0) | (y >= K))
    if bad.size:
        declared = f"the declared classes 0..{K - 1}" if classes is not None else "0..K-1"
        raise MdcertError(
            f"label y[{bad[0]}] = {float(y[bad[0]]):g} is outside {declared}; "
            f"use labels 0..K-1 (multiclass) or -1/+1 (binary)"
        )
    if K < 2:
        raise MdcertError(
            "a multiclass problem needs at least 2 classes (labels 0..K-1, K >= 2); all labels are 0"
        )
    empty = np.flatnonzero(np.bincount(y.astype(np.int64), minlength=K) == 0)
    if empty.size:
        raise MdcertError(
            f"class {int(empty[0])} has no example ({K} classes declared or inferred); drop the class "
            f"(relabel 0..K-1) or add examples"
        )
    return K


@dataclass(frozen=True, eq=False)
class ClassificationProblem:
    """Labelled points for the l_p max-margin program (docs/theory.md section 7). Immutable; validated.

    Attributes:
        X: points, shape (n, d), finite float64.
        y: labels, shape (n,): -1/+1 (binary) or 0..K-1 (multiclass).
        classes: K for a multiclass problem; None for a binary one. Given as an argument it declares
            K (labels outside 0..K-1 are refused); omitted, labels -1/+1 make a binary problem and
            labels 0..K-1 a multiclass one with K = max(y) + 1. Every class needs an example.
        provenance: optional JSON object (saved and shown, not part of `data_hash`).
    """

    X: np.ndarray
    y: np.ndarray
    classes: int | None = None
    provenance: dict | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        X = numeric_array("X", self.X, 2)
        y = numeric_array("y", self.y, 1)
        n, d = X.shape
        if n < 1 or d < 1:
            raise MdcertError(f"X must have shape (n, d) with n >= 1 and d >= 1; got {X.shape}")
        if y.shape != (n,):
            raise MdcertError(f"y must have shape ({n},) to match X, got {y.shape}")
        K = _labels(y, self.classes)
        X = X + 0.0  # -0.0 -> 0.0: equal points have equal bytes (and one data hash)
        X.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "classes", K)
        object.__setattr__(self, "provenance", check_provenance(self.provenance))

    # ------------------------------------------------------------------ shapes and identity
    @property
    def kind(self) -> str:
        """ "binary" or "multiclass": the program (and a certificate's ``svm`` field)."""
        return "binary" if self.classes is None else "multiclass"

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def K(self) -> int:
        """Classes: 2 for a binary problem."""
        return 2 if self.classes is None else self.classes

    @property
    def m(self) -> int:
        """Variables: d (binary) or K d (multiclass)."""
        return self.d if self.classes is None else self.classes * self.d

    @property
    def N(self) -> int:
        """Constraint rows: n (binary) or n (K - 1) (multiclass)."""
        return self.n if self.classes is None else self.n * (self.classes - 1)

    def data_hash(self) -> str:
        """SHA-256 of the kind, K and the float64 bytes (and shapes) of X and y (not provenance)."""
        h = hashlib.sha256(f"{KIND}:{self.kind}:{self.K}".encode())
        for arr in (self.X, self.y):
            h.update(str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
        return "sha256:" + h.hexdigest()

    def exact_X(self) -> DyadicArray:
        """Exact dyadic view of X."""
        if "X" not in self._cache:
            self._cache["X"] = dyadic(self.X)
        return self._cache["X"]

    def labels(self) -> np.ndarray:
        """Labels as int64: -1/+1 (binary) or 0..K-1."""
        return self.y.astype(np.int64)

    # ------------------------------------------------------------------ the program's rows
    def row_index(self) -> tuple[tuple[int, ...], ...]:
        """Per row: ``(i,)`` (binary) or ``(i, k)``, k != y_i in increasing order (multiclass)."""
        if self.classes is None:
            return tuple((i,) for i in range(self.n))
        yk = self.labels()
        return tuple((i, k) for i in range(self.n) for k in range(self.classes) if k != yk[i])

    def constraints(self) -> ConstraintSystem:
        """The exact rows of ``A w >= 1`` (module docstring) as a plain-row `ConstraintSystem` of
        ``m`` columns (kind "decoder": rows without a Kronecker factor; docs/theory.md section 7)."""
        X = self.exact_X()
        Xi = X.ints
        yk = self.labels()
        if self.classes is None:
            L = Xi * yk[:, None].astype(Xi.dtype)
            return ConstraintSystem(
                "decoder", self.row_index(), DyadicArray(L, X.exp), None, self.d
            )
        K, n, d = self.classes, self.n, self.d
        other = np.array([[k for k in range(K) if k != yk[i]] for i in range(n)], dtype=np.int64)
        L = np.zeros((n, K - 1, K, d), dtype=Xi.dtype)
        ii = np.repeat(np.arange(n), K - 1).reshape(n, K - 1)
        jj = np.tile(np.arange(K - 1), n).reshape(n, K - 1)
        L[ii, jj, yk[:, None]] = Xi[:, None, :]
        L[ii, jj, other] = -Xi[:, None, :]
        return ConstraintSystem(
            "decoder",
            self.row_index(),
            DyadicArray(L.reshape(n * (K - 1), K * d), X.exp),
            None,
            K * d,
        )

    def conflicting_pair(self) -> tuple[int, int] | None:
        """Two examples ``(i, j)``, i < j, with exactly equal points and different labels, or None."""
        if "conflict" not in self._cache:
            X = np.ascontiguousarray(self.X)  # -0.0 is 0.0 here: equal bytes = equal points
            seen: dict = {}
            rep = np.fromiter(  # the first example with the same point
                (seen.setdefault(X[i].tobytes(), i) for i in range(self.n)),
                dtype=np.int64,
                count=self.n,
            )
            clash = np.flatnonzero(self.y != self.y[rep])
            self._cache["conflict"] = (
                None if not clash.size else (int(rep[clash[0]]), int(clash[0]))
            )
        return self._cache["conflict"]

    # ------------------------------------------------------------------ I/O
    def to_dict(self) -> dict:
        out = {"kind": KIND, "X": self.X.tolist(), "y": self.y.tolist()}
        if self.classes is not None:
            out["classes"] = int(self.classes)
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` or ``.json`` (float64, lossless) atomically (`certify.io.atomic`: a unique
        temporary name in the target's folder, never a file the command did not create)."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in {".npz", ".json"}:
            raise MdcertError(f"cannot save to {str(path)!r}: use a .npz or .json file name")
        if path.is_dir() or not path.parent.is_dir():
            raise MdcertError(
                f"cannot save to {str(path)!r}: give a file name in an existing directory"
            )
        from certify.io.atomic import write_npz_atomic, write_text_atomic

        if suffix == ".json":
            return write_text_atomic(path, json.dumps(self.to_dict()))
        arrays = {"kind": np.array(KIND), "X": self.X, "y": self.y}
        if self.classes is not None:
            arrays["classes"] = np.array(self.classes, dtype=np.int64)
        if self.provenance is not None:
            arrays["provenance"] = np.array(provenance_text(self.provenance))
        write_npz_atomic(path, arrays)
        return path

    @classmethod
    def from_dict(cls, data: dict) -> "ClassificationProblem":
        missing = [k for k in ("X", "y") if k not in data]
        if missing:
            raise MdcertError(
                f"classification problem data lacks {', '.join(missing)}; it needs X (n x d) and y (n)"
            )
        extra = sorted(set(data) - {"kind", "X", "y", "classes", "provenance"})
        if extra:
            raise MdcertError(
                f"classification problem data has unknown keys {extra}; allowed: kind, X, y, classes, "
                f"provenance"
            )
        return cls(
            data["X"], data["y"], classes=data.get("classes"), provenance=data.get("provenance")
        )

    def describe(self) -> str:
        """One line: kind, sizes, class counts and provenance keys."""
        counts = np.bincount(self.labels() + (1 if self.classes is None else 0))
        shown = (
            f"{int(counts[2])} positive, {int(counts[0])} negative"
            if self.classes is None
            else f"K={self.classes}, class sizes {int(counts.min())}..{int(counts.max())}"
        )
        text = f"{self.kind} classification, n={self.n} d={self.d}, {shown}"
        if self.provenance:
            text += "; provenance: " + ", ".join(list(self.provenance)[:6])
        return text

    def __repr__(self) -> str:
        return f"ClassificationProblem({self.kind}, n={self.n}, d={self.d}, K={self.K})"


def load_problem(path: str | Path, *, memory_budget: int | None = None):
    """Read a problem file: a `ClassificationProblem` when it carries ``kind = "classification"``,
    else an `AttentionProblem` (docs/formats.md); bounded, strict and exact (`read_problem_file`)."""
    from certify.problem import AttentionProblem, read_problem_file

    data = read_problem_file(path, memory_budget=memory_budget)
    kind = data.get("kind")
    if isinstance(kind, np.ndarray):
        kind = kind.item() if kind.ndim == 0 and kind.dtype.kind == "U" else repr(kind)[:40]
    if kind is None or kind == "attention":
        data.pop("kind", None)
        return AttentionProblem.from_file_data(data, path=path)
    if kind == "regression":
        raise MdcertError(
            f"{str(path)!r} is a regression problem (X beta = y), not a classification or "
            f"attention problem; certify it with 'mdcert interpolate {Path(path).name} --p P'"
        )
    if kind != KIND:
        raise MdcertError(
            f"problem {str(path)!r} has unknown kind {str(kind)[:40]!r}; use 'classification' "
            f"(X, y) or omit kind (attention: X, y, z, v)"
        )
    data["kind"] = kind
    return ClassificationProblem.from_dict(data)
