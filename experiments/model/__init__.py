"""Single-head softmax attention model of docs/theory.md section 1, functional and as an ``nn.Module``.

Logits ``s_it = x_it^T W z_i`` (no 1/sqrt(d) scaling), output ``f(X_i) = v^T X_i^T softmax(X_i W z_i)``,
loss ``L(W, v) = (1/n) sum_i l(y_i f(X_i))`` with the logistic loss ``l(u) = log(1 + e^{-u})`` by default.
The output and its gradient come from `experiments.model.attention_output` (the engine's saturation-safe
formula as an autograd Function): ``loss(...).backward()`` keeps the gradient's direction once the
top attention weight rounds to 1.0. Variable-length problems (docs/theory.md section 1.3) pass
``mask`` (``ProblemTensors.mask``): padding gets logit ``-inf``, weight 0. A forgotten mask is an
error, not a silent use of the padding: the token tensor ``X`` of a padded problem's
`ProblemTensors` carries its mask, and every entry point given that ``X`` with ``mask=None`` raises
`MdcertError`. Only that tensor object carries it: one derived from it (``X.to(device)``, ``X[idx]``)
does not, so build the tensors where they are used (``problem_tensors(problem, device=...)``) or
pass ``mask=`` explicitly.

Every functional entry point accepts leading batch dimensions on ``W`` (``[..., d, d]``) and ``v``
(``[..., d]`` or a shared ``[d]``), so B trajectories are evaluated in one call: ``loss(W[B,d,d], v,
X, y, z)`` returns ``[B]``. The data ``X [n, T, d]``, ``y [n]``, ``z [n, d]`` are shared.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import torch
from torch import nn

from certify.errors import MdcertError
from experiments.model.attention_output import attention_output, mask_logits

__all__ = [
    "LOSSES",
    "ProblemTensors",
    "problem_tensors",
    "padding_mask_of",
    "attention_logits",
    "attention_scores",
    "attention_softmax",
    "model_output",
    "logistic_loss",
    "exponential_loss",
    "linear_loss",
    "get_loss",
    "loss",
    "AttentionModel",
]


class _Tensors(NamedTuple):
    X: torch.Tensor
    y: torch.Tensor
    z: torch.Tensor
    v: torch.Tensor


#: the attribute of a padded problem's token tensor X that holds its mask (see `padding_mask_of`)
_MASK_ATTRIBUTE = "mdcert_token_mask"


class ProblemTensors(_Tensors):
    """Torch tensors of an `AttentionProblem`: the tuple ``(X [n,T,d], y [n], z [n,d], v [d])`` (so
    ``X, y, z, v = problem_tensors(problem)`` unpacks) and the attribute ``mask``, the valid tokens
    [n,T] (bool) of a variable-length problem, None for a full-length one; pass it as ``mask=``.

    With a mask, ``X`` is marked with it (module docstring): the model refuses that ``X`` without
    ``mask=``. ``_replace`` keeps the mask (``_replace(mask=...)`` changes it) and marks a new ``X``.
    """

    mask: torch.Tensor | None

    def __new__(cls, X, y, z, v, mask: torch.Tensor | None = None) -> "ProblemTensors":
        self = super().__new__(cls, X, y, z, v)
        self.mask = mask
        if mask is not None and isinstance(X, torch.Tensor):
            setattr(X, _MASK_ATTRIBUTE, mask)
        return self

    def _replace(self, **changes) -> "ProblemTensors":
        """A copy with fields replaced (X, y, z, v and mask); the mask is kept unless given."""
        mask = changes.pop("mask", self.mask)
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise ValueError(f"got unexpected field names: {sorted(unknown)!r}")
        return ProblemTensors(*(changes.get(f, getattr(self, f)) for f in self._fields), mask=mask)

    def __reduce__(self):
        return (ProblemTensors, (*self, self.mask))


def padding_mask_of(X: torch.Tensor) -> torch.Tensor | None:
    """The mask a padded problem's `ProblemTensors` attached to its token tensor ``X`` (None if none)."""
    return getattr(X, _MASK_ATTRIBUTE, None)


def _require_mask(X: torch.Tensor, mask: torch.Tensor | None) -> None:
    if mask is None and padding_mask_of(X) is not None:
        raise MdcertError(
            "X is the token tensor of a variable-length problem (its ProblemTensors has a mask): "
            "pass mask=data.mask so that padding takes no part (docs/theory.md section 1.3)"
        )


def problem_tensors(problem, dtype: torch.dtype = torch.float64, device=None) -> ProblemTensors:
    """Build `ProblemTensors` from a `certify.AttentionProblem` (float64 data copied, then cast)."""

    def t(a):
        return (
            torch.from_numpy(np.array(a, dtype=np.float64))
            .to(dtype=dtype, device=device)
            .contiguous()
        )

    lengths = getattr(problem, "lengths", None)
    mask = (
        None
        if lengths is None
        else torch.from_numpy(np.array(problem.token_mask)).to(device=device)
    )
    return ProblemTensors(t(problem.X), t(problem.y), t(problem.z), t(problem.v), mask)


def attention_logits(
    X: torch.Tensor, z: torch.Tensor, W: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Logits ``s[..., i, t] = x_it^T W z_i`` (``-inf`` at padding).

    Args:
        X: tokens ``[n, T, d]``.
        z: comparison vectors ``[n, d]``.
        W: attention matrices ``[..., d, d]``.
        mask: valid tokens ``[n, T]`` (bool), or None for full length (refused for the ``X`` of a
            padded problem's `ProblemTensors`, module docstring).

    Returns:
        ``[..., n, T]``.

    Raises:
        MdcertError: ``mask`` is None but ``X`` is a padded problem's token tensor.
    """
    _require_mask(X, mask)
    Wz = torch.einsum("...de,ne->...nd", W, z)  # [..., n, d]
    return mask_logits(torch.einsum("ntd,...nd->...nt", X, Wz), mask)


def attention_softmax(
    X: torch.Tensor, z: torch.Tensor, W: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Attention weights ``softmax_t(s_it)`` ``[..., n, T]`` (max-subtracted, stable; 0 at padding)."""
    return torch.softmax(attention_logits(X, z, W, mask), dim=-1)


attention_scores = attention_softmax


def _token_values(X: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``v^T x_it`` as ``[..., n, T]`` (v ``[d]`` or ``[..., d]``)."""
    return torch.einsum("ntd,...d->...nt", X, v)


def model_output(
    X: torch.Tensor,
    z: torch.Tensor,
    W: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Model outputs ``f(X_i) = v^T X_i^T softmax(X_i W z_i)`` as ``[..., n]`` (saturation-safe value and
    gradient: `experiments.model.attention_output.AttentionOutput`)."""
    return attention_output(attention_logits(X, z, W, mask), _token_values(X, v))


def logistic_loss(u: torch.Tensor) -> torch.Tensor:
    """``log(1 + e^{-u})`` computed as ``-logsigmoid(u)`` (``max(-u, 0) + log1p(e^{-|u|})``: no overflow
    and full precision for every ``u``; ``softplus(-u)`` returns ``-u`` itself past its threshold of
    20, a relative error of up to 1e-10 in float64)."""
    return -torch.nn.functional.logsigmoid(u)


def exponential_loss(u: torch.Tensor) -> torch.Tensor:
    """``e^{-u}``."""
    return torch.exp(-u)


def linear_loss(u: torch.Tensor) -> torch.Tensor:
    """``-u`` (the correlation loss, strictly decreasing)."""
    return -u


LOSSES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "logistic": logistic_loss,
    "exponential": exponential_loss,
    "linear": linear_loss,
}


def get_loss(
    name_or_fn: str | Callable[[torch.Tensor], torch.Tensor],
) -> Callable[[torch.Tensor], torch.Tensor]:
    """Resolve a loss by name (``logistic``, ``exponential``, ``linear``) or pass a callable through."""
    if callable(name_or_fn):
        return name_or_fn
    try:
        return LOSSES[name_or_fn]
    except KeyError:
        raise MdcertError(
            f"unknown loss {name_or_fn!r}; choose one of {', '.join(LOSSES)}"
        ) from None


def loss(
    W: torch.Tensor,
    v: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    z: torch.Tensor,
    *,
    loss_fn: str | Callable[[torch.Tensor], torch.Tensor] = "logistic",
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Empirical loss ``L(W, v) = (1/n) sum_i l(y_i f(X_i))`` (docs/theory.md section 1).

    Args:
        W: ``[..., d, d]``.
        v: ``[d]`` (shared) or ``[..., d]`` (one decoder per trajectory).
        X: ``[n, T, d]``; y: ``[n]`` in {-1, +1}; z: ``[n, d]``.
        loss_fn: ``"logistic"`` (default, via logsigmoid), ``"exponential"``, ``"linear"`` or a callable.
        mask: valid tokens ``[n, T]`` of a variable-length problem (``ProblemTensors.mask``), or None.

    Returns:
        ``[...]`` (a 0-d tensor for an unbatched W).
    """
    return get_loss(loss_fn)(y * model_output(X, z, W, v, mask)).mean(dim=-1)


class AttentionModel(nn.Module):
    """``f(X_i) = v^T X_i^T softmax(X_i W z_i)`` with a trainable ``W`` and a fixed or trainable ``v``.

    Args:
        d: embedding dimension.
        train_decoder: if True, ``v`` is an ``nn.Parameter`` (joint training, docs/theory.md section 2); else a buffer.
        v: decoder ``[d]`` (required when ``train_decoder`` is False; zeros by default otherwise).
        W0: initial ``W`` ``[d, d]`` (zeros by default).
        dtype: parameter dtype (float64 by default).
        device: parameter device.
    """

    def __init__(
        self,
        d: int,
        *,
        train_decoder: bool = False,
        v: torch.Tensor | None = None,
        W0: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float64,
        device=None,
    ) -> None:
        super().__init__()
        if not isinstance(d, int) or d < 1:
            raise MdcertError(f"invalid dimension d={d!r}; give a positive integer")
        if v is None and not train_decoder:
            raise MdcertError("a fixed decoder needs v; pass v=... or train_decoder=True")
        self.d = d
        self.train_decoder = train_decoder
        W = (
            torch.zeros(d, d, dtype=dtype, device=device)
            if W0 is None
            else self._tensor(W0, (d, d), "W0", dtype, device)
        )
        self.W = nn.Parameter(W)
        v_t = (
            torch.zeros(d, dtype=dtype, device=device)
            if v is None
            else self._tensor(v, (d,), "v", dtype, device)
        )
        if train_decoder:
            self.v = nn.Parameter(v_t)
        else:
            self.register_buffer("v", v_t)

    @staticmethod
    def _tensor(value, shape, name, dtype, device) -> torch.Tensor:
        t = torch.as_tensor(value).detach().to(dtype=dtype, device=device).clone()
        if tuple(t.shape) != shape:
            raise MdcertError(f"{name} has shape {tuple(t.shape)}, expected {shape}")
        if not bool(torch.isfinite(t).all()):
            raise MdcertError(f"{name} contains NaN or Inf")
        return t

    @classmethod
    def from_problem(
        cls,
        problem,
        *,
        train_decoder: bool = False,
        W0=None,
        dtype: torch.dtype = torch.float64,
        device=None,
    ) -> "AttentionModel":
        """Model with the problem's decoder ``v`` (the initial ``v`` when ``train_decoder``)."""
        return cls(
            problem.d,
            train_decoder=train_decoder,
            v=torch.from_numpy(np.array(problem.v, dtype=np.float64)),
            W0=W0,
            dtype=dtype,
            device=device,
        )

    def forward(
        self, X: torch.Tensor, z: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Outputs ``f(X_i)`` ``[n]`` (``mask``: valid tokens of a variable-length problem)."""
        return model_output(X, z, self.W, self.v, mask)

    def loss(
        self,
        X: torch.Tensor,
        y: torch.Tensor,
        z: torch.Tensor,
        *,
        loss_fn: str | Callable[[torch.Tensor], torch.Tensor] = "logistic",
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``L(W, v)`` on the given data (0-d tensor); ``mask``: ``ProblemTensors.mask`` of a
        variable-length problem (None: every token is valid)."""
        return loss(self.W, self.v, X, y, z, loss_fn=loss_fn, mask=mask)
