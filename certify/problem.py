"""The immutable attention-problem data model (docs/theory.md sections 1, 1.3 and 3).

`AttentionProblem` holds ``X [n, T, d]``, ``y [n]`` in {-1, +1}, ``z [n, d]``, the decoder
``v [d]``, optional token indices ``alpha [n]``, optional per-example ``lengths [n]`` (variable-length
sequences: tokens ``t >= lengths[i]`` are zero padding and take part in nothing) and an optional
``provenance`` record. It validates on construction, loads and saves lossless ``.npz`` / ``.json``,
and derives exact token scores, globally optimal indices (ties reported) and the exact constraint
systems of the attention and decoder SVMs.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from certify.errors import InputWarning, MdcertError
from certify.exact import DyadicArray, dyadic, dyadic_parts
from certify.exactdot import exact_dot
from certify.fields import check_lengths, check_provenance, numeric_array, provenance_text
from certify.rows import ConstraintSystem, OptimalTokens
from certify.alpha import alpha_indices, resolve_alpha
from certify.problem_file import read_problem_file

__all__ = [
    "AttentionProblem",
    "ConstraintSystem",
    "OptimalTokens",
    "read_problem_file",
    "resolve_alpha",
    "alpha_indices",
    "token_differences",
]  # rows: re-exported


@dataclass(frozen=True, eq=False)
class AttentionProblem:
    """A dataset for single-head attention (docs/theory.md section 1). Immutable; validated on creation.

    Attributes:
        X: tokens, shape (n, T, d).
        y: labels in {-1, +1}, shape (n,).
        z: comparison (query) vectors, shape (n, d).
        v: decoder, shape (d,).
        alpha: optional token indices, shape (n,).
        lengths: optional tokens per example, shape (n,), each in 2..T (docs/theory.md section 1.3).
            Tokens ``t >= lengths[i]`` are padding: stored as zeros, in no constraint, softmax, score
            or predicate. None (or all equal to T) means full length; a full-length problem is
            bitwise the problem without lengths (same data hash, same certificates).
        provenance: optional JSON object describing where the data came from (source file and its
            sha256, tokenizer/encoder sha256, projection seed, selection, ...). Saved and shown, but
            not part of `data_hash`: it describes the data, it does not define it - two files with the
            same arrays are the same problem, and a certificate stays valid when a note is edited.
    """

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    v: np.ndarray
    alpha: np.ndarray | None = None
    lengths: np.ndarray | None = None
    provenance: dict | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        X = numeric_array("X", self.X, 3)
        y = numeric_array("y", self.y, 1)
        z = numeric_array("z", self.z, 2)
        v = numeric_array("v", self.v, 1)
        n, T, d = X.shape
        if n < 1 or T < 2 or d < 1:
            raise MdcertError(
                f"X must have shape (n, T, d) with n >= 1, T >= 2, d >= 1; got {X.shape}"
            )
        if y.shape != (n,):
            raise MdcertError(f"y must have shape ({n},) to match X, got {y.shape}")
        if z.shape != (n, d):
            raise MdcertError(f"z must have shape ({n}, {d}) to match X, got {z.shape}")
        if v.shape != (d,):
            raise MdcertError(f"v must have shape ({d},) to match X, got {v.shape}")
        bad = np.flatnonzero((y != 1.0) & (y != -1.0))
        if bad.size:
            raise MdcertError(f"labels must be -1 or +1; y[{bad[0]}] = {float(y[bad[0]])!r}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "z", z)
        object.__setattr__(self, "v", v)
        object.__setattr__(self, "lengths", check_lengths(self.lengths, X))
        object.__setattr__(self, "provenance", check_provenance(self.provenance))
        if self.alpha is not None:
            given = self.alpha
            object.__setattr__(self, "alpha", None)
            a = np.array(resolve_alpha(self, given), dtype=np.int64)
            a.setflags(write=False)
            object.__setattr__(self, "alpha", a)

    # ------------------------------------------------------------------ shapes and identity
    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def T(self) -> int:
        return self.X.shape[1]

    @property
    def d(self) -> int:
        return self.X.shape[2]

    @property
    def valid_lengths(self) -> np.ndarray:
        """Tokens per example, int64 (n,): ``lengths``, or T everywhere for a full-length problem."""
        if "valid_lengths" not in self._cache:
            out = (
                np.full(self.n, self.T, dtype=np.int64)
                if self.lengths is None
                else self.lengths.copy()
            )
            out.setflags(write=False)
            self._cache["valid_lengths"] = out
        return self._cache["valid_lengths"]

    @property
    def token_mask(self) -> np.ndarray:
        """Bool (n, T): True for the valid tokens ``t < lengths[i]``, False for padding."""
        if "token_mask" not in self._cache:
            mask = np.arange(self.T)[None, :] < self.valid_lengths[:, None]
            mask.setflags(write=False)
            self._cache["token_mask"] = mask
        return self._cache["token_mask"]

    def data_hash(self) -> str:
        """SHA-256 of the float64 bytes (and shapes) of X, y, z, v, and of the int64 lengths when the
        problem has padding: names the data a certificate is about (provenance is not part of it)."""
        h = hashlib.sha256()
        for arr in (self.X, self.y, self.z, self.v):
            h.update(str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
        if self.lengths is not None:
            h.update(b"lengths" + str(self.lengths.shape).encode())
            h.update(np.ascontiguousarray(self.lengths, dtype="<i8").tobytes())
        return "sha256:" + h.hexdigest()

    def with_alpha(self, alpha) -> "AttentionProblem":
        """A copy with token indices set (``None`` removes them); lengths and provenance are kept."""
        return AttentionProblem(
            self.X,
            self.y,
            self.z,
            self.v,
            alpha=None if alpha is None else resolve_alpha(self, alpha),
            lengths=self.lengths,
            provenance=self.provenance,
        )

    def padded(self, T: int) -> "AttentionProblem":
        """A copy with zero padding tokens appended up to ``T`` tokens per example (docs/theory.md section 1.3):
        the same problem (same constraints, certificates up to the data hash, paths and verdicts), e.g.
        to stack problems of different lengths."""
        if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < self.T:
            raise MdcertError(
                f"cannot pad to T = {T!r}: give an integer >= the current T = {self.T}"
            )
        X = np.zeros((self.n, int(T), self.d))
        X[:, : self.T] = self.X
        return AttentionProblem(
            X,
            self.y,
            self.z,
            self.v,
            alpha=self.alpha,
            lengths=self.valid_lengths,
            provenance=self.provenance,
        )

    # ------------------------------------------------------------------ exact views
    def exact(self, name: str) -> DyadicArray:
        """Exact dyadic view of "X", "y", "z" or "v"."""
        if name not in self._cache:
            self._cache[name] = dyadic(getattr(self, name))
        return self._cache[name]

    def token_scores(self) -> np.ndarray:
        """Float64 token scores ``gamma_it = y_i v^T x_it`` (approximate; see `token_scores_exact`).
        Padding tokens score 0 here: mask them with `token_mask`."""
        return self.y[:, None] * np.einsum("ntd,d->nt", self.X, self.v)

    def token_scores_exact(self) -> tuple[np.ndarray, int]:
        """Exact token scores as (object array of ints (n, T), binary exponent): ``X v`` by
        `certify.exactdot.exact_dot` (int64 limbs; equal to the product of ``exact("X")`` and
        ``exact("v")`` without forming either as Python integers), times the labels' signs."""
        if "gamma" not in self._cache:
            prod, exp = exact_dot(self.X, self.v)
            sign = np.where(self.y > 0, 1, -1).astype(object)
            self._cache["gamma"] = (prod * sign[:, None], exp)
        return self._cache["gamma"]

    def optimal_indices(self) -> OptimalTokens:
        """Exact ``argmax_t gamma_it`` over the valid tokens of each example; ties are reported, not broken."""
        gamma, _ = self.token_scores_exact()
        idx, ties = [], []
        for i in range(self.n):
            row = [int(g) for g in gamma[i, : self.valid_lengths[i]]]
            best = max(row)
            arg = tuple(t for t, g in enumerate(row) if g == best)
            idx.append(arg[0])
            if len(arg) > 1:
                ties.append((i, arg))
        return OptimalTokens(tuple(idx), tuple(ties))

    # ------------------------------------------------------------------ SVM constraints
    def attention_constraints(self, alpha=None) -> ConstraintSystem:
        """Rows ``vec((x_{i alpha_i} - x_it) z_i^T)`` for all i and valid t != alpha_i (docs/theory.md section 3)."""
        a = np.asarray(resolve_alpha(self, alpha), dtype=np.int64)
        z = self.exact("z")
        keep = self.token_mask.copy()
        keep[np.arange(self.n), a] = False
        ii, tt = np.nonzero(keep)  # row-major: example by example, tokens in order
        L = token_differences(self.X, ii, a[ii], tt)
        index = tuple(zip(ii.tolist(), tt.tolist()))
        R = z.ints[ii].reshape(len(index), self.d)
        return ConstraintSystem(
            "attention",
            index,
            DyadicArray(L.ints.reshape(len(index), self.d), L.exp),
            DyadicArray(R, z.exp),
            self.d,
        )

    def decoder_constraints(self, alpha=None) -> ConstraintSystem:
        """Rows ``y_i x_{i alpha_i}`` of the decoder SVM (docs/theory.md section 3)."""
        a = resolve_alpha(self, alpha)
        X = self.exact("X").as_object()
        sign = [1 if yi > 0 else -1 for yi in self.y]
        L = np.array(
            [[sign[i] * X[i, a[i], k] for k in range(self.d)] for i in range(self.n)], dtype=object
        )
        return ConstraintSystem(
            "decoder",
            tuple((i,) for i in range(self.n)),
            DyadicArray(L.reshape(self.n, self.d), self.exact("X").exp),
            None,
            self.d,
        )

    # ------------------------------------------------------------------ I/O
    def to_dict(self) -> dict:
        out = {
            "X": self.X.tolist(),
            "y": self.y.tolist(),
            "z": self.z.tolist(),
            "v": self.v.tolist(),
        }
        if self.alpha is not None:
            out["alpha"] = [int(a) for a in self.alpha]
        if self.lengths is not None:
            out["lengths"] = [int(k) for k in self.lengths]
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` or ``.json`` (float64, lossless) atomically (`certify.io.atomic`: a unique
        temporary name in the same folder, renamed over ``path``)."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in {".npz", ".json"}:
            raise MdcertError(f"cannot save to {str(path)!r}: use a .npz or .json file name")
        if path.is_dir():
            raise MdcertError(f"cannot save to {str(path)!r}: it is a directory; give a file name")
        if not path.parent.is_dir():
            raise MdcertError(
                f"cannot save to {str(path)!r}: directory {str(path.parent)!r} does not exist"
            )
        from certify.io.atomic import write_npz_atomic, write_text_atomic

        if suffix == ".json":
            return write_text_atomic(path, json.dumps(self.to_dict()))
        arrays = {"X": self.X, "y": self.y, "z": self.z, "v": self.v}
        if self.alpha is not None:
            arrays["alpha"] = self.alpha
        if self.lengths is not None:
            arrays["lengths"] = self.lengths
        if self.provenance is not None:
            arrays["provenance"] = np.array(provenance_text(self.provenance))
        write_npz_atomic(path, arrays)
        return path

    @classmethod
    def from_dict(cls, data: dict) -> "AttentionProblem":
        missing = [k for k in ("X", "y", "z", "v") if k not in data]
        if missing:
            raise MdcertError(
                f"problem data lacks {', '.join(missing)}; a problem needs X, y, z and v"
            )
        return cls(
            data["X"],
            data["y"],
            data["z"],
            data["v"],
            alpha=data.get("alpha"),
            lengths=data.get("lengths"),
            provenance=data.get("provenance"),
        )

    @classmethod
    def load(cls, path: str | Path, *, memory_budget: int | None = None) -> "AttentionProblem":
        """Read and validate a problem saved by `save` (``.npz`` or ``.json``) through `read_problem_file`
        (bounded, strict, exact: `certify.loaders`, `certify.exactfloat`); a file of another kind
        (``kind = "classification"``) is refused in one line."""
        data = read_problem_file(path, memory_budget=memory_budget)
        kind = data.pop("kind", None)
        if isinstance(kind, np.ndarray) and kind.ndim == 0:
            kind = kind.item()
        if kind not in (None, "attention"):
            takes = {
                "classification": "'mdcert certify', 'verify', 'pgd' and 'check --theorem pgd'",
                "regression": "'mdcert interpolate' and 'mdcert signdescent'",
            }.get(str(kind), "no mdcert command")
            raise MdcertError(
                f"{str(path)!r} is a {str(kind)[:40]} problem, not an attention problem; "
                f"{takes} take{'s' if takes.startswith('n') else ''} it"
            )
        return cls.from_file_data(data, path=path)

    @classmethod
    def from_file_data(cls, data: dict, *, path: str | Path | None = None) -> "AttentionProblem":
        """`from_dict` on the arrays read by `read_problem_file` (an absent or 0-d alpha normalized);
        warns (`InputWarning`) on suspicious data (`certify.info.input_warnings`)."""
        from certify.info import input_warnings

        if "alpha" in data and (
            data["alpha"] is None
            or (isinstance(data["alpha"], np.ndarray) and data["alpha"].dtype.kind == "O")
        ):
            data.pop("alpha")
        elif isinstance(data.get("alpha"), np.ndarray) and data["alpha"].ndim == 0:
            data["alpha"] = data["alpha"].item()
        problem = cls.from_dict(data)
        for line in input_warnings(problem):
            warnings.warn(InputWarning(f"problem {str(path)!r}: {line}"), stacklevel=3)
        return problem

    def describe(self) -> str:
        """One line for tools: shape, lengths and provenance (docs/theory.md section 1.3)."""
        text = f"n={self.n} T={self.T} d={self.d}"
        if self.lengths is not None:
            L = self.lengths
            text += f", lengths {int(L.min())}..{int(L.max())} ({int(L.sum())} of {self.n * self.T} tokens valid)"
        if self.provenance:
            items = [
                f"{k}={json.dumps(v, sort_keys=True)[:60]}"
                for k, v in list(self.provenance.items())[:6]
            ]
            text += (
                "; provenance: " + ", ".join(items) + (", ..." if len(self.provenance) > 6 else "")
            )
        return text

    def __repr__(self) -> str:
        pad = "" if self.lengths is None else f", lengths={list(self.lengths)}"
        return f"AttentionProblem(n={self.n}, T={self.T}, d={self.d}, alpha={None if self.alpha is None else list(self.alpha)}{pad})"


def token_differences(X: np.ndarray, ii, ta, tb, *, block: int = 1 << 14) -> DyadicArray:
    """Exact ``X[ii, ta] - X[ii, tb]`` (rows of d entries) on the exponent of ``dyadic(X)``: int64
    when every entry of ``dyadic(X)`` is below ``2^61``, else Python integers formed ``block`` rows
    at a time (never the whole of X as Python integers: 0.9 GB at (10^4, 32, 64))."""
    k, shift, common = dyadic_parts(np.asarray(X, dtype=np.float64))
    nz = k != 0
    bits = np.where(nz, np.floor(np.log2(np.maximum(np.abs(k), 1))).astype(np.int64) + 1, 0)
    if not np.any(nz):
        return DyadicArray(np.zeros((len(ii),) + X.shape[2:], dtype=np.int64), 0)
    if int((bits + shift).max()) <= 61:  # as dyadic(X).ints: differences below 2^62
        ints = np.where(nz, k << shift, 0)
        return DyadicArray(ints[ii, ta] - ints[ii, tb], common)
    out = np.empty((len(ii),) + X.shape[2:], dtype=object)
    for r0 in range(0, len(ii), block):
        s = slice(r0, r0 + block)
        pa, pb = (ii[s], ta[s]), (ii[s], tb[s])
        out[s] = (k[pa].astype(object) << shift[pa].astype(object)) - (
            k[pb].astype(object) << shift[pb].astype(object)
        )
    return DyadicArray(out, common)
