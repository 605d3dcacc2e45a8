"""`experiments.outputs`: outputs never name an input or each other; .npy outputs are atomic."""

from __future__ import annotations

import os

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.outputs import check_distinct, check_output_dir, check_outside, write_npy_atomic


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "in.npz").write_bytes(b"input")
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "in.npz", tmp_path / "link.npy")
    os.link(tmp_path / "in.npz", tmp_path / "hard.npy")
    return tmp_path


@pytest.mark.parametrize("outputs, pattern", [
    ({"-o": "{d}/in.npz"}, r"-o '.*in\.npz' is the problem file"),
    ({"-o": "{d}/sub/../in.npz"}, "is the problem file"),
    ({"--export-w": "{d}/link.npy"}, "--export-w .* is the problem file"),
    ({"--export-w": "{d}/hard.npy"}, "is the problem file"),
    ({"-o": "{d}/a.npy", "--export-w": "{d}/sub/../a.npy"}, "--export-w and -o name the same file"),
])
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
    check_distinct({"-o": str(files / "out.json"), "--export-w": None, "--export-direction": files / "u.npy"},
                   {"the problem file": files / "in.npz", "the --init file": None})


def test_write_npy_atomic(tmp_path) -> None:
    W = np.arange(6.0).reshape(2, 3)
    out = write_npy_atomic(tmp_path / "W.npy", W)
    assert np.array_equal(np.load(out, allow_pickle=False), W) and sorted(os.listdir(tmp_path)) == ["W.npy"]
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
        check_output_dir(out.replace("{root}", str(root)), option="-o", overwrite=True,
                         inputs={"the problem file": "data/in.json"})


def test_run_directory_beside_an_input_passes(tree) -> None:
    root, _ = tree
    check_output_dir("run", option="-o", overwrite=False, inputs={"the problem file": "data/in.json", "x": None})
    check_outside("run", {"the problem file": "data/in.json"}, option="-o")
    os.symlink(root / "data", root / "dlink")
    with pytest.raises(MdcertError, match="contains the problem file"):
        check_output_dir("dlink", option="-o", overwrite=True, inputs={"the problem file": "data/in.json"})
