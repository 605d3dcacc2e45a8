"""Regression problems: data X (N x D) and targets y (N), read exactly (docs/theory.md section 8.1).

The interpolation programs of smoothed sign descent (arXiv 2410.14158) are about ``X beta = y``.
A `RegressionProblem` holds X and y as float64, validated like the attention problems: finite,
non-empty, the right shapes; every value is a dyadic rational read exactly, and `data_hash` names
the data a certificate is about. Files: ``.npz`` with arrays ``X``, ``y`` and ``kind = "regression"``,
or ``.json`` ``{"kind": "regression", "X": [[...]], "y": [...]}`` (docs/formats.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from certify.exactfloat import exact_float64 as _exact
from certify.exactfloat import json_float64

__all__ = ["RegressionProblem", "load_regression", "exact_float64", "declares_regression"]

KIND = "regression"


def exact_float64(name: str, value, ndim: int) -> np.ndarray:
    """``value`` as a read-only float64 array of ``ndim`` dimensions, converted exactly or refused in
    one line (`certify.exactfloat`: the rule of docs/formats.md, "Exact input"); NaN and inf refused."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.tolist()
    out = _exact(name, value) if not _is_json(value) else json_float64(name, value)
    if out.ndim != ndim:
        raise MdcertError(f"{name} must have {ndim} dimension(s), got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        idx = np.unravel_index(int(np.flatnonzero(~np.isfinite(out).ravel())[0]), out.shape)
        raise MdcertError(
            f"{name} entry {tuple(int(j) for j in idx)} is not finite; remove NaN and inf values"
        )
    out.setflags(write=False)
    return out


def _is_json(value) -> bool:
    """Nested lists holding a `Decimal` (numbers parsed from JSON text by the exact reader)."""
    from decimal import Decimal

    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Decimal):
            return True
        if isinstance(v, list):
            stack.extend(v)
    return False


@dataclass(frozen=True, eq=False)
class RegressionProblem:
    """Overparameterized regression data (docs/theory.md section 8.1).

    Attributes:
        X: (N, D) float64 design matrix.
        y: (N,) float64 targets.
        provenance: where the data came from (not part of the data hash).
    """

    X: np.ndarray
    y: np.ndarray
    provenance: dict | None = field(default=None)

    def __post_init__(self) -> None:
        X = exact_float64("X", self.X, 2)
        y = exact_float64("y", self.y, 1)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise MdcertError(f"X must have at least one row and one column, got shape {X.shape}")
        if y.shape[0] != X.shape[0]:
            raise MdcertError(
                f"y has {y.shape[0]} entries but X has {X.shape[0]} rows; give one target per row"
            )
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    @property
    def N(self) -> int:
        return int(self.X.shape[0])

    @property
    def D(self) -> int:
        return int(self.X.shape[1])

    def data_hash(self) -> str:
        """SHA-256 of the kind, the shapes and the float64 bytes of X and y."""
        h = hashlib.sha256(KIND.encode())
        for arr in (self.X, self.y):
            h.update(str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
        return "sha256:" + h.hexdigest()

    def save(self, path: str | Path) -> None:
        """Write ``.npz`` or ``.json`` (by suffix) atomically (`certify.io.atomic`)."""
        from certify.io.atomic import write_npz_atomic, write_text_atomic

        path = Path(path)
        if path.suffix == ".json":
            write_text_atomic(
                path, json.dumps({"kind": KIND, "X": self.X.tolist(), "y": self.y.tolist()})
            )
        else:
            write_npz_atomic(path, {"kind": np.array(KIND), "X": self.X, "y": self.y})


def load_regression(path: str | Path, *, budget: int | None = None) -> RegressionProblem:
    """Read a regression problem file (``.npz`` or ``.json``) with the bounded, exact readers of
    `certify.loaders` (a regular file; sizes checked against ``budget`` before reading); one-line
    `MdcertError` on bad input."""
    from certify.memory import default_budget
    from certify.loaders import read_json_object, read_npz, regular_file

    path = regular_file(
        path,
        what="regression problem",
        missing=f"regression problem file not found: {str(path)!r}; write one with "
        "'mdcert interpolate PROBLEM --synth block ...'",
    )
    budget = default_budget() // 2 if budget is None else budget
    if path.suffix == ".json":
        data = read_json_object(path, what="regression problem", budget=budget)
    else:
        data = read_npz(path, keys=None, what="regression problem", budget=budget)
    kind = data.get("kind")
    kind = str(kind.item() if isinstance(kind, np.ndarray) else kind) if kind is not None else None
    if kind != KIND:
        raise MdcertError(
            f"{path}: not a regression problem (kind = {kind!r}); it needs kind = 'regression', "
            "X (N x D) and y (N)"
        )
    missing = [k for k in ("X", "y") if k not in data]
    if missing:
        raise MdcertError(f"{path}: missing key(s) {', '.join(missing)}")
    return RegressionProblem(data["X"], data["y"])


def declares_regression(path: str | Path) -> bool:
    """Whether a problem file declares ``kind = "regression"`` (False for any unreadable file: the
    caller's own loader then reports what is wrong)."""
    path = Path(path)
    from certify.memory import default_budget
    from certify.loaders import read_json_object, read_npz, regular_file

    try:
        path = regular_file(path, what="problem", missing="")
        if path.suffix == ".json":
            data = read_json_object(path, what="problem", budget=default_budget() // 2)
            return data.get("kind") == KIND
        kind = read_npz(path, keys=("kind",), what="problem", budget=default_budget() // 2).get(
            "kind"
        )
        return kind is not None and str(kind.item()) == KIND
    except (MdcertError, ValueError, OSError, KeyError):
        return False
