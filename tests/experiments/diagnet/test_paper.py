"""experiments.diagnet.paper: the preset's parts and their reuse by config."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from experiments.diagnet.paper import Part, config_key, paper_parts, run_part


def test_the_parts_cover_the_papers_set_ups() -> None:
    parts = {p.name: p.config for p in paper_parts()}
    assert list(parts) == ["fig1", "fig2", "eps_block", "eps_gaussian", "adam"]
    assert (
        parts["fig1"]["N"],
        parts["fig1"]["D"],
        parts["fig1"]["alpha"],
        parts["fig1"]["eps"],
    ) == (2, 5, 0.1, [0.002, 0.01])
    assert parts["fig1"]["ode"] and parts["fig2"]["N"] == 1 and parts["fig2"]["data"] == "block"
    assert parts["eps_block"]["data"] == "block" and parts["eps_gaussian"]["data"] == "gaussian"
    assert parts["adam"]["beta2"] == [0.9, 0.999] and min(parts["adam"]["eps"]) <= 1e-8
    for quick in (
        False,
        True,
    ):  # every smoothed-sign trajectory of fig1 / fig2 has a step small against eps
        for p in paper_parts(quick=quick)[:2]:
            assert p.config["lr"] < min(p.config["eps"])
    assert all(
        q.config["steps"] < p.config["steps"]
        for p, q in zip(paper_parts(), paper_parts(quick=True))
    )


def test_a_part_with_the_same_config_is_reused(tmp_path) -> None:
    calls = []
    part = Part("toy", {"a": 1}, lambda cfg: calls.append(cfg) or {"value": cfg["a"] + 1})
    rec, reused = run_part(part, [tmp_path])
    assert not reused and rec["result"] == {"value": 2} and rec["key"] == config_key({"a": 1})
    (tmp_path / "toy.json").write_text(json.dumps(rec))
    again, reused = run_part(part, [tmp_path / "absent", tmp_path])
    assert reused and again == rec
    changed, reused = run_part(replace(part, config={"a": 2}), [tmp_path])
    assert not reused and changed["result"] == {"value": 3}
    (tmp_path / "toy.json").write_text("{broken")
    assert (
        run_part(part, [tmp_path])[1] is False
    )  # an unreadable record is recomputed, never trusted


@pytest.mark.parametrize("name", ["fig1", "adam"])
def test_a_shortened_part_runs_with_certified_references(name) -> None:
    part = next(p for p in paper_parts(quick=True) if p.name == name)
    cfg = {**part.config, "steps": 400}
    if name == "adam":
        cfg["eps"] = [1e-3]
    rec, _ = run_part(replace(part, config=cfg), [])
    res = rec["result"]
    if name == "fig1":
        assert (
            len(res["ode_max_gap"]) == 2 and max(res["ode_max_gap"]) < 1e-2
        )  # measured: lr 5e-4 over t = 0.2
        assert len(res["beta"]) == 2 and len(res["time"]) == len(res["ode_beta"][0])
    else:
        assert set(res["adam"]) == {"0.9", "0.999"} and all(
            d >= 0 for a in res["adam"].values() for d in a["dist_to_sign"]
        )
        assert res["sign"]["references"]["lp"]["opt_lower"]
