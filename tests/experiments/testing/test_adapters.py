"""Kit adapters (experiments/testing/adapters.py): the kind is guessed right or asked for, p arrives as a float."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
import torch

from experiments import LpMirrorDescent
from experiments.testing.adapters import Exponent, Kind, KitUsageError, make_adapter
from tests.experiments.testing.helpers import good_step


def step_with_default(W, G, lr, p=2.0):
    return good_step(W, G, lr, p)


def make_with_defaults(params, lr=0.1, p=2.0):
    return LpMirrorDescent(params, lr=lr, p=p)


def make_four(ps, lr, p, momentum=0.0):
    return LpMirrorDescent(ps, lr=lr, p=p)


@pytest.mark.parametrize(
    "update, kind",
    [
        (step_with_default, Kind.STEP),
        (make_with_defaults, Kind.OPTIMIZER),
        (lambda W, G, lr, p: good_step(W, G, lr, p), Kind.STEP),
        (lambda params, lr, p: LpMirrorDescent(params, lr=lr, p=p), Kind.OPTIMIZER),
        (
            lambda parameters, lr, p, extra=1: LpMirrorDescent(parameters, lr=lr, p=p),
            Kind.OPTIMIZER,
        ),
        (LpMirrorDescent, Kind.OPTIMIZER),
    ],
)
def test_kind_is_guessed_from_the_signature(update, kind):
    adapter = make_adapter(update)
    assert adapter.kind is kind and adapter.guessed
    W, G = (
        torch.tensor([1.0, -2.0], dtype=torch.float64),
        torch.tensor([0.5, 0.25], dtype=torch.float64),
    )
    assert torch.allclose(adapter.step(W, G, 0.1, Fraction(3, 2)), good_step(W, G, 0.1, 1.5))


@pytest.mark.parametrize(
    "update, options, pattern",
    [
        (lambda *a: None, {}, r"cannot tell whether .* pass kind='step' or kind='optimizer'"),
        (lambda W, G: W, {}, r"cannot tell whether"),
        (
            good_step,
            {"kind": "optimizer"},
            r"called as an optimizer factory \(kind='optimizer'\).*pass kind='step'",
        ),
        (make_with_defaults, {"kind": "nope"}, r"kind must be"),
        (make_with_defaults, {"p_as": "int"}, r"p_as must be"),
        (LpMirrorDescent([torch.nn.Parameter(torch.ones(1))]), {}, r"optimizer instance"),
        (int, {}, r"not a torch.optim.Optimizer"),
    ],
)
def test_unusable_updates_are_refused_naming_kind(update, options, pattern):
    with pytest.raises(KitUsageError, match=pattern):
        make_adapter(update, **options)


def test_a_wrong_guess_says_so_at_the_first_call():
    adapter = make_adapter(lambda a, b, c, d: LpMirrorDescent([torch.nn.Parameter(torch.ones(1))]))
    assert adapter.kind is Kind.STEP  # 4 positional parameters: guessed a step function
    with pytest.raises(
        KitUsageError,
        match=r"guessed from its signature\) and returned LpMirrorDescent, not a tensor;"
        r" if it is an optimizer factory, pass kind='optimizer'",
    ):
        adapter.step(torch.ones(2), torch.ones(2), 0.1, Fraction(2))
    assert make_adapter(make_four, kind="optimizer").step(
        torch.ones(2), torch.zeros(2), 0.1, Fraction(2)
    ).shape == (2,)
    assert "guessed from its signature; pass kind= to override" in make_adapter(make_four).how()


def test_p_reaches_user_code_as_a_float_with_its_exact_value():
    seen = []

    def step(W, G, lr, p):
        seen.append(p)
        return W.abs().pow(p - 1) * W.sign()  # tensor.pow accepts it (a Fraction raises TypeError)

    make_adapter(step).step(torch.ones(2), torch.zeros(2), 0.1, Fraction(7, 4))
    assert isinstance(seen[0], float) and seen[0] == 1.75 and seen[0].exact == Fraction(7, 4)
    with pytest.raises(TypeError, match="pow"):  # what p_as="fraction" does to such code
        make_adapter(step, p_as="fraction").step(torch.ones(2), torch.zeros(2), 0.1, Fraction(2))
    assert type(seen[1]) is Fraction
    assert pickle.loads(pickle.dumps(Exponent(Fraction(11, 10)))).exact == Fraction(11, 10)


def test_optimizer_gets_groups_with_their_own_lr_and_p():
    got = {}

    def make(params, lr, p):
        got.update(groups=params, lr=lr, p=p)
        return LpMirrorDescent(params, lr=lr, p=p)

    out = make_adapter(make).step(torch.tensor([2.0]), torch.tensor([1.0]), 0.5, Fraction(2))
    assert out.tolist() == [1.5]
    (g,) = got["groups"]
    assert g["lr"] == 0.5 and g["p"] == 2.0 and isinstance(g["p"], Exponent) and got["p"] == 2.0
