"""The training path that ``mdcert check --init W0.npy --lr ETA`` checks: mirror descent on W with
the problem's fixed decoder (`experiments.optim.optimizer.LpMirrorDescent` on `experiments.model`),
constant or normalized steps (docs/theory.md section 2.3), every iterate recorded in float64."""

from __future__ import annotations

__all__ = ["load_init", "run_path", "train_path"]


def load_init(path: str, d: int):
    """The ``--init`` W0 (d, d): the validator ``mdcert paths --init`` uses
    (`certify.loaders.read_init`)."""
    from certify.loaders import read_init

    return read_init(path, d, stack=False)


def run_path(problem, W0, *, lr: float, p, steps: int, loss: str = "logistic", progress=None):
    """Mirror descent on W with the problem's fixed decoder (constant steps); returns every iterate,
    float64 (steps+1, d, d). ``progress(k)``, when given, is told the steps done (every 64 steps
    and at the end)."""
    return train_path(problem, W0, lr=lr, p=p, steps=steps, loss=loss, progress=progress)[0]


def train_path(
    problem,
    W0,
    *,
    lr: float,
    p,
    steps: int,
    loss: str = "logistic",
    normalize: bool = False,
    progress=None,
):
    """Mirror descent on W with the problem's fixed decoder, constant or normalized steps
    (docs/theory.md section 2.3). Returns ``(iterates (steps+1, d, d) float64, step sizes)``: the
    step sizes are None for constant steps, else the effective size of each step,
    ``lr/||G(W_k)||_q`` as the float64 the optimizer used (``lr`` where the gradient is exactly 0
    and no step is taken)."""
    import numpy as np
    import torch

    from certify.errors import MdcertError
    from experiments.model import AttentionModel, problem_tensors
    from experiments.optim.kernels import dual_norm
    from experiments.optim.optimizer import LpMirrorDescent

    data = problem_tensors(problem)
    W0 = torch.from_numpy(np.array(W0, dtype=np.float64))
    model = AttentionModel.from_problem(problem, W0=W0)
    opt = LpMirrorDescent([model.W], lr=lr, p=p, normalize_gradient=normalize)
    q = float(p / (p - 1)) if normalize else None
    etas = [] if normalize else None
    out = np.empty((steps + 1, problem.d, problem.d), dtype=np.float64)
    out[0] = model.W.detach().numpy()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: extra threads only add contention
    try:
        for k in range(steps):
            opt.zero_grad(set_to_none=True)
            value = model.loss(data.X, data.y, data.z, loss_fn=loss, mask=data.mask)
            value.backward()
            if normalize:
                norm = dual_norm(model.W.grad, q)
                etas.append(float(lr) / norm if norm > 0 else float(lr))
            opt.step()
            out[k + 1] = model.W.detach().numpy()
            if progress is not None and ((k + 1) % 64 == 0 or k + 1 == steps):
                progress(k + 1)
    finally:
        torch.set_num_threads(threads)
    if not np.all(np.isfinite(out)) or (etas is not None and not np.all(np.isfinite(etas))):
        raise MdcertError("the mirror-descent path produced non-finite iterates; lower --lr")
    return out, etas
