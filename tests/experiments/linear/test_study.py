"""run_pgd: certified references, group measurements, JSON without NaN, the run directory's files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from certify import classification_problem
from experiments.linear import PgdConfig, run_pgd


@pytest.fixture(scope="module")
def run():
    pr = classification_problem(n=25, d=3, seed=1)
    cfg = PgdConfig(
        ps=(1.5, 2.0), lrs=(1.0,), inits=3, init_scale=0.1, normalize=True, steps=400, records=30
    )
    return run_pgd(pr, cfg, digits=20)


def test_references_are_certified_unit_directions(run) -> None:
    for p, ref in run.refs.items():
        assert ref.status == "optimal" and ref.direction_error < 1e-10
        assert abs(np.sum(np.abs(ref.direction) ** p) - 1.0) < 1e-12
        assert ref.margin > 0


def test_groups_carry_rates_norms_and_smoothness(run) -> None:
    assert [(g["p"], g["lr"]) for g in run.groups] == [(1.5, 1.0), (2.0, 1.0)]
    for g in run.groups:
        assert g["rate"]["verdict"] in ("log", "power", "inconclusive") and g["rate"]["reason"]
        assert g["final_bregman_median"] >= 0 and g["final_norm_median"] > 0
        assert g["smoothness"]["samples"] > 0
        # a normalized margin never exceeds the certified maximum (up to float64 rounding)
        assert g["final_margin_median"] <= g["certified_margin"] * (1 + 1e-9)


def test_summary_is_strict_json_and_run_directory_complete(run, tmp_path) -> None:
    text = json.dumps(run.to_json(), allow_nan=False)
    assert '"kind": "pgd"' in text
    run.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arrays.npz", "pgd.png", "summary.json"]
    with np.load(tmp_path / "arrays.npz") as z:
        assert np.isfinite(z["bregman"]).all()
    assert len(run.lines()) == 2


def test_non_separable_data_run_without_reference() -> None:
    pr = classification_problem(n=40, d=2, separable=False, seed=0)
    r = run_pgd(pr, PgdConfig(ps=(2.0,), lrs=(0.1,), inits=2, steps=50, records=10), digits=20)
    assert r.refs[2.0].status == "infeasible" and r.paths.bregman is None
    assert r.groups[0]["rate"] is None and "no reference" in r.lines()[0]
    json.dumps(r.to_json(), allow_nan=False)
