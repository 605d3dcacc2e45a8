"""`experiments.runtime.outputs`: outputs never name an input or each other; .npy outputs are atomic; `--overwrite`
replaces only a run of the same kind that mdcert wrote, and never removes a file it did not write."""

from __future__ import annotations

import os

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.runtime.outputs import (
    check_distinct,
    check_output_dir,
    check_outside,
    write_npy_atomic,
)


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "in.npz").write_bytes(b"input")
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "in.npz", tmp_path / "link.npy")
    os.link(tmp_path / "in.npz", tmp_path / "hard.npy")
    return tmp_path


@pytest.mark.parametrize(
    "outputs, pattern",
    [
        ({"-o": "{d}/in.npz"}, r"-o '.*in\.npz' is the problem file"),
        ({"-o": "{d}/sub/../in.npz"}, "is the problem file"),
        ({"--export-w": "{d}/link.npy"}, "--export-w .* is the problem file"),
        ({"--export-w": "{d}/hard.npy"}, "is the problem file"),
        (
            {"-o": "{d}/a.npy", "--export-w": "{d}/sub/../a.npy"},
            "--export-w and -o name the same file",
        ),
    ],
)
def test_refuses_inputs_and_duplicates(files, outputs, pattern) -> None:
    outs = {k: v.format(d=files) for k, v in outputs.items()}
    with pytest.raises(MdcertError, match=pattern):
        check_distinct(outs, {"the problem file": files / "in.npz"})
    assert (files / "in.npz").read_bytes() == b"input"


def test_relative_path_from_the_working_directory(files, monkeypatch) -> None:
    monkeypatch.chdir(files / "sub")
    with pytest.raises(MdcertError, match="is the certificate"):
        check_distinct({"-o": "../in.npz"}, {"the certificate": files / "in.npz"})


def test_distinct_paths_and_none_pass(files) -> None:
    check_distinct(
        {"-o": str(files / "out.json"), "--export-w": None, "--export-direction": files / "u.npy"},
        {"the problem file": files / "in.npz", "the --init file": None},
    )


def test_write_npy_atomic(tmp_path) -> None:
    W = np.arange(6.0).reshape(2, 3)
    out = write_npy_atomic(tmp_path / "W.npy", W)
    assert np.array_equal(np.load(out, allow_pickle=False), W) and sorted(os.listdir(tmp_path)) == [
        "W.npy"
    ]
    with pytest.raises(ValueError):  # no pickles; and nothing is left behind
        write_npy_atomic(tmp_path / "bad.npy", np.array([object()], dtype=object))
    assert sorted(os.listdir(tmp_path)) == ["W.npy"]


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    inp = tmp_path / "data" / "in.json"
    inp.write_text("{}")
    monkeypatch.chdir(tmp_path)
    return tmp_path, inp


@pytest.mark.parametrize("out", ["data", ".", "{root}", "data/..", "data/in.json"])
def test_run_directory_containing_an_input_is_refused(tree, out) -> None:
    root, inp = tree
    with pytest.raises(MdcertError, match="contains the problem file"):
        check_output_dir(
            out.replace("{root}", str(root)),
            option="-o",
            overwrite=True,
            inputs={"the problem file": "data/in.json"},
        )


def test_run_directory_beside_an_input_passes(tree) -> None:
    root, _ = tree
    check_output_dir(
        "run", option="-o", overwrite=False, inputs={"the problem file": "data/in.json", "x": None}
    )
    check_outside("run", {"the problem file": "data/in.json"}, option="-o")
    os.symlink(root / "data", root / "dlink")
    with pytest.raises(MdcertError, match="contains the problem file"):
        check_output_dir(
            "dlink", option="-o", overwrite=True, inputs={"the problem file": "data/in.json"}
        )
    (root / "empty").mkdir()
    os.symlink(root / "empty", root / "elink")
    with pytest.raises(MdcertError, match="is a symbolic link; give the directory itself"):
        check_output_dir("elink", option="-o", overwrite=True, kind="paths")


# ------------------------------------------------------------------ run directories and --overwrite
def _run(root, kind="paths", files=("summary.json", "arrays.npz")):
    from experiments.runtime.outputs import run_dir

    with run_dir(root, kind=kind, overwrite=False) as tmp:
        for rel in files:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(rel)
    return root


def _study(root):
    (root / "runs").mkdir(parents=True)
    (root / "study.json").write_text('{"format": "mdcert-study-1", "kind": "synthetic"}')
    (root / "runs" / "k.json").write_text("{}")


def _junk_summary(root):
    root.mkdir()
    (root / "summary.json").write_text('{"kind": "paths"}')


def _regpath_with_notes(root):
    _run(root, "regpath", ("summary.json", "path.npz"))
    (root / "notes.txt").write_text("my notes")


def _paths_with_folder(root):
    _run(root)
    (root / "mine").mkdir()


def _paths_with_link(root):
    _run(root)
    os.symlink("/etc/hostname", root / "link.png")


def _bad_marker(text):
    def make(root):
        _run(root)
        (root / ".mdcert-run").write_text(text)

    return make


@pytest.mark.parametrize(
    "make, pattern",
    [
        (_study, r"is not an mdcert run directory \(it has no valid \.mdcert-run marker\)"),
        (_junk_summary, r"is not an mdcert run directory"),
        (lambda r: _run(r, "regpath"), r"holds a 'regpath' run, not a 'paths' run"),
        (_regpath_with_notes, r"holds a 'regpath' run"),
        (_paths_with_folder, r"holds 'mine', which mdcert did not write"),
        (_paths_with_link, r"holds 'link\.png', which mdcert did not write"),
        (_bad_marker("{"), r"no valid \.mdcert-run"),
        (
            _bad_marker('{"format": "mdcert-run/1", "kind": "paths", "files": "summary.json"}'),
            r"no valid",
        ),
        (_bad_marker('{"format": "mdcert-run/2", "kind": "paths", "files": []}'), r"no valid"),
    ],
)
def test_overwrite_refuses_what_mdcert_did_not_write(tmp_path, make, pattern) -> None:
    """A study, a folder with a junk summary.json, a run of another kind, a run holding a file of the
    user's: refused by the check before any work and by the replace at the end; nothing changes."""
    from experiments.runtime.outputs import run_dir

    out = tmp_path / "out"
    make(out)
    before = digest(out)
    with pytest.raises(MdcertError, match=pattern):
        check_output_dir(out, option="-o", overwrite=True, kind="paths")
    with pytest.raises(MdcertError, match=pattern):
        with run_dir(out, kind="paths", overwrite=True) as tmp:
            (tmp / "summary.json").write_text("new")
    assert digest(out) == before and sorted(os.listdir(tmp_path)) == ["out"]


def test_a_user_file_in_a_run_of_the_same_kind_is_refused_and_kept(tmp_path, capsys) -> None:
    from experiments.cli.main import main

    out = _run(tmp_path / "run", "regpath", ("summary.json", "path.npz"))
    (out / "notes.txt").write_text("my notes")
    assert main(["regpath", "joint-example", "--p", "2", "--overwrite", "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds 'notes.txt', which mdcert did not write" in err
    assert (out / "notes.txt").read_text() == "my notes" and (
        out / "path.npz"
    ).read_text() == "path.npz"


def test_overwrite_replaces_a_run_of_the_same_kind(tmp_path) -> None:
    from experiments.runtime.outputs import add_run_files, read_marker, run_dir, run_files

    out = _run(tmp_path / "run", files=("summary.json", "arrays.npz", "sub/deep.txt"))
    marker = read_marker(out)
    assert marker["kind"] == "paths" and marker["files"] == [
        "arrays.npz",
        "sub/deep.txt",
        "summary.json",
    ]
    (out / "bregman.png").write_text("figure")  # what `mdcert plot` writes, and records
    add_run_files(out, [out / "bregman.png"])
    assert run_files(out, kind="paths") >= {"bregman.png", "sub/deep.txt", ".mdcert-run"}
    with run_dir(out, kind="paths", overwrite=True) as tmp:
        (tmp / "summary.json").write_text("new")
    assert (
        sorted(os.listdir(out)) == [".mdcert-run", "summary.json"]
        and (out / "summary.json").read_text() == "new"
    )
    assert sorted(os.listdir(tmp_path)) == ["run"]  # the old run is gone, nothing left aside
    add_run_files(tmp_path, [tmp_path / "x"])  # a folder without a marker: left alone
    assert sorted(os.listdir(tmp_path)) == ["run"]


def digest(root) -> dict:
    return {
        str(p.relative_to(root)): (
            "link" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
        )
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "argv",
    [
        [
            "paths",
            "--trials",
            "1",
            "--n",
            "2",
            "--T",
            "3",
            "--d",
            "2",
            "--steps",
            "5",
            "--no-certify",
            "--progress",
            "off",
        ],
        ["signdescent", "{d}/problem.npz", "--synth", "block", "--N", "3", "--steps", "20"],
    ],
    ids=["paths", "signdescent"],
)
def test_every_overwrite_option_keeps_a_users_file(tmp_path, capsys, argv) -> None:
    """Each command with --overwrite: its run is replaced, but not while a file of the user's is in it."""
    from experiments.cli.main import main

    out = tmp_path / "run"
    argv = [a.replace("{d}", str(tmp_path)) for a in argv] + ["-o", str(out)]
    assert main(argv) == 0 and main([*argv, "--overwrite"]) == 0
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main([*argv, "--overwrite"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds 'notes.txt', which mdcert did not write" in err
    assert (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    assert main([*argv, "--overwrite"]) == 0 and read_kind(out) == argv[0]


def read_kind(folder) -> str:
    from experiments.runtime.outputs import read_marker

    return read_marker(folder)["kind"]
