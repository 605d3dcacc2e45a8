"""The batched mirror-descent path engine (experiments/paths.py): equivalences, stops, bad input."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import MdcertError, synthetic_problem
from certify.lp import bregman, lp_normalize
from experiments.paths.engine import (
    TrajectoryStatus,
    directional_bregman,
    record_schedule,
    resolve_device,
    run_paths,
)

ROOT = Path(__file__).resolve().parents[3]


def _baseline():
    spec = importlib.util.spec_from_file_location(
        "looped_baseline", ROOT / "benchmarks" / "looped_baseline.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Small tensors: one intra-op thread (2 OpenMP threads on a busy 2-core machine cost ~10x)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def problems():
    return [synthetic_problem(seed=s) for s in range(4)]


@pytest.fixture(scope="module")
def W0():
    return np.random.default_rng(1).standard_normal((4, 10, 10))


def _autograd_loss(W, v, X, y, z):
    a = torch.softmax(torch.einsum("ntd,de,ne->nt", X, W, z), dim=-1)
    f = torch.einsum("nt,ntd,d->n", a, X, v)
    return torch.nn.functional.softplus(-y * f).mean()


# ---------------------------------------------------------------------------------------------- equivalences
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("p", ["1.75", "2", "3"])
def test_batched_equals_looped_autograd_baseline(problems, W0, p, normalize) -> None:
    """Batched engine == the one-at-a-time autograd loop of the paper's code (before saturation)."""
    lb = _baseline()
    K = 60
    res = run_paths(
        problems,
        data_index=range(4),
        p=[p] * 4,
        lr=[0.1] * 4,
        steps=[K] * 4,
        W0=W0,
        normalize=normalize,
        records=12,
    )
    assert (
        float(np.nanmax(res.top_attention)) < 1 - 1e-6
    )  # the baseline's gradient is still accurate
    for b in range(4):
        o = lb.train_one(
            problems[b].X,
            problems[b].y,
            problems[b].z,
            problems[b].v,
            W0[b],
            p=float(p),
            lr=0.1,
            steps=K,
            normalize=normalize,
            records=12,
        )
        m = res.record_steps[b] >= 0
        assert list(res.record_steps[b][m]) == o["steps"]
        ours = res.W[b][m]
        assert np.max(np.abs(ours - o["W"])) <= 1e-12 * np.max(np.abs(o["W"]))


def test_batched_equals_single_trajectory_runs(problems, W0) -> None:
    ps = ["1.75", "2", "3", "1.1"]
    res = run_paths(
        problems,
        data_index=range(4),
        p=ps,
        lr=[0.1, 0.05, 0.1, 0.2],
        steps=[40, 50, 60, 30],
        W0=W0,
        normalize=True,
        records=10,
    )
    for b in range(4):
        one = run_paths(
            problems,
            data_index=[b],
            p=[ps[b]],
            lr=[res.lr[b]],
            steps=[res.steps[b]],
            W0=W0[b : b + 1],
            normalize=True,
            records=10,
        )
        m = res.record_steps[b] >= 0
        assert np.array_equal(one.record_steps[0][one.record_steps[0] >= 0], res.record_steps[b][m])
        k = int(m.sum())
        assert np.max(np.abs(one.W[0][:k] - res.W[b][:k])) <= 1e-12 * np.max(np.abs(res.W[b][:k]))
        assert np.allclose(one.loss[0][:k], res.loss[b][:k], rtol=1e-12, atol=0)


@pytest.mark.parametrize("normalize", [False, True])
def test_p2_equals_torch_sgd(problems, W0, normalize) -> None:
    """p = 2 mirror descent is gradient descent: compare with torch.optim.SGD on an autograd loss."""
    K = 50
    res = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["2", "2"],
        lr=[0.3, 0.3],
        steps=[K, K],
        W0=W0[:2],
        normalize=normalize,
        records=K + 1,
    )
    for b in range(2):
        X, y, z, v = (torch.tensor(getattr(problems[b], k)) for k in ("X", "y", "z", "v"))
        W = torch.nn.Parameter(torch.tensor(W0[b]))
        opt = torch.optim.SGD([W], lr=0.3)
        traj = [W.detach().clone()]
        for _ in range(K):
            opt.zero_grad()
            _autograd_loss(W, v, X, y, z).backward()
            if normalize:
                W.grad /= torch.linalg.vector_norm(W.grad)
            opt.step()
            traj.append(W.detach().clone())
        traj = torch.stack(traj).numpy()
        steps = res.record_steps[b][res.record_steps[b] >= 0]
        assert steps[0] == 0 and steps[-1] == K and len(steps) > 20
        assert np.max(np.abs(res.W[b][: len(steps)] - traj[steps])) <= 1e-12 * np.abs(traj).max()


@pytest.mark.parametrize("p", ["1.75", "3"])
def test_matches_the_project_mirror_descent_optimizer(problems, W0, p) -> None:
    """The engine's dual-state step == `experiments.optim.optimizer.LpMirrorDescent` (docs/theory.md section 2) on autograd."""
    optim = pytest.importorskip("experiments.optim.optimizer")
    K = 30
    res = run_paths(
        problems[:1],
        data_index=[0],
        p=[p],
        lr=[0.1],
        steps=[K],
        W0=W0[:1],
        normalize=True,
        records=5,
    )
    pr = problems[0]
    X, y, z, v = (torch.tensor(getattr(pr, k)) for k in ("X", "y", "z", "v"))
    W = torch.nn.Parameter(torch.tensor(W0[0]))
    opt = optim.LpMirrorDescent([W], lr=0.1, p=p, normalize_gradient=True)
    for _ in range(K):
        opt.zero_grad()
        _autograd_loss(W, v, X, y, z).backward()
        opt.step()
    assert (
        np.max(np.abs(res.W_final[0] - W.detach().numpy())) <= 1e-12 * np.abs(res.W_final[0]).max()
    )


def test_same_seed_identical_results(problems, W0) -> None:
    kw = dict(
        data_index=[0, 1, 2, 3],
        p=["1.75", "2", "3", "2"],
        lr=[0.1] * 4,
        steps=[30, 40, 50, 10],
        W0=W0,
        normalize=True,
        records=8,
    )
    a, b = run_paths(problems, **kw), run_paths(problems, **kw)
    for name in (
        "W",
        "loss",
        "norm_p",
        "top_attention",
        "W_final",
        "attention_final",
        "record_steps",
    ):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


@settings(deadline=None, max_examples=8)
@given(
    p=st.sampled_from(["1.5", "2", "3", "5/2"]),
    lr=st.floats(0.01, 0.5),
    K=st.integers(1, 25),
    normalize=st.booleans(),
)
@example(p="3", lr=0.1, K=1, normalize=True)
def test_property_batch_position_does_not_matter(p, lr, K, normalize) -> None:
    probs = [synthetic_problem(seed=s) for s in range(3)]
    W0 = np.random.default_rng(K).standard_normal((3, 10, 10))
    res = run_paths(
        probs,
        data_index=[0, 1, 2],
        p=[p] * 3,
        lr=[lr] * 3,
        steps=[K] * 3,
        W0=W0,
        normalize=normalize,
        records=5,
    )
    rev = run_paths(
        probs,
        data_index=[2, 1, 0],
        p=[p] * 3,
        lr=[lr] * 3,
        steps=[K] * 3,
        W0=W0[::-1],
        normalize=normalize,
        records=5,
    )
    assert np.allclose(res.W_final, rev.W_final[::-1], rtol=1e-12, atol=1e-14)
    assert np.all(res.stop_step == K)


# ---------------------------------------------------------------------------------------------- recording
def test_record_schedule_is_log_spaced_with_endpoints() -> None:
    s = record_schedule(20000, 64)
    assert s[0] == 0 and s[-1] == 20000 and np.all(np.diff(s) > 0) and len(s) <= 64
    assert np.array_equal(record_schedule(3, 64), [0, 1, 2, 3])
    with pytest.raises(MdcertError, match="records"):
        record_schedule(10, 1)


def test_record_schedule_spacings() -> None:
    assert np.array_equal(record_schedule(100, 11, spacing="linear"), np.arange(0, 101, 10))
    assert np.array_equal(record_schedule(3, 64, spacing="linear"), [0, 1, 2, 3])
    assert np.array_equal(
        record_schedule(100, 11, spacing="auto"), record_schedule(100, 11, spacing="linear")
    )
    long = record_schedule(10**6, 61, spacing="auto")  # longer than 10x the records: log-spaced
    assert (
        np.array_equal(long, record_schedule(10**6, 61)) and 55 <= long.size <= 61 and long[1] == 1
    )
    with pytest.raises(MdcertError, match="unknown record spacing"):
        record_schedule(10, 5, spacing="cubic")


def test_mixed_step_counts_record_and_finish_correctly(problems, W0) -> None:
    res = run_paths(
        problems,
        data_index=[0, 1, 2, 3],
        p=["2", "2", "3", "3"],
        lr=[0.1] * 4,
        steps=[5, 17, 0, 9],
        W0=W0,
        records=6,
    )
    assert list(res.stop_step) == [5, 17, 0, 9]
    assert set(res.status) == {"ok"}
    for b, K in enumerate([5, 17, 0, 9]):
        steps = res.record_steps[b][res.record_steps[b] >= 0]
        assert steps[0] == 0 and steps[-1] == K
        assert np.array_equal(res.W[b][len(steps) - 1], res.W_final[b])
        assert np.all(np.isfinite(res.loss[b][: len(steps)]))
    assert np.array_equal(res.W_final[2], W0[2])  # zero steps: the initialization
    # norms are the entrywise p-norms of the recorded iterates
    b = 3
    m = res.record_steps[b] >= 0
    assert np.allclose(
        res.norm_p[b][m], np.sum(np.abs(res.W[b][m]) ** 3, axis=(1, 2)) ** (1 / 3), rtol=1e-13
    )
    assert res.final_alpha().shape == (4, 6)


def test_p11_runs_its_whole_horizon_with_normalized_steps(problems, W0) -> None:
    res = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["1.1", "1.1"],
        lr=[0.1, 0.1],
        steps=[300, 300],
        W0=W0[:2],
        normalize=True,
        records=10,
    )
    assert list(res.status) == ["ok", "ok"] and np.all(np.isfinite(res.W_final))
    assert any("rounds to 1.0" in note for note in res.notes)


def test_nonfinite_stops_that_trajectory_only(problems, W0) -> None:
    """A step whose iterate overflows float64 stops its trajectory with a flag; the others run on."""
    res = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["1.1", "2"],
        lr=[1e40, 0.1],
        steps=[20, 20],
        W0=W0[:2],
        records=6,
        check_every=3,
    )
    assert res.status[0] == TrajectoryStatus.NONFINITE.value and res.stop_step[0] < 20
    assert res.status[1] == "ok" and res.stop_step[1] == 20
    ref = run_paths(
        problems[1:2], data_index=[0], p=["2"], lr=[0.1], steps=[20], W0=W0[1:2], records=6
    )
    assert np.allclose(res.W_final[1], ref.W_final[0], rtol=1e-12, atol=1e-15)
    steps0 = res.record_steps[0][res.record_steps[0] >= 0]
    assert steps0[-1] == res.stop_step[0]
    assert any("non-finite" in n for n in res.notes)


def test_zero_gradient_stops_normalized_run() -> None:
    pr = synthetic_problem(seed=0)
    from certify import AttentionProblem

    flat = AttentionProblem(pr.X, pr.y, pr.z, np.zeros(pr.d))  # v = 0: the loss is constant
    W0 = np.ones((1, pr.d, pr.d))
    res = run_paths(
        [flat], data_index=[0], p=["3"], lr=[0.1], steps=[10], W0=W0, normalize=True, records=4
    )
    assert res.status[0] == TrajectoryStatus.ZERO_GRADIENT.value and res.stop_step[0] == 0
    assert np.array_equal(res.W_final[0], W0[0])
    plain = run_paths([flat], data_index=[0], p=["3"], lr=[0.1], steps=[10], W0=W0, records=4)
    assert plain.status[0] == "ok"  # a plain step of 0 is just a stall


def test_trainable_decoder_p2_equals_joint_sgd(problems, W0) -> None:
    K = 20
    res = run_paths(
        problems[:1],
        data_index=[0],
        p=["2"],
        lr=[0.2],
        steps=[K],
        W0=W0[:1],
        train_decoder=True,
        decoder_lr=0.05,
        records=K + 1,
    )
    pr = problems[0]
    X, y, z, v0 = (torch.tensor(getattr(pr, k)) for k in ("X", "y", "z", "v"))
    W = torch.nn.Parameter(torch.tensor(W0[0]))
    v = torch.nn.Parameter(v0.clone())
    opt = torch.optim.SGD([{"params": [W], "lr": 0.2}, {"params": [v], "lr": 0.05}])
    for _ in range(K):
        opt.zero_grad()
        _autograd_loss(W, v, X, y, z).backward()
        opt.step()
    assert np.allclose(res.W_final[0], W.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert np.allclose(res.v_final[0], v.detach().numpy(), rtol=1e-12, atol=1e-14)
    last = int(np.sum(res.record_steps[0] >= 0)) - 1
    assert res.record_steps[0, last] == K
    assert res.v is not None and np.allclose(
        res.v[0, last], v.detach().numpy(), rtol=1e-12, atol=1e-14
    )


def test_float32_runs(problems, W0) -> None:
    res = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["3", "3"],
        lr=[0.1] * 2,
        steps=[20] * 2,
        W0=W0[:2],
        normalize=True,
        dtype="float32",
        records=5,
    )
    ref = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["3", "3"],
        lr=[0.1] * 2,
        steps=[20] * 2,
        W0=W0[:2],
        normalize=True,
        records=5,
    )
    assert res.dtype == "float32"
    assert np.allclose(res.W_final, ref.W_final, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------- Bregman
def test_directional_bregman_zero_on_the_reference_direction_and_matches_lp() -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((2, 4, 4))
    W = np.stack(
        [
            np.stack([3.0 * ref[0], ref[0] + 0.1 * rng.standard_normal((4, 4))]),
            np.stack([ref[1] * 0.5, np.full((4, 4), np.nan)]),
        ]
    )
    rs = np.array([[0, 1], [0, -1]])
    D = directional_bregman(W, rs, ref, ["7/4", "3"])
    assert D[0, 0] == pytest.approx(0.0, abs=1e-15) and D[1, 0] == pytest.approx(0.0, abs=1e-15)
    expect = bregman(lp_normalize(ref[0], "7/4"), lp_normalize(W[0, 1], "7/4"), "7/4")
    assert D[0, 1] == pytest.approx(expect, rel=1e-14) and D[0, 1] > 0
    assert np.isnan(D[1, 1])
    D2 = directional_bregman(W, rs, np.full_like(ref, np.nan), ["7/4", "3"])  # infeasible reference
    assert np.all(np.isnan(D2))


# ---------------------------------------------------------------------------------------------- bad input
BAD = [
    (dict(p=["1"]), r"p > 1"),
    (dict(p=["0.5"]), r"p > 1"),
    (dict(p=["abc"]), r"invalid p"),
    (dict(lr=[0.1, 0.2]), r"length 1"),
    (dict(steps=[10, 10]), r"length 1"),
    (dict(lr=[0.0]), r"step sizes"),
    (dict(lr=[float("nan")]), r"step sizes"),
    (dict(steps=[-1]), r"step counts"),
    (dict(data_index=[5]), r"out of range"),
    (dict(W0=np.zeros((1, 3, 3))), r"W0 must have shape"),
    (dict(W0=np.full((1, 10, 10), np.nan)), r"NaN"),
    (dict(device="tpu"), r"unknown device"),
    (dict(dtype="float16"), r"unsupported dtype"),
    (dict(records=1), r"records"),
    (dict(p=[]), r"no trajectories"),
]


@pytest.mark.parametrize("change, pattern", BAD)
def test_bad_configurations_raise_one_clear_error(problems, change, pattern) -> None:
    kw = dict(data_index=[0], p=["2"], lr=[0.1], steps=[5], W0=np.zeros((1, 10, 10)))
    kw.update(change)
    if "p" in change and not change["p"]:
        kw.update(data_index=[], lr=[], steps=[], W0=np.zeros((0, 10, 10)))
    with pytest.raises(MdcertError, match=pattern):
        run_paths(problems, **kw)


def test_cuda_without_cuda_is_an_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(MdcertError, match="CUDA is not available"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


def test_mismatched_dataset_shapes_rejected() -> None:
    with pytest.raises(MdcertError, match="same"):
        run_paths(
            [synthetic_problem(seed=0), synthetic_problem(n=3, seed=1)],
            data_index=[0],
            p=["2"],
            lr=[0.1],
            steps=[1],
            W0=np.zeros((1, 10, 10)),
        )


@pytest.mark.gpu
def test_cpu_equals_cuda(problems, W0) -> None:
    kw = dict(
        data_index=[0, 1, 2, 3],
        p=["1.75", "2", "3", "3"],
        lr=[0.1] * 4,
        steps=[200, 200, 300, 50],
        W0=W0,
        normalize=True,
        records=16,
    )
    cpu = run_paths(problems, device="cpu", **kw)
    gpu = run_paths(problems, device="cuda", **kw)
    assert gpu.device.startswith("cuda")
    assert np.array_equal(cpu.record_steps, gpu.record_steps)
    assert np.allclose(cpu.W, gpu.W, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_progress_bar_goes_to_stderr(problems, W0, capsys) -> None:
    run_paths(problems[:1], data_index=[0], p=["2"], lr=[0.1], steps=[5], W0=W0[:1], progress=True)
    err = capsys.readouterr().err
    assert "paths: training" in err and "5/5" in err and " active" in err
    run_paths(
        problems[:1], data_index=[0], p=["2"], lr=[0.1], steps=[5], W0=W0[:1]
    )  # not a TTY: silent
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("normalize, train_decoder", [(True, False), (False, False), (True, True)])
def test_one_group_with_per_row_exponents_equals_groups_by_p(
    problems, W0, normalize, train_decoder
) -> None:
    """group_by_p=False (the CUDA default: one program, exponent tensors) == one group per p."""
    kw = dict(
        data_index=[0, 1, 2, 3],
        p=["1.75", "2", "3", "1.1"],
        lr=[0.1] * 4,
        steps=[40, 25, 40, 10],
        W0=W0,
        normalize=normalize,
        train_decoder=train_decoder,
        decoder_lr=0.05,
        records=8,
    )
    a = run_paths(problems, group_by_p=True, **kw)
    b = run_paths(problems, group_by_p=False, **kw)
    assert np.array_equal(a.record_steps, b.record_steps) and list(a.status) == list(b.status)
    assert np.allclose(a.W, b.W, rtol=1e-12, atol=1e-14, equal_nan=True)
    assert np.allclose(a.norm_p, b.norm_p, rtol=1e-12, equal_nan=True)
    if train_decoder:
        assert np.allclose(a.v_final, b.v_final, rtol=1e-12, atol=1e-14)


def test_mixed_group_falls_back_to_scalar_exponents_after_compaction(problems, W0) -> None:
    kw = dict(
        data_index=[0, 1, 2],
        p=["2", "3", "3"],
        lr=[0.1] * 3,
        steps=[5, 30, 30],
        W0=W0[:3],
        normalize=True,
        records=6,
    )
    a = run_paths(problems, group_by_p=True, **kw)
    b = run_paths(problems, group_by_p=False, **kw)
    assert np.allclose(a.W_final, b.W_final, rtol=1e-12, atol=1e-14)
    assert list(b.stop_step) == [5, 30, 30]


def test_float32_saturated_p11_keeps_a_gradient(problems, W0) -> None:
    """float32 underflows at e^-103: the e^M scaling switches on earlier there (no false zero_gradient stop)."""
    res = run_paths(
        problems[:2],
        data_index=[0, 1],
        p=["1.1", "1.1"],
        lr=[0.1] * 2,
        steps=[200] * 2,
        W0=W0[:2],
        normalize=True,
        dtype="float32",
        records=5,
    )
    assert list(res.status) == ["ok", "ok"] and np.all(np.isfinite(res.W_final))


# ---------------------------------------------------------------------------------------------- padding
def _variable_problem(seed: int, L=(8, 5, 3, 8, 2, 6)):
    from certify import AttentionProblem

    base = synthetic_problem(seed=seed)
    L = np.asarray(L)
    X = np.where(np.arange(8)[None, :, None] < L[:, None, None], base.X, 0.0)
    return AttentionProblem(X, base.y, base.z, base.v, lengths=L)


def test_full_length_lengths_give_bitwise_identical_paths(problems, W0) -> None:
    from certify import AttentionProblem

    same = [AttentionProblem(pr.X, pr.y, pr.z, pr.v, lengths=[pr.T] * pr.n) for pr in problems]
    kw = dict(
        data_index=range(4),
        p=["1.75", "2", "3", "1.75"],
        lr=[0.1] * 4,
        steps=[200] * 4,
        W0=W0,
        normalize=True,
    )
    a, b = run_paths(problems, **kw), run_paths(same, **kw)
    assert np.array_equal(a.W, b.W, equal_nan=True) and np.array_equal(a.W_final, b.W_final)
    assert np.array_equal(a.attention_final, b.attention_final)


@pytest.mark.parametrize("normalize", [True, False])
def test_padded_twin_gives_the_same_paths(W0, normalize) -> None:
    """More zero padding (and a variable-length problem) changes a path by rounding at most, also past
    saturation; the padding never gets attention."""
    probs = [synthetic_problem(seed=0), _variable_problem(1)]
    twins = [pr.padded(11) for pr in probs]
    kw = dict(
        data_index=[0, 1, 1],
        p=["2", "1.75", "3"],
        lr=[0.1] * 3,
        steps=[600] * 3,
        W0=W0[:3],
        normalize=normalize,
    )  # normalized: p = 1.75 saturates at step 440
    a, b = run_paths(probs, **kw), run_paths(twins, **kw)
    np.testing.assert_allclose(
        b.W_final, a.W_final, rtol=1e-12, atol=1e-12 * np.abs(a.W_final).max()
    )
    assert np.array_equal(a.status, b.status)
    assert np.all(b.attention_final[:, :, 8:] == 0)
    mask = probs[1].token_mask
    assert np.all(a.attention_final[1:][:, ~mask] == 0) and np.all(
        a.final_alpha()[1:] < probs[1].valid_lengths
    )


@pytest.mark.parametrize("scale", [1.0, 30.0, 3000.0])  # min top-vs-runner-up gaps 0.05, 1.6, 160
def test_padded_gradient_is_the_mean_of_the_unpadded_examples(scale) -> None:
    """loss_and_grad of a variable-length problem equals the mean over its examples, each run alone without
    padding (loss_and_grad runs the e^M-scaled kernel: -inf padding there too)."""
    from certify import AttentionProblem
    from experiments.paths.kernels import loss_and_grad

    pr = _variable_problem(2)
    W = torch.tensor(np.random.default_rng(3).standard_normal((1, 10, 10)) * scale)

    def t(a):
        return torch.tensor(np.asarray(a))[None]

    L, G, Gv, a = loss_and_grad(W, t(pr.X), t(pr.y), t(pr.z), t(pr.v), mask=t(pr.token_mask))
    assert torch.all(a[0][~torch.tensor(pr.token_mask)] == 0) and torch.isfinite(G).all()
    Ls, Gs, Gvs = [], [], []
    for i in range(pr.n):
        k = int(pr.lengths[i])
        one = AttentionProblem(pr.X[i : i + 1, :k], pr.y[i : i + 1], pr.z[i : i + 1], pr.v)
        Li, Gi, Gvi, _ = loss_and_grad(W, t(one.X), t(one.y), t(one.z), t(one.v))
        Ls.append(Li)
        Gs.append(Gi)
        Gvs.append(Gvi)
    torch.testing.assert_close(L, sum(Ls) / pr.n, rtol=1e-14, atol=0)
    torch.testing.assert_close(Gv, sum(Gvs) / pr.n, rtol=1e-12, atol=1e-300)
    torch.testing.assert_close(G, sum(Gs) / pr.n, rtol=1e-12, atol=0)
    assert bool(a.max() == 1.0) == (
        scale > 100
    )  # saturated in float64 (top weight 1.0) at scale 3000
