"""The batched training loop of the engine (docs/theory.md section 2): steps every group, retires finished and
stopped trajectories (compacting their groups), records at the scheduled steps (`Recorder`) and shows
a progress bar on stderr."""

from __future__ import annotations

import time

import numpy as np
import torch

from experiments.paths.group import PathGroup
from experiments.paths.kernels import lp_norms, mean_loss, select_rows
from experiments.paths.result import PathResult, TrajectoryStatus

__all__ = ["Recorder", "progress_printer", "run_loop"]


def progress_printer(enabled: bool, total: int):
    """``show(k, active, final=False)``: the training progress (step k of ``total``, active
    trajectories, ETA) through the shared bar of `experiments.runtime.progress` (drawn only when enabled)."""
    from experiments.runtime.progress import progress

    bar = progress(total, desc="paths: training", unit="step", enabled=bool(enabled))
    state = {"last": 0.0}

    def show(k: int, active: int, final: bool = False) -> None:
        if not bar.enabled:
            return
        now = time.perf_counter()
        if not final and now - state["last"] < 0.25:
            return
        state["last"] = now
        bar.set(k)
        bar.stage(f"{active} active", force=final)
        if final:
            bar.close()

    return show


class Recorder:
    """Host-side arrays of the recorded quantities."""

    def __init__(self, B, R, n, T, d, train_decoder, on_finish=None):
        self.on_finish = on_finish
        self.rec_steps = np.full((B, R), -1, dtype=np.int64)
        self.W = np.full((B, R, d, d), np.nan)
        self.v = np.full((B, R, d), np.nan) if train_decoder else None
        self.loss = np.full((B, R), np.nan)
        self.norm = np.full((B, R), np.nan)
        self.top = np.full((B, R, n), np.nan)
        self.W_final = np.full((B, d, d), np.nan)
        self.v_final = np.full((B, d), np.nan)
        self.att_final = np.full((B, n, T), np.nan)
        self.status = np.array([TrajectoryStatus.OK.value] * B, dtype=object)
        self.stop_step = np.zeros(B, dtype=np.int64)
        self.sat_step = np.full(B, -1, dtype=np.int64)

    def take(
        self, g: PathGroup, rows: torch.Tensor, gids: np.ndarray, slots: np.ndarray, fw, k
    ) -> None:
        a, f = fw[0], fw[1]
        Wk = g.W.index_select(0, rows)
        norm = lp_norms(Wk, g.p_rows(rows), (1, 2))
        ls = mean_loss(f.index_select(0, rows), g.y.index_select(0, rows))
        top = a.index_select(0, rows).amax(dim=-1)
        Wn, nn_, ln, tn = (x.detach().cpu().numpy().astype(np.float64) for x in (Wk, norm, ls, top))
        self.W[gids, slots] = Wn
        self.norm[gids, slots] = nn_
        self.loss[gids, slots] = ln
        self.top[gids, slots] = tn
        self.rec_steps[gids, slots] = k
        if self.v is not None:
            self.v[gids, slots] = g.v.index_select(0, rows).cpu().numpy()
        sat = np.any(tn == 1.0, axis=-1) & (self.sat_step[gids] < 0)
        self.sat_step[gids[sat]] = np.broadcast_to(k, gids.shape)[sat]

    def finish(
        self,
        g: PathGroup,
        rows: torch.Tensor,
        gids: np.ndarray,
        fw,
        steps_taken: np.ndarray,
        status,
    ) -> None:
        a = fw[0]
        self.W_final[gids] = g.W.index_select(0, rows).cpu().numpy()
        self.v_final[gids] = g.v.index_select(0, rows).cpu().numpy()
        self.att_final[gids] = a.index_select(0, rows).cpu().numpy()
        self.stop_step[gids] = steps_taken
        self.status[gids] = status
        if self.on_finish is not None:
            self.on_finish(gids.copy(), self.W_final[gids], self.att_final[gids])


def run_loop(
    groups, rec, rec_at, scheds, st_a, dev, dt, check_every, progress, ps, lr_a, di, normalize
) -> PathResult:
    K_max = int(st_a.max())
    show = progress_printer(bool(progress), K_max)
    t0 = time.perf_counter()
    k = 0
    active = groups
    while active:
        still = []
        for g in active:
            fw = g.forward()
            ends = st_a[g.gids] == k
            if k % check_every == 0 or k in rec_at or ends.any():
                alive = g.alive.cpu().numpy()
                if not alive.all():  # retire stopped rows at their frozen iterate
                    dead = ~alive
                    rows = torch.as_tensor(np.flatnonzero(dead), device=dev)
                    gids = g.gids[dead]
                    taken = g.count.index_select(0, rows).cpu().numpy()
                    why = g.stop_reason(select_rows(fw, rows), rows)
                    slots = np.array(
                        [
                            int(np.searchsorted(scheds[int(st_a[b])], taken[j], side="left"))
                            for j, b in enumerate(gids)
                        ]
                    )
                    for j, b in enumerate(gids):  # schedule entries after the stop are dropped
                        rec.rec_steps[b, slots[j] :] = -1
                    rec.take(g, rows, gids, slots, fw, taken)
                    rec.finish(g, rows, gids, fw, taken, why)
                    if dead.all():
                        continue
                    idx = g.keep(alive)
                    fw, ends = select_rows(fw, idx), ends[alive]
                want = rec_at.get(k)
                if want:
                    pos = {int(b): i for i, b in enumerate(g.gids)}
                    sel = [(b, s) for b, s in want if b in pos]
                    if sel:
                        gids = np.array([b for b, _ in sel])
                        slots = np.array([s for _, s in sel])
                        rows = torch.as_tensor([pos[b] for b in gids], device=dev)
                        rec.take(g, rows, gids, slots, fw, k)
                if ends.any():
                    rows = torch.as_tensor(np.flatnonzero(ends), device=dev)
                    gids = g.gids[ends]
                    rec.finish(g, rows, gids, fw, np.full(len(gids), k), TrajectoryStatus.OK.value)
                    if ends.all():
                        continue
                    fw = select_rows(fw, g.keep(~ends))
            g.step(fw, k)
            still.append(g)
        active = still
        show(k, sum(len(g.gids) for g in active))
        k += 1
    show(K_max, 0, final=True)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elapsed = time.perf_counter() - t0
    res = PathResult(
        p=ps,
        lr=lr_a,
        steps=st_a,
        data_index=di,
        normalize=bool(normalize),
        record_steps=rec.rec_steps,
        W=rec.W,
        v=rec.v,
        loss=rec.loss,
        norm_p=rec.norm,
        top_attention=rec.top,
        W_final=rec.W_final,
        v_final=rec.v_final,
        attention_final=rec.att_final,
        status=rec.status.astype(str),
        stop_step=rec.stop_step,
        saturated_step=rec.sat_step,
        device=str(dev),
        dtype=str(dt).replace("torch.", ""),
        elapsed_s=elapsed,
    )
    object.__setattr__(res, "notes", tuple(res.limit_messages()))
    return res
