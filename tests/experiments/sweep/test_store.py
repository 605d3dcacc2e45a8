"""The sweep directory (experiments/sweep/store.py): atomic records, verified reuse, the index, the lock."""

from __future__ import annotations

import json

import pytest

from certify.errors import MdcertError
from experiments.sweep.jobs import file_sha256
from experiments.sweep.store import RECORD, Store

KEY = "ab" + "0" * 62


def _record(store: Store, key: str, *, status: str = "done", payload: str = "x") -> dict:
    tmp = store.new_tmp(key)
    (tmp / "out.txt").write_text(payload)
    rec = {
        "key": key,
        "status": status,
        "outputs": {"out.txt": {"bytes": len(payload), "sha256": file_sha256(tmp / "out.txt")}},
    }
    (tmp / RECORD).write_text(json.dumps(rec))
    assert store.commit(tmp, key) is None or status == "done"
    return rec


def test_commit_is_a_rename_and_a_finished_record_wins(tmp_path) -> None:
    store = Store(tmp_path)
    _record(store, KEY, payload="first")
    assert store.finished(KEY)["outputs"]["out.txt"]["bytes"] == 5
    tmp = store.new_tmp(KEY)
    (tmp / RECORD).write_text(json.dumps({"key": KEY, "status": "done", "outputs": {}}))
    assert store.commit(tmp, KEY)["outputs"]["out.txt"]["bytes"] == 5  # the first stays
    assert not tmp.exists() and store.stale_attempts(KEY) == 0


def test_a_failed_record_is_replaced(tmp_path) -> None:
    store = Store(tmp_path)
    _record(store, KEY, status="failed")
    assert store.finished(KEY) is None and store.read_record(KEY)["status"] == "failed"
    _record(store, KEY, payload="second")
    assert store.finished(KEY) is not None
    assert [p.name for p in (tmp_path / "records" / "ab").iterdir()] == [KEY]


def test_finished_verifies_key_and_outputs(tmp_path) -> None:
    store = Store(tmp_path)
    _record(store, KEY)
    out = store.record_dir(KEY) / "out.txt"
    out.write_text("y")  # same size, other bytes
    assert store.finished(KEY) is None
    out.write_text("x")
    assert store.finished(KEY) is not None
    rec = store.record_dir(KEY) / RECORD
    rec.write_text(rec.read_text().replace(KEY, "ab" + "1" * 62))
    assert store.finished(KEY) is None  # a record of another key
    rec.write_text("{not json")
    assert store.finished(KEY) is None and store.read_record(KEY) is None
    assert store.finished("cd" + "0" * 62) is None


def test_index_skips_a_torn_line_and_clean_tmp(tmp_path) -> None:
    store = Store(tmp_path)
    store.append_index({"key": KEY, "status": "done"})
    with open(tmp_path / "index.jsonl", "a") as fh:
        fh.write('{"key": "trunc')
    assert [ln["key"] for ln in store.iter_index()] == [KEY]
    store.new_tmp(KEY)
    (store.record_dir(KEY).parent / f".{KEY}.old-1-x").mkdir()
    assert store.stale_attempts(KEY) == 1
    assert store.clean_tmp() == 2 and store.stale_attempts(KEY) == 0


def test_one_driver_per_directory(tmp_path) -> None:
    store = Store(tmp_path / "s")
    with store.locked():
        with pytest.raises(MdcertError, match="another mdcert sweep is writing"):
            with Store(tmp_path / "s").locked():
                pass
    with Store(tmp_path / "s").locked():  # released
        pass


def test_check_root_refuses_inputs_and_foreign_directories(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(MdcertError, match="is not a directory"):
        Store(tmp_path / "file").check_root([])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.txt").write_text("x")
    with pytest.raises(MdcertError, match="not a sweep's"):
        Store(tmp_path / "other").check_root([])
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "sweep.json").write_text("{}")
    (tmp_path / "sw" / "a.npz").write_text("x")
    with pytest.raises(MdcertError, match="holds the input"):
        Store(tmp_path / "sw").check_root([tmp_path / "sw" / "a.npz"])
    with pytest.raises(MdcertError, match="holds the input"):
        Store(tmp_path / "sw").check_root([tmp_path / "sw"])
    Store(tmp_path / "sw").check_root([tmp_path / "file"])
    Store(tmp_path / "new").check_root([tmp_path / "file"])
