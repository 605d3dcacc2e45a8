"""`experiments.runtime.problemkind`: the kind of a problem file, read without loading its arrays."""

from __future__ import annotations

from certify.synth import classification_problem, synthetic_problem
from experiments.runtime.problemkind import is_classification_file


def test_the_kind_is_read_without_loading(tmp_path) -> None:
    problem = classification_problem(n=6, d=2, classes=None, separable=True, seed=0)
    problem.save(tmp_path / "sep.npz")
    problem.save(tmp_path / "sep.json")
    synthetic_problem(n=2, T=3, d=2, seed=0).save(tmp_path / "att.npz")
    synthetic_problem(n=2, T=3, d=2, seed=0).save(tmp_path / "att.json")
    assert is_classification_file(tmp_path / "sep.npz")
    assert is_classification_file(tmp_path / "sep.json")
    assert not is_classification_file(tmp_path / "att.npz")
    assert not is_classification_file(tmp_path / "att.json")


def test_unreadable_files_are_left_to_the_loader(tmp_path) -> None:
    assert not is_classification_file(tmp_path / "missing.npz")
    (tmp_path / "bad.json").write_text("{")
    assert not is_classification_file(tmp_path / "bad.json")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert not is_classification_file(tmp_path / "bad.npz")
    (tmp_path / "problem.txt").write_text("kind = classification")
    assert not is_classification_file(tmp_path / "problem.txt")


def test_a_fifo_is_never_opened(tmp_path) -> None:
    """Opening a FIFO blocks until a writer comes: the kind check must not open one (the loader
    then refuses it in one line)."""
    import os

    for name in ("pipe.npz", "pipe.json"):
        os.mkfifo(tmp_path / name)
        assert is_classification_file(tmp_path / name) is False
