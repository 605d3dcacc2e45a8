"""Run keys, atomic records and resumability (experiments/studies/runner.py)."""

from __future__ import annotations

import json

import pytest

from certify.errors import MdcertError
from experiments.studies.runner import FORMAT, open_study, run_key


def test_run_key_is_a_content_hash():
    a = run_key({"lr": 0.1, "seed": 0, "model": {"width": 8}})
    assert a == run_key({"model": {"width": 8}, "seed": 0, "lr": 0.1})  # key order does not matter
    assert a != run_key({"lr": 0.1, "seed": 1, "model": {"width": 8}})
    assert len(a) == 64


def test_finished_units_are_not_redone(tmp_path):
    calls = []

    def work(cfg):
        calls.append(cfg["seed"])
        return {"value": cfg["seed"] * 2, "nan": float("nan")}

    ctx = open_study(tmp_path / "s", kind="k", options={}, device="cpu", progress=False)
    r1 = ctx.run_unit({"seed": 1}, work)
    r2 = ctx.run_unit({"seed": 2}, work)
    assert calls == [1, 2] and ctx.trained == 2 and r1["result"] == {"value": 2, "nan": None}
    ctx2 = open_study(tmp_path / "s", kind="k", options={}, device="cpu", progress=False)
    assert (
        ctx2.run_unit({"seed": 1}, work) == r1
        and ctx2.run_unit({"seed": 2}, work)["key"] == r2["key"]
    )
    assert calls == [1, 2] and ctx2.trained == 0 and ctx2.reused == 2
    files = sorted(p.name for p in (tmp_path / "s" / "runs").iterdir())
    assert files == sorted([r1["key"] + ".json", r2["key"] + ".json"])  # no temporary left
    assert json.loads((tmp_path / "s" / "study.json").read_text())["format"] == FORMAT


def test_a_torn_record_is_redone(tmp_path):
    ctx = open_study(tmp_path / "s", kind="k", options={}, device="cpu", progress=False)
    r = ctx.run_unit({"seed": 1}, lambda c: {"v": 1})
    (tmp_path / "s" / "runs" / f"{r['key']}.json").write_text('{"key": ')
    ctx.run_unit({"seed": 1}, lambda c: {"v": 1})
    assert ctx.trained == 2


def test_refuses_a_foreign_directory_and_another_kind(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("mine")
    with pytest.raises(MdcertError, match="holds no study.json"):
        open_study(tmp_path / "other", kind="k", options={}, device="cpu")
    open_study(tmp_path / "s", kind="sentiment", options={}, device="cpu")
    with pytest.raises(MdcertError, match="kind 'sentiment', not 'vision'"):
        open_study(tmp_path / "s", kind="vision", options={}, device="cpu")
    (tmp_path / "f").write_text("x")
    with pytest.raises(MdcertError):
        open_study(tmp_path / "f", kind="k", options={}, device="cpu")
    assert (tmp_path / "other" / "x.txt").read_text() == "mine"
