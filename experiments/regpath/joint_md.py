"""Joint mirror descent on attention W and decoder v (docs/theory.md sections 2, 5; Theorem 31).

Both W and v are trained by `experiments.optim.optimizer.LpMirrorDescent` with normalized gradients
(``G / ||G||_q`` per parameter) from ``W(0) = 0, v(0) = 0``. The gradients are computed in
log-domain scaled form (`experiments.regpath.joint_objective.JointObjective.scaled_gradients`; only their
direction matters for a normalized step), so nothing underflows when the softmax saturates. At
``v = 0`` every token value is 0 and the W-gradient is exactly zero: that step moves only v
(recorded as a skipped W step, never a division by a zero norm). Records at log-spaced steps hold
the directional Bregman divergences to the certified attention / decoder SVMs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p
from experiments.regpath.joint import joint_references
from experiments.regpath.joint_objective import JointObjective
from experiments.regpath.results import json_number
from experiments.regpath.sphere import lp_norm_rows
from experiments.regpath.svm_reference import Reference, bregman_directional

__all__ = ["JointMDPath", "joint_md_path"]


@dataclass(frozen=True)
class JointMDPath:
    """The joint mirror-descent trajectory (records at log-spaced steps)."""

    p: Fraction
    lr: float
    steps: int
    records: tuple[dict, ...]
    skipped_W: tuple[int, ...]
    skipped_v: tuple[int, ...]
    elapsed_s: float

    def to_json(self) -> dict:
        return {
            "p": format_fraction(self.p),
            "p_float": float(self.p),
            "lr": self.lr,
            "steps": self.steps,
            "normalized": True,
            "init": "W(0) = 0, v(0) = 0",
            "skipped_W_steps": list(self.skipped_W),
            "skipped_v_steps": list(self.skipped_v),
            "skip_rule": "a parameter whose gradient is exactly zero is not stepped (no division by a zero norm)",
            "elapsed_s": self.elapsed_s,
            "records": list(self.records),
        }


def joint_md_path(
    problem,
    p,
    *,
    steps: int = 2000,
    lr: float = 0.1,
    alpha=None,
    reference: Reference | None = None,
    v_reference: Reference | None = None,
    loss: str = "logistic",
    records: int = 40,
    digits: int = 30,
    progress=None,
) -> JointMDPath:
    """Joint mirror descent on (W, v) from zero with normalized steps (`LpMirrorDescent`, docs/theory.md section 2).

    Args:
        problem: data; p: exponent; steps: iterations; lr: step size (per parameter, normalized).
        alpha: reference tokens (default: problem.alpha, else optimal).
        reference, v_reference: certified SVM references (default: certify_svm).
        records: number of log-spaced steps recorded.
        progress: optional callable ``progress(k)`` told the steps done (every 256 steps and at the end).
    """
    import torch

    from certify.problem import resolve_alpha
    from experiments.optim.optimizer import LpMirrorDescent

    t0 = time.perf_counter()
    p = parse_p(p)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise MdcertError(f"invalid steps {steps!r}; need an integer >= 1")
    alpha = resolve_alpha(problem, alpha)
    reference, v_reference, refs = joint_references(
        problem, p, alpha, reference, v_reference, digits
    )
    obj = JointObjective(problem.X, problem.y, problem.z, loss=loss, mask=problem.token_mask)
    d = problem.d
    W = torch.zeros(d, d, dtype=torch.float64, requires_grad=True)
    v = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    opt = LpMirrorDescent([W, v], lr=lr, p=p, normalize_gradient=True)
    marks = set(np.unique(np.round(np.geomspace(1, steps, records)).astype(int)).tolist()) | {steps}
    out, skipped_W, skipped_v = [], [], []
    pf = float(p)
    for k in range(1, steps + 1):
        GW, Gv = obj.scaled_gradients(W.detach().numpy(), v.detach().numpy())
        zW, zv = not np.any(GW), not np.any(Gv)
        if zW:
            skipped_W.append(k)
        if zv:
            skipped_v.append(k)
        W.grad = None if zW else torch.from_numpy(np.ascontiguousarray(GW))
        v.grad = None if zv else torch.from_numpy(np.ascontiguousarray(Gv))
        opt.step()
        if k in marks:
            Wn, vn = W.detach().numpy().ravel().copy(), v.detach().numpy().copy()
            rec = {
                "step": k,
                "norm_W": float(lp_norm_rows(Wn[None, :], pf)[0]),
                "norm_v": float(lp_norm_rows(vn[None, :], pf)[0]),
                "bregman_W": json_number(bregman_directional(reference, Wn, p))
                if np.any(Wn)
                else None,
                "bregman_v": json_number(bregman_directional(v_reference, vn, p))
                if np.any(vn)
                else None,
                "log_loss": json_number(obj.log_loss(Wn, vn)),
                "selected_tokens": [int(t) for t in np.argmax(obj.log_softmax(Wn), axis=1)],
            }
            rec["bregman_W_to_selected_svm"] = json_number(
                refs.bregman("attention", rec["selected_tokens"], Wn)
            )
            rec["bregman_v_to_selected_svm"] = json_number(
                refs.bregman("decoder", rec["selected_tokens"], vn)
            )
            out.append(rec)
        if progress is not None and (k % 256 == 0 or k == steps):
            progress(k)
    return JointMDPath(
        p,
        float(lr),
        int(steps),
        tuple(out),
        tuple(skipped_W),
        tuple(skipped_v),
        time.perf_counter() - t0,
    )
