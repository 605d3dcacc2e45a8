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
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from certify.errors import MdcertError

__all__ = ["RegressionProblem", "load_regression", "exact_float64", "declares_regression"]

KIND = "regression"


def exact_float64(name: str, value, ndim: int) -> np.ndarray:
    """``value`` as a read-only float64 array of ``ndim`` dimensions when every entry converts exactly
    (float16/32/64, integers that float64 holds exactly, long doubles that are float64 values); else a
    one-line `MdcertError` naming the first entry that would round (docs/formats.md)."""
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise MdcertError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.dtype == object:  # JSON lists: Python ints and floats, never bools
        flat = list(arr.ravel())
        for i, v in enumerate(flat):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise MdcertError(f"{name} entry {tuple(int(j) for j in np.unravel_index(i, arr.shape))} is {v!r}, not a number")
        out = np.array([float(v) if not isinstance(v, int) or abs(v) < 1 << 1023 else math.inf for v in flat])
        same = [isinstance(v, float) or (math.isfinite(o) and int(o) == v) for v, o in zip(flat, out)]
    elif arr.dtype.kind in "iuf" and arr.dtype != bool:
        with np.errstate(all="ignore"):
            out = arr.astype(np.float64).ravel()
        if arr.dtype.kind == "f" and arr.dtype.itemsize <= 8:
            same = [True] * out.size
        else:  # integers beyond 2^53 or long doubles: compare the float64 value with the stored one
            same = list((out.astype(arr.dtype) == arr.ravel()) & np.isfinite(out) | ~np.isfinite(arr.ravel()))
    else:
        raise MdcertError(f"{name} must hold numbers, got dtype {arr.dtype}")
    for i, ok in enumerate(same):
        if not ok:
            idx = np.unravel_index(i, arr.shape)
            raise MdcertError(f"{name} entry {tuple(int(j) for j in idx)} = {arr.ravel()[i]} is not exactly a float64 "
                              "number; scale the data or give float64 values")
    out = out.reshape(arr.shape)
    if not np.all(np.isfinite(out)):
        idx = np.unravel_index(int(np.flatnonzero(~np.isfinite(out).ravel())[0]), out.shape)
        raise MdcertError(f"{name} entry {tuple(int(j) for j in idx)} is not finite; remove NaN and inf values")
    out.setflags(write=False)
    return out


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
            raise MdcertError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows; give one target per row")
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
            write_text_atomic(path, json.dumps({"kind": KIND, "X": self.X.tolist(), "y": self.y.tolist()}))
        else:
            write_npz_atomic(path, {"kind": np.array(KIND), "X": self.X, "y": self.y})


def load_regression(path: str | Path) -> RegressionProblem:
    """Read a regression problem file (``.npz`` or ``.json``); one-line `MdcertError` on bad input."""
    path = Path(path)
    if path.suffix == ".json":
        from certify.limits import read_json_file

        data = read_json_file(path, what="problem")
        if not isinstance(data, dict):
            raise MdcertError(f"{path}: a regression problem is a JSON object with keys kind, X, y")
    else:
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (ValueError, OSError) as exc:
            raise MdcertError(f"{path}: not a readable .npz file ({exc})") from None
    kind = data.get("kind")
    kind = str(kind.item() if isinstance(kind, np.ndarray) else kind) if kind is not None else None
    if kind != KIND:
        raise MdcertError(f"{path}: not a regression problem (kind = {kind!r}); it needs kind = 'regression', "
                          "X (N x D) and y (N)")
    missing = [k for k in ("X", "y") if k not in data]
    if missing:
        raise MdcertError(f"{path}: missing key(s) {', '.join(missing)}")
    return RegressionProblem(data["X"], data["y"])


def declares_regression(path: str | Path) -> bool:
    """Whether a problem file declares ``kind = "regression"`` (False for any unreadable file: the
    caller's own loader then reports what is wrong)."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            from certify.limits import read_json_file

            data = read_json_file(path, what="problem")
            return isinstance(data, dict) and data.get("kind") == KIND
        with np.load(path, allow_pickle=False) as z:
            return "kind" in z.files and str(z["kind"].item()) == KIND
    except (MdcertError, ValueError, OSError, KeyError):
        return False
