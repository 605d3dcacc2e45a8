"""Tests of the identity-keyed, non-owning map of the optimizer's bookkeeping
(`experiments.optim.parammap`)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from experiments.optim.parammap import ParamMap


def test_keys_are_compared_by_identity_not_by_value():
    a, b = torch.zeros(3), torch.zeros(3)  # equal values, two keys
    m = ParamMap()
    m[a], m[b] = "a", "b"
    assert m.get(a) == "a" and m[b] == "b" and len(m) == 2
    with pytest.raises(KeyError):
        m[torch.zeros(3)]
    assert m.get(torch.zeros(3)) is None and m.get(torch.zeros(3), 7) == 7
    m[a] = "a2"  # overwrite keeps one entry
    assert m.get(a) == "a2" and len(m) == 2 and a in m
    assert m.pop(a) == "a2" and a not in m and m.pop(a, "gone") == "gone"
    assert sorted(m.values()) == ["b"]


def test_the_map_keeps_no_key_alive_and_forgets_dead_ones():
    m = ParamMap()
    t = torch.ones(4)
    ref = weakref.ref(t)
    m[t] = torch.empty(1000)
    del t
    gc.collect()
    assert ref() is None and len(m) == 0 and m.values() == []


def test_an_id_reused_by_a_new_tensor_never_finds_the_old_value():
    m = ParamMap()
    for _ in range(200):  # ids of freed tensors are reused; a stale entry must not match
        t = torch.ones(1)
        assert m.get(t) is None
        m[t] = object()
        del t
    gc.collect()
    assert len(m) == 0


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["set", "pop", "get"])), max_size=40))
def test_same_answers_as_a_dict_keyed_by_identity(ops):
    keys = [torch.zeros(2) for _ in range(6)]
    m, ref = ParamMap(), {}
    for i, (k, op) in enumerate(ops):
        key = keys[k]
        if op == "set":
            m[key], ref[id(key)] = i, i
        elif op == "pop":
            assert m.pop(key, None) == ref.pop(id(key), None)
        else:
            assert m.get(key) == ref.get(id(key))
    assert len(m) == len(ref) and sorted(m.values()) == sorted(ref.values())
