"""``mdcert demo``: the whole toolkit end to end on the built-in example."""

from __future__ import annotations

import json

from experiments.cli.main import main


def test_quick_demo_runs_every_stage_and_keeps_outputs(tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for stage in ("== 1.", "== 2.", "== 3.", "== 4.", "== 5.", "== 6.", "demo finished"):
        assert stage in text
    said = [ln for ln in text.splitlines() if ln.startswith("=> ")]
    assert len(said) == 6 and all("; why it matters: " in ln for ln in said)   # one line per stage
    assert "proved OPT = 4.28439" in said[1] and "to 67 digits" in said[1] and "p = 1.75" in said[1]
    assert "5 of 5 hypotheses proved, verdict HOLDS" in said[3]
    assert "measured 24 trajectories (float64, not a proof)" in said[4] and "p = 3:" in said[4] and "3/1" not in text
    paths = json.loads((out / "paths" / "summary.json").read_text())
    for e in paths["per_p"]:                     # each verdict with the state that explains it
        fit = e["rate_fit"]
        shown = fit["verdict"] + (f" ({fit['state']})" if fit.get("state") not in (None, "asymptotic") else "")
        assert f"rate {shown}" in said[4]
    tail = text[text.index("== summary"):].splitlines()
    assert [ln.split(".")[0].strip() for ln in tail[1:7]] == ["1", "2", "3", "4", "5", "6"]
    assert tail[7].startswith("demo finished")
    cert = json.loads((out / "cert.json").read_text())
    assert cert["status"] == "optimal" and cert["p"] == "7/4" and cert["support"]["undecided"] == []
    assert "verified: all" in text
    assert "verdict: HOLDS" in text
    summary = json.loads((out / "paths" / "summary.json").read_text())
    assert [entry["p_exact"] for entry in summary["per_p"]] == ["7/4", "2/1", "3/1"]
    assert all(entry["bregman_final_mean"] is not None for entry in summary["per_p"])
    assert list((out / "paths").glob("*.png"))


def test_demo_refuses_an_existing_output_directory(tmp_path, capsys) -> None:
    assert main(["demo", "--quick", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "already exists" in err and err.strip().count("\n") == 0
