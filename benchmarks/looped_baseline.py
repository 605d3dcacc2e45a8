"""The straightforward baseline: one trajectory at a time, autograd every step, a host sync per step.

This is how the paper's code runs its synthetic study (one seed per process, an ``nn.Parameter``
``W``, ``loss.backward()``, a mirror step on the primal ``W`` (map, step, inverse map) and
``loss.item()`` every step for logging). It is written plainly - no deliberate slowdowns - and is
kept as the reference for `benchmarks/paths_bench.py` and for the equivalence tests of the batched
engine (`experiments.paths.engine`). Self-contained: it uses only torch and numpy.

Run directly for a smoke test: ``python benchmarks/looped_baseline.py``.
"""

from __future__ import annotations

import time

import numpy as np
import torch

__all__ = ["train_one", "train_one_module", "train_many"]


def _schedule(steps: int, records: int) -> set[int]:
    grid = np.unique(np.round(np.geomspace(1, max(steps, 1), num=records - 1)).astype(np.int64))
    return {0, *map(int, grid)} if steps > 0 else {0}


def train_one(
    X, y, z, v, W0, *, p: float, lr: float, steps: int, normalize: bool = False, records: int = 64
) -> dict:
    """Train one trajectory with the l_p mirror step; return recorded iterates and per-step losses.

    Args:
        X (n,T,d), y (n,), z (n,d), v (d,): one dataset (numpy float64).
        W0: (d, d) initialization. p, lr, steps: the run; normalize: G / ||G||_q.
        records: log-spaced recording points (same schedule as the batched engine).

    Returns:
        dict with ``steps`` (recorded step list), ``W`` (len, d, d), ``losses`` (every step), ``seconds``.
    """
    t0 = time.perf_counter()
    X, y, z, v = (torch.as_tensor(np.array(a), dtype=torch.float64) for a in (X, y, z, v))
    W = torch.nn.Parameter(torch.as_tensor(np.asarray(W0), dtype=torch.float64).clone())
    q = p / (p - 1.0)
    rec = _schedule(steps, records)
    out_steps, out_W, losses = [], [], []
    for k in range(steps + 1):
        if k in rec:
            out_steps.append(k)
            out_W.append(W.detach().clone().numpy())
        if k == steps:
            break
        scores = torch.softmax(torch.einsum("ntd,de,ne->nt", X, W, z), dim=-1)
        f = torch.einsum("nt,ntd,d->n", scores, X, v)
        loss = torch.nn.functional.softplus(-y * f).mean()
        loss.backward()
        losses.append(loss.item())  # per-step host sync, as the paper logs
        with torch.no_grad():
            G = W.grad
            if normalize:
                G = G / torch.linalg.vector_norm(G, ord=q)
            Q = torch.sign(W) * W.abs().pow(p - 1.0) - lr * G
            W.copy_(torch.sign(Q) * Q.abs().pow(1.0 / (p - 1.0)))
        W.grad = None
    return {
        "steps": out_steps,
        "W": np.stack(out_W),
        "losses": np.array(losses),
        "seconds": time.perf_counter() - t0,
    }


def train_one_module(
    problem, W0, *, p, lr: float, steps: int, normalize: bool = False, records: int = 64
) -> dict:
    """The same loop built from the project's standard pieces, as a user would write it:
    ``experiments.model.AttentionModel`` + ``experiments.optim.optimizer.LpMirrorDescent`` (a torch optimizer,
    like the paper's), ``loss.item()`` logged every step."""
    from experiments.model import AttentionModel
    from experiments.optim.optimizer import LpMirrorDescent

    t0 = time.perf_counter()
    X, y, z = (
        torch.as_tensor(np.array(a), dtype=torch.float64) for a in (problem.X, problem.y, problem.z)
    )
    model = AttentionModel.from_problem(problem, W0=torch.as_tensor(np.asarray(W0)))
    opt = LpMirrorDescent(model.parameters(), lr=lr, p=p, normalize_gradient=normalize)
    rec = _schedule(steps, records)
    out_steps, out_W, losses = [], [], []
    for k in range(steps + 1):
        if k in rec:
            out_steps.append(k)
            out_W.append(model.W.detach().clone().numpy())
        if k == steps:
            break
        opt.zero_grad()
        loss = model.loss(X, y, z)
        loss.backward()
        losses.append(loss.item())
        opt.step()
    return {
        "steps": out_steps,
        "W": np.stack(out_W),
        "losses": np.array(losses),
        "seconds": time.perf_counter() - t0,
    }


def train_many(
    problems,
    W0s,
    ps,
    lrs,
    steps,
    *,
    normalize: bool = False,
    records: int = 64,
    impl: str = "inline",
) -> list[dict]:
    """Loop over trajectories one at a time, as the paper's scripts do (``impl``: "inline" or "module")."""
    if impl == "module":
        return [
            train_one_module(
                pr, W0, p=str(p), lr=float(lr), steps=int(K), normalize=normalize, records=records
            )
            for pr, W0, p, lr, K in zip(problems, W0s, ps, lrs, steps)
        ]
    return [
        train_one(
            pr.X,
            pr.y,
            pr.z,
            pr.v,
            W0,
            p=float(p),
            lr=float(lr),
            steps=int(K),
            normalize=normalize,
            records=records,
        )
        for pr, W0, p, lr, K in zip(problems, W0s, ps, lrs, steps)
    ]


if __name__ == "__main__":  # pragma: no cover - smoke test
    from certify import synthetic_problem

    torch.set_num_threads(1)
    pr = synthetic_problem(seed=0)
    W0 = np.random.default_rng(0).standard_normal((pr.d, pr.d))
    r = train_one(pr.X, pr.y, pr.z, pr.v, W0, p=3.0, lr=0.1, steps=500, normalize=True)
    print(
        f"500 steps in {r['seconds']:.2f}s ({r['seconds'] / 500 * 1e6:.0f} us/step); final loss {r['losses'][-1]:.4f}"
    )
