"""The content-keyed run store (experiments/runtime/store.py): key stability, atomic records,
resume, concurrent writers of one key."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import threading

import numpy as np
import pytest

from experiments.runtime.store import RunStore, canonical_json, content_key


def test_the_key_is_the_sha256_of_canonical_json() -> None:
    value = {"lr": 0.1, "seed": 0, "model": {"width": 8}, "sizes": (3, 4)}
    text = '{"lr":0.1,"model":{"width":8},"seed":0,"sizes":[3,4]}'
    assert canonical_json(value) == text
    assert content_key(value) == hashlib.sha256(text.encode()).hexdigest()
    # pinned: a stored run keeps its key across versions (docs/formats.md, runs/KEY.json)
    assert (
        content_key({"format": "mdcert-study-1", "config": {"seed": 1}})
        == hashlib.sha256(b'{"config":{"seed":1},"format":"mdcert-study-1"}').hexdigest()
    )


def test_the_key_ignores_key_order_and_follows_every_value() -> None:
    a = content_key({"lr": 0.1, "seed": 0, "model": {"width": 8}})
    assert a == content_key({"model": {"width": 8}, "seed": 0, "lr": 0.1})
    assert a != content_key({"lr": 0.1, "seed": 1, "model": {"width": 8}})
    assert a != content_key({"lr": 0.1000001, "seed": 0, "model": {"width": 8}})
    assert content_key({"x": np.int64(3), "y": np.float32(0.5)}) == content_key({"x": 3, "y": 0.5})
    assert content_key({"x": float("nan")}) == content_key({"x": None})
    assert len(a) == 64 and content_key([1, 2], length=20) == content_key([1, 2])[:20]
    with pytest.raises(ValueError):
        content_key(1, length=4)


def test_records_are_whole_and_unreadable_ones_count_as_absent(tmp_path) -> None:
    store = RunStore(tmp_path / "runs", prefix="verdict-")
    key = content_key({"a": 1})
    assert store.read_json(key) is None and store.keys() == [] and not store.exists(key)
    path = store.write_json(key, {"v": float("inf"), "b": [1, 2]})
    assert path == tmp_path / "runs" / f"verdict-{key}.json"
    assert store.read_json(key) == {"b": [1, 2], "v": None} and store.exists(key)
    path.write_text('{"v": ')  # torn by a foreign writer
    assert store.read_json(key) is None
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f"verdict-{key}.json"]
    with pytest.raises(ValueError):
        store.path("../x")


def test_an_interrupted_write_leaves_the_old_record(tmp_path, monkeypatch) -> None:
    store = RunStore(tmp_path)
    store.write_json("k1", {"v": 1})
    import certify.io.atomic as atomic

    def interrupted(src, dst):  # Ctrl-C between write and rename
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.write_json("k1", {"v": 2})
    monkeypatch.undo()
    assert store.read_json("k1") == {"v": 1} and store.temporaries() == []
    assert [p.name for p in tmp_path.iterdir()] == ["k1.json"]


def test_npz_records(tmp_path) -> None:
    store = RunStore(tmp_path, prefix="text-contextual-", suffix=".npz")
    path = store.write_npz("abc", {"x": np.arange(3)})
    assert path.name == "text-contextual-abc.npz" and store.keys() == ["abc"]
    with np.load(path) as fh:
        assert fh["x"].tolist() == [0, 1, 2]


def test_listing_and_resume(tmp_path) -> None:
    store = RunStore(tmp_path, prefix="verdict-")
    keys = [content_key({"seed": s}) for s in range(4)]
    for k in keys[:2]:
        store.write_json(k, {"k": k})
    (tmp_path / "other.json").write_text("{}")  # not this store's
    (tmp_path / f".verdict-{keys[2]}.json.tmp-abcd1234").write_text(
        "{"
    )  # a killed writer's temporary
    assert store.keys() == sorted(keys[:2])
    assert store.missing(keys) == keys[2:]
    assert [p.name for p in store.temporaries()] == [f".verdict-{keys[2]}.json.tmp-abcd1234"]
    again = RunStore(tmp_path, prefix="verdict-")  # a rerun sees the same records
    assert [again.read_json(k) for k in keys[:2]] == [{"k": k} for k in keys[:2]]


def _write_many(root: str, worker: int, rounds: int) -> None:
    store = RunStore(root)
    for i in range(rounds):
        store.write_json("same", {"worker": worker, "round": i, "pad": "x" * 20000})


def test_concurrent_writers_of_one_key_leave_one_whole_record(tmp_path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(tmp_path), w, 30)) for w in range(3)]
    for p in procs:
        p.start()
    store = RunStore(tmp_path)
    seen = 0
    while any(p.is_alive() for p in procs):  # a reader never sees a torn record
        path = store.path("same")
        if path.is_file():
            rec = json.loads(path.read_text())
            assert rec["pad"] == "x" * 20000
            seen += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    rec = store.read_json("same")
    assert rec["round"] == 29 and rec["worker"] in (0, 1, 2)
    assert store.keys() == ["same"] and store.temporaries() == []


def test_threads_writing_one_key(tmp_path) -> None:
    store = RunStore(tmp_path)
    threads = [threading.Thread(target=_write_many, args=(str(tmp_path), w, 20)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.read_json("same")["round"] == 19 and store.temporaries() == []


def test_the_sweep_job_key_is_the_same_content_key() -> None:
    """experiments.sweep.jobs.job_key computes the same canonical JSON (a future merge keeps keys)."""
    from experiments.sweep.jobs import job_key

    values = {"p": "1.75", "n": 8, "problem": "a.npz", "eps": 0.5}
    key = job_key("certify", values, {"problem": "ab" * 32}, "0.1")
    params = {**values, "problem": {"sha256": "ab" * 32}}
    assert key == content_key({"kind": "certify", "params": params, "version": "0.1"})
