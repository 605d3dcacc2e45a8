"""`experiments.commands.signdescent`: validation in `Config.from_options` (one line each, before
any work), `parse` equal to the CLI's config, and a short run -> write -> lines round trip."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")

from certify.errors import MdcertError  # noqa: E402
from certify.regression import regression_problem  # noqa: E402
from experiments.cli.main import build_parser  # noqa: E402
from experiments.commands import parse  # noqa: E402
from experiments.commands.signdescent import Config, run  # noqa: E402

SHORT = ["--steps", "200", "--eps", "0.01,0.05", "--no-figures"]


@pytest.fixture()
def block(tmp_path):
    path = tmp_path / "block.npz"
    regression_problem("block", N=2, seed=0).save(path)
    return path


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--eps", "0"], r"eps values must be finite and positive, got \[0\.0\]"),
        (["--eps", "a,b"], r"^--eps must be comma-separated numbers, got 'a,b'$"),
        (["--lr", "inf"], r"lr values must be finite and positive"),
        (["--steps", "0"], r"steps must be in 1\.\.1e9"),
        (
            ["--rules", "sign,lion"],
            r"^--rules must be comma-separated from gd, sign, adam; got 'sign,lion'$",
        ),
        (["--betas", "0.9"], r"^--betas needs two numbers, got '0\.9'$"),
        (["--rules", "adam", "--betas", "0.9,1"], r"Adam betas must lie in \[0, 1\)"),
        (["--threads", "0"], r"^--threads must be in 1\.\.1024, got 0$"),
        (["--quick"], r"^--quick applies only to --preset paper$"),
        (["--preset", "paper"], r"^--preset paper makes its own data; drop PROBLEM$"),
        (["--synth", "block", "--N", "0"], r"^--N must be in 1\.\.1e4 and --D in 1\.\.1e6$"),
        (["-o", "{tmp}"], r"contains the problem file"),
    ],
)
def test_bad_options_are_one_line_before_any_work(block, tmp_path, argv, pattern) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    out = [] if "-o" in argv else ["-o", str(tmp_path / "run")]
    with pytest.raises((MdcertError, ValueError)) as err:
        parse("signdescent", [str(block), *SHORT, *argv, *out])
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["block.npz"]


def test_no_problem_is_one_line(tmp_path) -> None:
    with pytest.raises(MdcertError, match=r"^give a PROBLEM file \(or --synth block\|gaussian"):
        Config.from_options({"problem": None, "output": str(tmp_path / "run")})


def test_parse_equals_the_cli_config(block, tmp_path) -> None:
    argv = [
        str(block),
        "--rules",
        "sign,adam",
        "--eps",
        "0.01",
        "--lr",
        "1e-3,2e-3",
        "--steps",
        "300",
        "--threads",
        "2",
        "-o",
        str(tmp_path / "run"),
    ]
    parser, _ = build_parser()
    config = parse("signdescent", argv)
    assert config == Config.from_options(vars(parser.parse_args(["signdescent", *argv])))
    assert [r.value for r in config.study.rules] == [
        "sign",
        "adam",
    ] and config.study.record_every == 3
    assert config.study.lr == (1e-3, 2e-3) and config.study.threads == 2 and config.figures
    preset = parse("signdescent", ["--preset", "paper", "--quick", "-o", str(tmp_path / "paper")])
    assert preset.preset == "paper" and preset.quick and preset.study is None


def test_run_write_lines_round_trip(block, tmp_path) -> None:
    out = tmp_path / "run"
    result = run(parse("signdescent", [str(block), "--rules", "sign,gd", *SHORT, "-o", str(out)]))
    assert not out.exists()  # run writes nothing
    result.write()
    data = json.loads((out / "summary.json").read_text())
    assert data["kind"] == "signdescent" and len(data["trajectories"]) == 4
    assert {p.name for p in out.iterdir()} == {"summary.json", "paths.npz", ".mdcert-run"}
    lines = result.lines(100)
    assert lines[0].startswith("references (certified): min ||beta||_3/2 = ") and len(lines) == 6
    assert lines[-1].startswith("wall: references ") and lines[-1].endswith(
        f"; wrote {out}/ (summary.json, paths.npz, figures)"
    )
    # eps = 0.05 is outside Assumption 3.3 on this data (eq. 19 left; docs/theory.md 8.6): one warning
    (msg,) = result.messages()
    assert result.exit_code == 0 and msg.startswith(
        "warning: Assumption 3.3 (arXiv 2410.14158 eqs. 18-19) is not proved at 1 of 2 (eps, alpha) "
        "pairs (first: eps = 0.05, alpha = 0.1, fails: eq. (18) at row 1, eq. (19) left at row 1)"
    )


def test_warnings_are_kept_or_passed_on(tmp_path) -> None:
    square = tmp_path / "square.npz"
    regression_problem("gaussian", N=3, D=3, seed=0).save(square)
    config = parse("signdescent", [str(square), *SHORT, "-o", str(tmp_path / "run")])
    kept = run(config).messages()
    assert kept[0].startswith("warning: N = 3 >= D = 3: the sign-descent theory needs D > N")
    assert (
        kept[1].startswith("warning: Assumption 3.3") and "the rows are not the blocks" in kept[1]
    )
    given: list[str] = []
    assert run(config, warn=given.append).messages() == [] and given == kept


def test_a_finished_preset_run_is_named_and_overwrite_says_it_reuses_parts(tmp_path) -> None:
    import pytest

    from certify.errors import MdcertError
    from experiments.commands import parse

    (tmp_path / "sdp").mkdir()
    (tmp_path / "sdp" / "summary.json").write_text("{}")
    with pytest.raises(
        MdcertError, match=r"holds a finished --preset paper run; --overwrite .*reuses"
    ):
        parse("signdescent", ["--preset", "paper", "-o", str(tmp_path / "sdp")])
    assert sorted(p.name for p in (tmp_path / "sdp").iterdir()) == ["summary.json"]  # untouched
