"""The mdcert console script: registry, one-line errors, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from experiments.cli.main import COMMANDS, main


def test_every_registered_command_module_exists() -> None:
    import importlib.util

    missing = [name for name, (mod, _) in COMMANDS.items() if importlib.util.find_spec(mod) is None]
    assert missing == []


def test_no_command_prints_help_and_fails(capsys) -> None:
    assert main([]) == 1
    assert "COMMAND" in capsys.readouterr().out


def test_unknown_command_is_one_line_exit_1() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "frobnicate"], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "invalid choice" in out.stderr


@pytest.mark.parametrize("argv", [["synth", "--n", "x", "-o", "a.npz"], ["synth"]])
def test_argument_errors_exit_1(argv, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "error:" in err


def test_cli_does_not_import_torch_for_light_commands(tmp_path) -> None:
    code = (
        "import sys\nfrom experiments.cli.main import main\n"
        f"rc = main(['synth', '-o', r'{tmp_path / 'p.npz'}'])\n"
        "print(rc, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["0", "False"]


def test_version_comes_from_the_package_metadata(capsys) -> None:
    from importlib.metadata import version as installed

    from experiments.cli.main import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert (
        capsys.readouterr().out.strip() == f"mdcert {installed('mdcert')}" == f"mdcert {version()}"
    )


def test_version_without_installed_metadata_reads_the_source_tree(monkeypatch) -> None:
    import importlib.metadata

    from experiments.cli.main import version

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert version().endswith("(source tree, not installed)")


def test_a_closed_stdout_ends_quietly() -> None:
    """``mdcert check ... | head -1`` printed 'error: Broken pipe while reading an input'."""
    script = (
        "import sys; from experiments.cli.main import main; "
        "sys.argv = ['mdcert']; sys.exit(main(['synth', '--help']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    proc.wait()
    assert "Broken pipe" not in err and "Traceback" not in err
