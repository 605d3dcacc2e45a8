"""certify.loaders: problem and init files read within bounds, exactly, strictly (issue 21 items 1, 3, 6;
issue 20 "Input strictness"). The 1.6 GB zip bomb is `slow`; a small one with a small budget runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from certify import AttentionProblem, synthetic_problem
from certify.errors import InputWarning, MdcertError
from certify.loaders import check_inits, read_init, read_npz

B = 2**53
LONG = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant


def _npz(path: Path, **arrays) -> Path:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _reproducer_1():  # as stored: rows exactly antiparallel (3 l1 + l2 = 0), infeasible
    X = np.array([[[0, 0], [1, B + 1], [-3, -(3 * B + 3)]]], dtype=np.int64)
    return dict(X=X, y=np.array([1]), z=np.array([[1, 0]]), v=np.array([1, 0]))


def _reproducer_2():  # as stored: feasible; rounded: certified infeasible
    X = np.array([[[B + 1, 1], [B, 1]]], dtype=np.int64)
    return dict(X=X, y=np.array([1]), z=np.array([[1, 0]]), v=np.array([1, 0]))


@pytest.mark.parametrize("make", [_reproducer_1, _reproducer_2])
def test_issue_21_reproducers_are_refused_as_npz_and_as_json(tmp_path, make) -> None:
    arrays = make()
    with pytest.raises(
        MdcertError, match=r"X\[0, \d, [01]\] = -?\d+ \(int64\) would round to .* scale the data"
    ):
        AttentionProblem.load(_npz(tmp_path / "p.npz", **arrays))
    (tmp_path / "p.json").write_text(json.dumps({k: v.tolist() for k, v in arrays.items()}))
    with pytest.raises(
        MdcertError, match=r"X\[0, \d, [01]\] = -?\d+ names a number float64 cannot hold"
    ):
        AttentionProblem.load(tmp_path / "p.json")


@pytest.mark.skipif(not LONG, reason="longdouble is float64 on this platform")
def test_longdouble_problem_is_refused(tmp_path) -> None:
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    X = pr.X.astype(np.longdouble)
    X[1, 2, 0] += np.ldexp(np.longdouble(1), -60)
    with pytest.raises(MdcertError, match=r"X\[1, 2, 0\] = .* would round"):
        AttentionProblem.load(_npz(tmp_path / "p.npz", X=X, y=pr.y, z=pr.z, v=pr.v))
    assert (
        AttentionProblem.load(
            _npz(tmp_path / "q.npz", X=pr.X.astype(np.longdouble), y=pr.y, z=pr.z, v=pr.v)
        ).data_hash()
        == pr.data_hash()
    )


def test_exact_integers_and_float32_load_as_stored(tmp_path) -> None:
    X = np.array([[[2**60, 1], [3, -(2**55)]]], dtype=np.int64)
    pr = AttentionProblem.load(
        _npz(tmp_path / "p.npz", X=X, y=np.array([1]), z=np.float32([[0.1, 1]]), v=np.array([1, 0]))
    )
    assert [int(x) for x in pr.X.ravel()] == X.ravel().tolist() and pr.z[0, 0] == float(
        np.float32(0.1)
    )


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            '{"X": [[[1, 0], [0, 1]]], "X": [[[1, 0], [0, 2]]], "y": [1], "z": [[1, 0]], "v": [1, 0]}',
            r"duplicate key 'X' in a JSON object",
        ),
        (
            '{"X": [[[1, 0], [0, 1]]], "y": [1], "z": [[1, 0]], "v": [1, 0], "alpha": [true]}',
            r"alpha\[0\] = true is a boolean where an integer is expected",
        ),
        (
            '{"X": [[[1, 0], [0, 1]]], "y": [1], "z": [[1, 0]], "v": [1, 0], "lengths": [true]}',
            r"lengths\[0\] = true is a boolean",
        ),
        (
            '{"X": [[[1, 0], [0, true]]], "y": [1], "z": [[1, 0]], "v": [1, 0]}',
            r"X\[0, 1, 1\] = true is a boolean where a number is expected",
        ),
        (
            '{"X": [[[1, 0], [0, 1]]], "y": [true], "z": [[1, 0]], "v": [1, 0]}',
            r"y\[0\] = true is a boolean",
        ),
        (
            '{"X": [[[1, 0], [0, 1]]], "y": [1], "z": [[1, 0]], "v": [1, 0.1000000000000000000001]}',
            r"v\[1\] = 0\.1000000000000000000001 names a number float64 cannot hold",
        ),
    ],
)
def test_json_strictness(tmp_path, text, pattern) -> None:
    (tmp_path / "p.json").write_text(text)
    with pytest.raises(MdcertError, match=pattern) as exc:
        AttentionProblem.load(tmp_path / "p.json")
    assert "\n" not in str(exc.value)


def test_saved_json_reads_back_bitwise(tmp_path) -> None:
    pr = synthetic_problem(n=3, T=4, d=3, seed=5, min_T=2)
    pr.save(tmp_path / "p.json")
    assert AttentionProblem.load(tmp_path / "p.json").data_hash() == pr.data_hash()


def test_fifo_and_device_are_not_regular_files(tmp_path) -> None:
    os.mkfifo(tmp_path / "fifo.npz")
    os.symlink("/dev/zero", tmp_path / "zero.npz")
    t0 = time.perf_counter()
    with pytest.raises(MdcertError, match=r"is not a regular file \(it is a FIFO"):
        AttentionProblem.load(tmp_path / "fifo.npz")
    with pytest.raises(MdcertError, match=r"is not a regular file \(it is a character device\)"):
        AttentionProblem.load(tmp_path / "zero.npz")
    with pytest.raises(MdcertError, match=r"--init .* is not a regular file"):
        read_init(tmp_path / "fifo.npz", 2, stack=False)
    assert time.perf_counter() - t0 < 30  # a hang guard (a FIFO opened would block), not a speed


def _bomb(path: Path, shape: tuple[int, ...], *, extra: dict | None = None) -> Path:
    """An .npz whose X.npy member inflates to prod(shape) * 8 bytes of zeros (deflate, written in chunks)."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("X.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            left, chunk = int(np.prod(shape)) * 8, bytes(1 << 22)
            while left:
                fh.write(chunk[: min(left, len(chunk))])
                left -= min(left, len(chunk))
        for k, v in (extra or {}).items():
            with zf.open(f"{k}.npy", "w") as fh:
                np.lib.format.write_array(fh, v)
    return path


def test_small_bomb_is_refused_before_inflating(tmp_path) -> None:
    path = _bomb(
        tmp_path / "bomb.npz",
        (2, 2, 500_000),
        extra={"y": np.ones(2), "z": np.ones((2, 500_000)), "v": np.ones(500_000)},
    )
    assert path.stat().st_size < 200_000
    with pytest.raises(
        MdcertError,
        match=r"would need about .* to read \(X\.npy inflates to 15 MiB from .*\), more "
        r"than half of the memory budget 8 MiB",
    ):
        AttentionProblem.load(path, memory_budget=8 << 20)


def test_header_claiming_more_than_the_member_holds_is_refused(tmp_path) -> None:
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as zf:
        with zf.open("X.npy", "w") as fh:  # the header claims 9 numbers per token, the data holds 2
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (2, 3, 9)}
            )
            fh.write(pr.X.tobytes())
    with pytest.raises(
        MdcertError, match=r"member X\.npy claims shape \(2, 3, 9\) \(432 bytes\) but holds"
    ):
        read_npz(tmp_path / "lie.npz", keys=None, what="problem", budget=None)


def test_duplicated_npz_member_is_refused(tmp_path) -> None:
    path = tmp_path / "dup.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it writes
        with zipfile.ZipFile(path, "w") as zf:
            for k, v in (("X", np.zeros((1, 2, 1))), ("X", np.ones((1, 2, 1))), ("y", np.ones(1))):
                with zf.open(f"{k}.npy", "w") as fh:
                    np.lib.format.write_array(fh, v)
    with pytest.raises(MdcertError, match=r"holds two arrays named 'X'"):
        AttentionProblem.load(path)


@pytest.mark.parametrize(
    ("W", "stack", "pattern"),
    [
        (np.zeros((2, 2)), False, r"W0 is the zero matrix"),
        (np.stack([np.eye(2), np.zeros((2, 2))]), True, r"W0 matrix 1 is the zero matrix"),
        (
            np.array([[B + 1, 0], [0, 1]]),
            False,
            r"W0\[0, 0\] = 9007199254740993 \(int64\) would round",
        ),
        (np.eye(3), False, r"shape \(3, 3\), but the problems have d = 2"),
        (np.full((2, 2), np.inf), False, r"NaN or Inf"),
        (np.eye(2) * 1j, False, r"must hold real numbers"),
    ],
)
def test_one_init_validator(W, stack, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        check_inits(W, 2, name="W0", stack=stack)


def test_init_file_is_bounded_and_exact(tmp_path) -> None:
    np.save(tmp_path / "W0.npy", np.ones((4, 100, 100)))
    assert read_init(tmp_path / "W0.npy", 100, stack=True).shape == (4, 100, 100)
    with pytest.raises(
        MdcertError, match=r"would need about .* more than half of the memory budget"
    ):
        read_init(tmp_path / "W0.npy", 100, stack=True, budget=100_000)
    raw = (tmp_path / "W0.npy").read_bytes()
    (tmp_path / "big.npy").write_bytes(raw.replace(b"(4, 100, 100)", b"(9, 100, 100)"))
    with pytest.raises(MdcertError, match=r"claims shape \(9, 100, 100\) .* truncated or corrupt"):
        read_init(tmp_path / "big.npy", 100, stack=True)


def test_padding_and_duplicate_tokens_warn(tmp_path) -> None:
    pr = synthetic_problem(n=3, T=4, d=2, seed=1)
    X = pr.X.copy()
    X[1, 3] = 0.0
    AttentionProblem(X, pr.y, pr.z, pr.v).save(tmp_path / "pad.npz")
    with pytest.warns(
        InputWarning, match=r"1 of 3 examples end in all-zero tokens .* no 'lengths'"
    ):
        AttentionProblem.load(tmp_path / "pad.npz")
    AttentionProblem(X, pr.y, pr.z, pr.v, lengths=[4, 3, 4]).save(tmp_path / "declared.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AttentionProblem.load(tmp_path / "declared.npz")


def _run_with_own_peak(cmd: list[str], env: dict, *, timeout: float) -> tuple[int, str, float]:
    """``(exit code, stderr, peak RSS in MiB)`` of one child: ``os.wait4`` reads that child's own
    usage (``RUSAGE_CHILDREN`` is the largest of every child this test process ever waited for,
    so earlier tests' children showed through). The timeout guards against a hang."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise AssertionError(f"{cmd[3:]} did not finish within {timeout} s")
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read(), usage.ru_maxrss / 1024


@pytest.mark.slow
def test_issue_21_zip_bomb_is_refused_from_its_headers_within_200_mb(tmp_path) -> None:
    """2.7 MB -> 1.6 GB (X of shape (2, 2, 5e7)) plus z and v: refused from the headers alone."""
    d = 50_000_000
    path = _bomb(tmp_path / "bomb.npz", (2, 2, d))
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, shape in (("y", (2,)), ("z", (2, d)), ("v", (d,))):
            with zf.open(f"{k}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_1_0(
                    fh, {"descr": "<f8", "fortran_order": False, "shape": shape}
                )
                left, chunk = int(np.prod(shape)) * 8, bytes(1 << 22)
                while left:
                    fh.write(chunk[: min(left, len(chunk))])
                    left -= min(left, len(chunk))
    assert path.stat().st_size < 4_000_000
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "experiments.cli", "certify", str(path), "--p", "2"]
    code, stderr, peak_mb = _run_with_own_peak(cmd, env, timeout=60)
    assert code == 1 and len(stderr.strip().splitlines()) == 1, stderr
    assert "X.npy inflates to 1.5 GiB" in stderr and "memory budget" in stderr, stderr
    assert peak_mb <= 200, peak_mb  # nothing was inflated
    with pytest.raises(MdcertError, match=r"memory budget"):
        AttentionProblem.load(path)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=4, max_size=4), st.booleans())
@example([1, B + 1, -3, -(3 * B + 3)], False).via("issue 21 reproducer 1, .npz")
@example([B + 1, 1, B, 1], True).via("issue 21 reproducer 2, .json")
def test_no_accepted_file_holds_other_data_than_the_problem(
    tmp_path_factory, ints, as_json
) -> None:
    """Through the file loaders: a problem is loaded only when its X is the stored integers, exactly."""
    d = tmp_path_factory.mktemp("h")
    X = np.array(ints, dtype=np.int64).reshape(1, 2, 2)
    arrays = dict(X=X, y=np.array([1]), z=np.array([[1, 0]]), v=np.array([1, 0]))
    if as_json:
        path = d / "p.json"
        path.write_text(json.dumps({k: v.tolist() for k, v in arrays.items()}))
    else:
        path = _npz(d / "p.npz", **arrays)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputWarning)
            pr = AttentionProblem.load(path)
    except MdcertError as exc:
        assert any(int(float(k)) != k for k in ints), exc
        assert "would round" in str(exc) or "cannot hold" in str(exc), exc
        return
    assert [int(x) for x in pr.X.ravel()] == ints
