"""``mdcert regpath``'s result: `Result` (``summary.json`` and ``path.npz``, written as one run
directory; the terminal summary), `token_notes` and summary.json's `DEFINITIONS`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from experiments.commands.regpath.options import KIND

__all__ = ["DEFINITIONS", "Result", "token_notes"]


def _num(x) -> str:
    return f"{x:.3e}" if isinstance(x, (int, float)) else str(x)


def _ranges(values: list[float]) -> str:
    more = f" and {len(values) - 6} more" if len(values) > 6 else ""
    return ", ".join(f"{x:g}" for x in values[:6]) + more


def token_notes(summary: dict) -> list[str]:
    """Lines saying where the paths select other tokens than the reference SVM's alpha (softmax
    argmax): there the divergence to the SVM of alpha does not measure convergence (Theorem 31 for
    joint runs)."""
    alpha = [int(a) for a in summary.get("alpha") or []]
    out = []
    other = [
        (r["R"], r["selected_tokens"])
        for r in summary.get("path", [])
        if r.get("selected_tokens") is not None and [int(t) for t in r["selected_tokens"]] != alpha
    ]
    if alpha and other:
        kinds = sorted({tuple(t) for _, t in other})
        joint = any("bregman_to_selected_svm" in r for r in summary["path"])
        n = len(summary["path"])
        where = (
            f"at every R ({_ranges([other[0][0]])} to {_ranges([other[-1][0]])})"
            if len(other) == n > 1
            else f"at R = {_ranges([R for R, _ in other])}"
        )
        selected = ", ".join(str(list(k)) for k in kinds[:3])
        out.append(
            f"note: {where} the path selects tokens {selected} instead of the SVM's alpha = "
            f"{alpha}; D_W there compares with the SVM of alpha"
            + (
                " (bregman_to_selected_svm in summary.json: with the SVM of the selected tokens)"
                if joint
                else ""
            )
        )
    md = summary.get("joint_md")
    if alpha and md and md.get("records"):
        last = md["records"][-1]
        sel = [int(t) for t in last.get("selected_tokens") or []]
        if sel and sel != alpha:
            ex = [i for i, (a, s) in enumerate(zip(alpha, sel)) if a != s]
            out.append(
                f"note: joint mirror descent ends on tokens {sel}, not the SVM's alpha = "
                f"{alpha} (examples {ex[:6]}): it converges toward the SVMs of its own "
                f"tokens (D_W = "
                f"{_num(last.get('bregman_W_to_selected_svm'))}, D_v = "
                f"{_num(last.get('bregman_v_to_selected_svm'))}), not those of alpha (D_W = "
                f"{_num(last.get('bregman_W'))}, D_v = {_num(last.get('bregman_v'))})"
            )
    return out


#: summary.json's "definitions"
DEFINITIONS = {
    "bregman_to_svm": "D_psi(Wbar_mm, W(R)/||W(R)||_p), reference first, vs the certified "
    "attention SVM of alpha (40-digit evaluation; a measurement, not a certified "
    "bound)",
    "bregman_v_to_svm": "D_psi(vbar_mm, v/||v||_p) vs the certified decoder SVM of alpha (joint "
    "runs)",
    "stationarity": "(R||g||_q + <g, W>) / (R||g||_q): relative first-order gap on the l_p ball "
    "(joint: max over the W and v blocks); 0 at a KKT point",
    "log_excess_loss": "log(L(W) - L_*), L_* = mean_i l(gamma_i,opt), computed in log domain",
    "selected_tokens": "softmax argmax per example",
    "starts": "random-k chains (seeded, warm-started along R), svm and uniform-dual restarts at "
    "every R, previous-best warm start; log_excess_gap = gap to the winner in log E "
    "(joint: log L)",
}


@dataclass(frozen=True, kw_only=True, eq=False)
class Result:
    """A computed regularization path, not yet written.

    Attributes:
        summary: the content of ``summary.json``.
        arrays: the content of ``path.npz`` (radii, W; joint runs: v and r).
        output: the run directory the config names (the path `lines` reports).
        overwrite: whether `write` may replace a regpath run there.
        exit_code: 0 (a path has no verdict).
    """

    summary: dict
    arrays: dict
    output: Path
    overwrite: bool
    exit_code: int = 0

    def write(self, out: str | os.PathLike) -> None:
        """Write the run directory ``out`` (summary.json, path.npz and its marker): complete or
        nothing (`experiments.runtime.outputs.run_dir`)."""
        import numpy as np

        from certify.io.jsonenc import dumps
        from experiments.runtime.outputs import run_dir

        text = dumps(self.summary, indent=1)
        with run_dir(out, kind=KIND, overwrite=self.overwrite) as tmp:
            with open(tmp / "path.npz", "wb") as fh:
                np.savez(fh, **self.arrays)
            (tmp / "summary.json").write_text(text)

    def lines(self, width: int) -> list[str]:
        """The terminal summary: the joint mirror descent's end, notes (float64 limits, tokens other
        than alpha) and the decay of D from the first to the last radius (lines are not wrapped;
        ``width`` is the contract's)."""
        s, radii, out = self.summary, self.arrays["radii"], []
        md = s.get("joint_md")
        if md:
            last = md["records"][-1]
            out.append(
                f"joint mirror descent: {md['steps']} steps, final "
                f"D_W={_num(last['bregman_W'])} D_v={_num(last['bregman_v'])} "
                f"tokens={last['selected_tokens']}"
            )
        out += [
            f"note: float64 limits reached during the path ({note}); values at extreme radii "
            f"may be inaccurate"
            for note in s.get("float_limits", [])
        ]
        out += s["token_notes"]
        d = s["decay"]
        out.append(
            f"wrote {self.output / 'summary.json'}: D(R={radii[0]:g}) = "
            f"{d['bregman_first']:.3e}, D(R={radii[-1]:g}) = {d['bregman_last']:.3e}, "
            f"ratio {d['ratio_first_over_last']:.3g}"
        )
        return out
