"""Job keys (experiments/sweep/jobs.py): a content hash of kind, parameters, input bytes and version."""

from __future__ import annotations

import shutil

from experiments.sweep.jobs import FileDigests, file_sha256, iter_jobs, job_key, mdcert_version
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import CERTIFY_SPEC, make_problems, write_spec


def test_key_depends_on_content_not_on_path(tmp_path) -> None:
    a, b = make_problems(tmp_path, seeds=(1, 2))
    copy = tmp_path / "elsewhere.npz"
    shutil.copy(a, copy)
    ka = job_key("certify", {"problem": str(a), "p": "2"}, {"problem": file_sha256(a)}, "1")
    kc = job_key("certify", {"problem": str(copy), "p": "2"}, {"problem": file_sha256(copy)}, "1")
    kb = job_key("certify", {"problem": str(b), "p": "2"}, {"problem": file_sha256(b)}, "1")
    assert ka == kc != kb and len(ka) == 64
    assert ka != job_key(
        "certify", {"problem": str(a), "p": "2"}, {"problem": file_sha256(a)}, "2"
    )  # version
    assert ka != job_key(
        "certify", {"problem": str(a), "p": "3"}, {"problem": file_sha256(a)}, "1"
    )  # params
    assert ka != job_key(
        "check", {"problem": str(a), "p": "2"}, {"problem": file_sha256(a)}, "1"
    )  # kind
    # a type change is a different job: digits 30 is not the text "30"
    assert job_key("synth", {"n": 3}, {}, "1") != job_key("synth", {"n": "3"}, {}, "1")


def test_iter_jobs_is_lazy_and_hashes_each_file_once(tmp_path, monkeypatch) -> None:
    make_problems(tmp_path)
    spec = load_spec(write_spec(tmp_path, CERTIFY_SPEC))
    calls = []
    import experiments.sweep.jobs as jobs

    real = jobs.file_sha256
    monkeypatch.setattr(jobs, "file_sha256", lambda p: calls.append(p) or real(p))
    digests = FileDigests()
    it = iter_jobs(spec, tmp_path / "out", digests=digests)
    first = next(it)
    assert len(calls) == 1 and first.version == mdcert_version()
    rest = list(it)
    assert len(rest) == 7 and len(calls) == 4  # 4 files, 8 jobs
    assert len({j.key for j in [first, *rest]}) == 8
    assert dict(first.labels)["problem"] == "data/p1.npz" and first.inputs[0][1] == real(
        first.inputs[0][0]
    )
    # editing an input gives new keys
    make_problems(tmp_path, seeds=(9,))
    shutil.copy(tmp_path / "data" / "p9.npz", tmp_path / "data" / "p1.npz")
    again = {j.key for j in iter_jobs(spec, tmp_path / "out")}
    assert len(again & {j.key for j in [first, *rest]}) == 6
