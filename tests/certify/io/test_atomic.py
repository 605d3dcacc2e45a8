"""`certify.io.atomic`: outputs appear complete or not at all, concurrent writers leave one whole
file, and nothing the writer did not create is ever removed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.io.atomic import (
    atomic_dir,
    atomic_file,
    write_bytes_atomic,
    write_npy_atomic,
    write_npz_atomic,
    write_text_atomic,
)


def names(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_each_writer_round_trips_and_leaves_only_the_target(tmp_path) -> None:
    W = np.arange(6.0).reshape(2, 3)
    assert write_text_atomic(tmp_path / "a.txt", "é\n").read_text(encoding="utf-8") == "é\n"
    assert write_bytes_atomic(tmp_path / "b.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    assert np.array_equal(np.load(write_npy_atomic(tmp_path / "c.npy", W)), W)
    for compressed in (False, True):
        path = write_npz_atomic(tmp_path / f"d{compressed}.npz", {"W": W}, compressed=compressed)
        with np.load(path) as f:
            assert np.array_equal(f["W"], W)
    assert names(tmp_path) == ["a.txt", "b.bin", "c.npy", "dFalse.npz", "dTrue.npz"]


def test_new_files_get_the_mode_open_gives(tmp_path) -> None:
    old = os.umask(0o027)
    try:
        path = write_text_atomic(tmp_path / "x.json", "{}")
        (tmp_path / "plain").write_text("")
    finally:
        os.umask(old)
    plain = (tmp_path / "plain").stat().st_mode
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain) == 0o640


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, exc) -> None:
    target = write_text_atomic(tmp_path / "out.json", "old")
    with pytest.raises(exc):
        with atomic_file(target, "w") as fh:
            fh.write("half")
            raise exc
    assert target.read_text() == "old" and names(tmp_path) == ["out.json"]
    with pytest.raises(ValueError):  # no pickles; and nothing is left behind
        write_npy_atomic(tmp_path / "bad.npy", np.array([object()], dtype=object))
    assert names(tmp_path) == ["out.json"]


def test_never_touches_a_file_it_did_not_create(tmp_path) -> None:
    """The reproducer of issue 21: ``same.npz.tmp.npz`` (the old fixed temporary name) and every
    name a temporary could have survive a write and a failed write."""
    mine = {
        "same.npz.tmp.npz": "precious",
        ".same.npz.tmp-": "precious too",
        ".same.npz.tmp-abc": "mine",
    }
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    write_npz_atomic(tmp_path / "same.npz", {"x": np.arange(3)})
    with pytest.raises(RuntimeError):
        with atomic_file(tmp_path / "same.npz") as fh:
            fh.write(b"half")
            raise RuntimeError
    assert {n: (tmp_path / n).read_text() for n in mine} == mine
    assert names(tmp_path) == sorted([*mine, "same.npz"])


WRITER = """
import sys
import numpy as np
from certify.io.atomic import write_npz_atomic
path, seed = sys.argv[1], int(sys.argv[2])
data = {"seed": np.array(seed), "X": np.random.default_rng(seed).standard_normal((64, 64))}
for _ in range(25):
    write_npz_atomic(path, data)
"""


def test_concurrent_writers_leave_one_complete_file(tmp_path) -> None:
    """Four processes write one path 25 times each while this one reads it: every read is a whole
    file, and the last is exactly one writer's data."""
    path = tmp_path / "same.npz"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(seed)], env=env, stderr=subprocess.PIPE
        )
        for seed in range(4)
    ]
    reads = 0
    while any(p.poll() is None for p in procs):
        try:
            with np.load(path) as f:  # never a torn or half-written zip
                assert f["X"].shape == (64, 64)
            reads += 1
        except FileNotFoundError:
            pass
    errs = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errs
    with np.load(path) as f:
        seed = int(f["seed"])
        np.testing.assert_array_equal(f["X"], np.random.default_rng(seed).standard_normal((64, 64)))
    assert names(tmp_path) == ["same.npz"]


def test_atomic_dir_new_and_failed(tmp_path) -> None:
    with atomic_dir(tmp_path / "run") as tmp:
        (tmp / "a.txt").write_text("a")
    assert names(tmp_path / "run") == ["a.txt"]
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(tmp_path / "other") as tmp:
            (tmp / "half").write_text("half")
            raise KeyboardInterrupt
    assert names(tmp_path) == ["run"]


def test_atomic_dir_refuses_a_non_empty_folder_without_replaceable(tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("mine")
    with pytest.raises(MdcertError, match="filled by another process"):
        with atomic_dir(tmp_path / "run") as tmp:
            (tmp / "a.txt").write_text("a")
    assert names(tmp_path) == ["run"] and names(tmp_path / "run") == ["notes.txt"]
    (tmp_path / "afile").write_text("x")
    with pytest.raises(MdcertError, match="not a directory"):
        with atomic_dir(tmp_path / "afile"):
            pass
    assert (tmp_path / "afile").read_text() == "x" and names(tmp_path) == ["afile", "run"]


def test_atomic_dir_replaces_and_deletes_only_what_it_is_told(tmp_path, capsys) -> None:
    """Only the files ``replaceable`` returns are deleted from the old folder; anything else (here
    notes.txt, a file outside, an absolute path) is kept, in the aside folder, and named on
    stderr."""
    old = tmp_path / "run"
    (old / "sub").mkdir(parents=True)
    for rel in ("a.npz", "sub/b.png", "notes.txt"):
        (old / rel).write_text(rel)
    (tmp_path / "outside.txt").write_text("outside")
    told = {"a.npz", "sub/b.png", "../outside.txt", str(tmp_path / "outside.txt"), "missing.json"}
    with atomic_dir(old, replaceable=lambda d: told) as tmp:
        (tmp / "new.txt").write_text("new")
    assert names(old) == ["new.txt"] and (tmp_path / "outside.txt").read_text() == "outside"
    aside = [n for n in names(tmp_path) if n.startswith(".run.old-")]
    assert len(aside) == 1 and names(tmp_path / aside[0]) == ["notes.txt"]
    assert "kept 1 file(s)" in capsys.readouterr().err


def test_atomic_dir_refusal_by_replaceable_keeps_everything(tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text("{}")

    def refuse(folder):
        raise MdcertError("not yours")

    with pytest.raises(MdcertError, match="not yours"):
        with atomic_dir(tmp_path / "run", replaceable=refuse) as tmp:
            (tmp / "a").write_text("a")
    assert names(tmp_path) == ["run"] and names(tmp_path / "run") == ["summary.json"]
