"""The seeded synthetic generator (paper section 6 setup)."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from certify.synth import synthetic_problem


def test_defaults_are_paper_size_and_seeded() -> None:
    a, b, c = synthetic_problem(seed=7), synthetic_problem(seed=7), synthetic_problem(seed=8)
    assert (a.n, a.T, a.d) == (6, 8, 10)
    assert a.data_hash() == b.data_hash() != c.data_hash()


@pytest.mark.parametrize(("kwargs", "pattern"), [(dict(n=0), "invalid n"), (dict(T=1), "invalid T"),
                                                  (dict(d=2.5), "invalid d")])
def test_bad_sizes(kwargs, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        synthetic_problem(**kwargs)
