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
    assert len(said) == 6 and all("; why it matters: " in ln for ln in said)  # one line per stage
    assert "proved OPT = 4.28439" in said[1] and "to 67 digits" in said[1] and "p = 1.75" in said[1]
    assert "5 of 5 hypotheses proved, verdict HOLDS" in said[3]
    assert "init_in_region HOLDS for the given mu = 0.1, R = 1" in said[3]
    assert "conclusion applies" not in text and "measured in stage 5, not proved" in said[3]
    assert "data quantities the admissible mu and R depend on" in text
    for q in (
        "OPT = ||W_mm||_p = 4.28439",
        "margin gap",
        "score gap",
        "max_it ||x_it||_2 ||z_i||_2",
    ):
        assert q in text
    assert f"figures of the paths run in {out / 'paths'} (" in said[5] and "rate_fit.png" in said[5]
    assert "see rate_fit.png" not in text
    assert (
        "measured 24 trajectories (float64, not a proof)" in said[4]
        and "p = 3:" in said[4]
        and "3/1" not in text
    )
    paths = json.loads((out / "paths" / "summary.json").read_text())
    for e in paths["per_p"]:  # each verdict with the state that explains it
        fit = e["rate_fit"]
        shown = fit["verdict"] + (
            f" ({fit['state']})" if fit.get("state") not in (None, "asymptotic") else ""
        )
        assert f"rate {shown}" in said[4]
    tail = text[text.index("== summary") :].splitlines()
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
    from experiments.runtime.outputs import read_marker, run_files

    assert read_marker(out)["kind"] == "demo" and {
        "cert.json",
        "W0.npy",
        "paths/summary.json",
    } <= run_files(out, kind="demo")  # the whole directory is mdcert's, every file listed
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def test_demo_refuses_an_existing_output_directory(tmp_path, capsys) -> None:
    assert main(["demo", "--quick", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "already exists" in err and err.strip().count("\n") == 0


def test_a_temporary_demo_does_not_point_to_its_removed_figures(
    tmp_path, monkeypatch, capsys
) -> None:
    """Without -o the outputs are removed: the figures line says so and names no file."""
    import experiments.commands.demo as demo

    seen = {}

    def fake_stage(title, argv, *, runner):
        if argv[0] == "plot":
            run = argv[1]
            seen["run"] = run
            from pathlib import Path

            Path(run).mkdir(parents=True, exist_ok=True)
            (Path(run) / "rate_fit.png").write_bytes(b"")
        return None

    monkeypatch.setattr(demo, "_stage", fake_stage)
    monkeypatch.setattr(demo, "cert_facts", lambda path: "cert")
    monkeypatch.setattr(demo, "check_facts", lambda path: "check")
    monkeypatch.setattr(demo, "region_quantities", lambda path: [])
    monkeypatch.setattr(demo, "paths_facts", lambda run: "paths")
    monkeypatch.setattr(demo, "near_svm_init", lambda cert, out, seed: str(out))
    assert main(["demo", "--quick"]) == 0
    text = capsys.readouterr().out
    line = [ln for ln in text.splitlines() if ln.startswith("=> drew")][0]
    assert "removed at the end (rerun with -o DIR to keep them)" in line and ".png" not in line


def test_check_facts_state_the_region_for_the_given_mu_and_R(tmp_path) -> None:
    from experiments.commands.demo_facts import (
        check_facts as _check_facts,
        region_quantities as _region_quantities,
    )

    rep = {
        "theorem": "10",
        "verdict": "fails",
        "quantities": {"mu": "1/2", "R": "1"},
        "hypotheses": [
            {
                "name": "init_in_region",
                "verdict": "holds",
                "evidence": [
                    {"quantity": "OPT = ||W_mm||_p", "lo_approx": 4.25, "hi_approx": 4.25},
                    {"quantity": "margin gap min_t (...)", "lo_approx": 0.01, "hi_approx": 0.02},
                ],
            },
            {"name": "tokens_locally_optimal", "verdict": "fails", "evidence": []},
        ],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rep))
    text = _check_facts(str(path))
    assert text.startswith(
        "Theorem 10: 1 of 2 hypotheses proved, verdict FAILS (tokens_locally_optimal FAILS)"
    )
    assert text.endswith("; init_in_region HOLDS for the given mu = 0.5, R = 1")
    assert _region_quantities(str(path)) == [
        "     OPT = ||W_mm||_p = 4.25",
        "     margin gap min_t (...) = [0.01, 0.02]",
    ]
