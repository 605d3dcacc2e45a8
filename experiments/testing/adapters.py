"""Adapters of the property-test kit (docs/theory.md section 2): what the user's update is (a step function
or an optimizer), how p reaches it, and how one step is run on one tensor or on parameter groups.

- ``kind="step"``: ``step(W, G, lr, p) -> W_new`` (must not modify W).
- ``kind="optimizer"``: a ``torch.optim.Optimizer`` subclass taking ``lr=`` and ``p=``, or a factory
  ``make(params, lr, p) -> Optimizer``. ``params`` is a list of torch parameter-group dicts, each with
  its own ``"params"``, ``"lr"`` and ``"p"`` (so an optimizer that keeps lr only in its groups works);
  ``lr`` and ``p`` are those of the first group.
- ``kind="auto"`` guesses from the signature: an Optimizer class; a first parameter named ``params``;
  else 4 positional parameters (defaults included: ``def step(W, G, lr, p=2.0)``) make a step function
  and 3 (``def make(params, lr=0.1, p=2.0)``) a factory. Anything else is refused with a
  `KitUsageError` asking for ``kind=``; a guess that turns out wrong at the first call says so too.

p reaches user code as an `Exponent`, a ``float`` (``tensor.pow`` accepts it) whose ``.exact`` is the
exact Fraction; ``p_as="fraction"`` passes the Fraction itself.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from typing import Any, Callable

import torch

__all__ = ["Kind", "KitUsageError", "Exponent", "Adapter", "make_adapter", "describe"]

_PARAM_NAMES = {"params", "parameters", "param_groups", "named_params", "model_params"}


class Kind(str, Enum):
    """What the update under test is."""

    STEP = "step"
    OPTIMIZER = "optimizer"


class KitUsageError(ValueError):
    """The kit cannot tell how to call the update; the message says which ``kind=`` to pass."""


class Exponent(float):
    """An exponent p as a float, with the exact value in ``.exact`` (a Fraction)."""

    exact: Fraction

    def __new__(cls, exact: Fraction) -> "Exponent":
        obj = super().__new__(cls, float(exact))
        obj.exact = Fraction(exact)
        return obj

    def __reduce__(self):
        return (Exponent, (self.exact,))


def describe(update: Callable) -> str:
    """``name(signature)`` of a callable or class, for messages."""
    name = getattr(update, "__qualname__", None) or type(update).__name__
    try:
        return f"{name}{inspect.signature(update)}"
    except (TypeError, ValueError):
        return name


def _guess(update: Callable) -> Kind:
    if isinstance(update, torch.optim.Optimizer):
        raise KitUsageError(
            f"got an optimizer instance ({type(update).__name__}); pass its class or a factory "
            f"make(params, lr, p) -> Optimizer, with kind='optimizer'"
        )
    if isinstance(update, type):
        if issubclass(update, torch.optim.Optimizer):
            return Kind.OPTIMIZER
        raise KitUsageError(
            f"{describe(update)} is a class but not a torch.optim.Optimizer; pass a step function "
            f"or an optimizer factory, and kind='step' or kind='optimizer'"
        )
    try:
        params = list(inspect.signature(update).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None:
        pos = [q for q in params if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
        varargs = any(q.kind == q.VAR_POSITIONAL for q in params)
        if pos and pos[0].name in _PARAM_NAMES:
            return Kind.OPTIMIZER
        if not varargs and len(pos) == 4:
            return Kind.STEP
        if not varargs and len(pos) == 3:
            return Kind.OPTIMIZER
    raise KitUsageError(
        f"cannot tell whether {describe(update)} is a step function (W, G, lr, p) -> W_new or an "
        f"optimizer factory (params, lr, p) -> Optimizer; pass kind='step' or kind='optimizer'"
    )


@dataclass(frozen=True)
class Adapter:
    """How the kit calls one update (built by `make_adapter`).

    Attributes:
        kind: `Kind`; guessed: True when ``kind`` was guessed from the signature; name: for messages.
        fn: the step function, or a factory ``(groups, lr, p) -> Optimizer``; p_as: "float" | "fraction".
    """

    kind: Kind
    guessed: bool
    name: str
    fn: Callable
    p_as: str = "float"

    def exponent(self, p: Fraction) -> Any:
        """p as user code receives it."""
        return Exponent(p) if self.p_as == "float" else Fraction(p)

    def how(self) -> str:
        """One line: what the update was taken to be."""
        what = (
            "a step function (W, G, lr, p) -> W_new"
            if self.kind is Kind.STEP
            else "an optimizer (params, lr, p) -> Optimizer"
        )
        return f"{self.name} as {what}" + (
            (" (guessed from its signature; pass kind= to override)") if self.guessed else ""
        )

    def _wrong(self, detail: str) -> KitUsageError:
        names = {Kind.STEP: "a step function", Kind.OPTIMIZER: "an optimizer factory"}
        other = Kind.OPTIMIZER if self.kind is Kind.STEP else Kind.STEP
        origin = "guessed from its signature" if self.guessed else f"kind={self.kind.value!r}"
        return KitUsageError(
            f"{self.name} was called as {names[self.kind]} ({origin}) and {detail}; "
            f"if it is {names[other]}, pass kind={other.value!r}"
        )

    def optimizer(self, groups: list[dict], lr: float, p: Fraction) -> torch.optim.Optimizer:
        """Build the optimizer on ``groups`` (each with "params", "lr" and exact "p")."""
        user_groups = [dict(g, p=self.exponent(g["p"])) for g in groups]
        opt = self.fn(user_groups, lr, self.exponent(p))
        if not isinstance(opt, torch.optim.Optimizer):
            raise self._wrong(f"returned {type(opt).__name__}, not a torch.optim.Optimizer")
        return opt

    def step(self, W: torch.Tensor, G: torch.Tensor, lr: float, p: Fraction) -> torch.Tensor:
        """One update of one tensor: ``W_new`` (an optimizer must leave W unchanged when it raises)."""
        if self.kind is Kind.STEP:
            out = self.fn(W, G, lr, self.exponent(p))
            if not isinstance(out, torch.Tensor):
                raise self._wrong(f"returned {type(out).__name__}, not a tensor")
            return out
        param = torch.nn.Parameter(W.detach().clone())
        param.grad = G.detach().clone()
        before = param.detach().clone()
        opt = self.optimizer([{"params": [param], "lr": lr, "p": p}], lr, p)
        try:
            opt.step()
        except Exception:
            if not torch.equal(param.detach(), before):
                raise AssertionError(
                    "the optimizer raised but left the parameter half-written "
                    "(it must be unchanged when step() raises)"
                ) from None
            raise
        return param.detach().clone()


def make_adapter(update: Callable, *, kind: str = "auto", p_as: str = "float") -> Adapter:
    """An `Adapter` for ``update``; `KitUsageError` when ``kind`` is unknown or cannot be guessed.

    The call shape is checked against the signature before any property runs (a guess that does not
    fit says so and names ``kind=``)."""
    if p_as not in ("float", "fraction"):
        raise KitUsageError(f"p_as must be 'float' or 'fraction', got {p_as!r}")
    if kind not in ("auto", "step", "optimizer"):
        raise KitUsageError(f"kind must be 'auto', 'step' or 'optimizer', got {kind!r}")
    guessed = kind == "auto"
    k = _guess(update) if guessed else Kind(kind)
    name = getattr(update, "__qualname__", None) or type(update).__name__
    fn = update
    if k is Kind.OPTIMIZER and isinstance(update, type):
        cls = update

        def fn(groups, lr, p):
            return cls(groups, lr=lr, p=p)
    else:
        try:
            sig = inspect.signature(update)
            sig.bind(*([None] * (4 if k is Kind.STEP else 3)))
        except TypeError as exc:
            adapter = Adapter(k, guessed, name, update, p_as)
            raise adapter._wrong(f"its signature {sig} does not accept that ({exc})") from None
        except ValueError:
            pass
    return Adapter(k, guessed, name, fn, p_as)
