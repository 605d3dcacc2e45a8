"""The kit's smoothed_sign property on torch.optim.Adam(betas=(0, 0), eps=eps), vectorized
(docs/theory.md section 8.7): per dtype and form (for-loop, foreach, fused), ``--n`` sampled
gradients of the safe band and ``--n-out`` outside it, compared bit for bit (and within 1 ulp)
with ``W + ((-lr) G) / (|G| + eps)``.

Usage:
    python benchmarks/kit_smoothed_sign.py          # 10^6 per dtype and form in the band, eps 1e-8
    python benchmarks/kit_smoothed_sign.py --quick  # 10^5
    python benchmarks/kit_smoothed_sign.py --eps 1e-3 --seed 1

Gradients are log-uniform over the band (binary exponent and mantissa bits uniform, random
signs), W is normal times 2^k (|k| <= 8), lr cycles through 1e-3, 0.1, 0.37, 1 per chunk of 2^18;
derandomized by ``--seed``. First line: how often ``torch.sqrt`` itself is not correctly rounded.
The wall time of each row (sampling, Adam, reference, comparison) is printed, with the load.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import numpy as np
import torch

from experiments.testing.sign import BANDS, sample_smoothed_sign

FORMS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def adam(params, lr, eps, **form):
    return torch.optim.Adam(params, lr=lr, betas=(0.0, 0.0), eps=eps, **form)


def sqrt_rounding(n: int, seed: int) -> str:
    """How often torch.sqrt is not correctly rounded on n random positive normal floats per dtype
    (numpy's IEEE square root, and float32 roots through float64, as references)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for dtype, emax in ((torch.float32, 120), (torch.float64, 1000)):
        x = torch.ldexp(
            1 + torch.rand(n, generator=gen, dtype=torch.float64),
            torch.randint(-emax, emax, (n,), generator=gen).double(),
        ).to(dtype)
        exact = (
            np.sqrt(x.double().numpy()).astype(np.float32)
            if dtype == torch.float32
            else np.sqrt(x.numpy())
        )
        got = torch.sqrt(x).numpy()
        ulps = np.abs(got.astype(np.float64) - exact.astype(np.float64)) / np.spacing(exact)
        out.append(
            f"{str(dtype).replace('torch.', '')}: {int((got != exact).sum())} of {n} "
            f"(max {float(ulps.max()):.0f} ulp)"
        )
    return "torch.sqrt not correctly rounded: " + "; ".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=10**6, help="gradients per dtype and form in the safe band"
    )
    ap.add_argument(
        "--n-out", type=int, default=10**5, help="gradients per dtype and form outside the band"
    )
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="10^5 in the band, 10^4 outside")
    a = ap.parse_args(argv)
    n, n_out = (10**5, 10**4) if a.quick else (a.n, a.n_out)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
        f"{torch.backends.cpu.get_cpu_capability()}, load {os.getloadavg()[0]:.2f}; "
        f"eps={a.eps}, seed {a.seed}"
    )
    print(sqrt_rounding(n, a.seed))
    print(
        "| dtype | form | band | gradients | mismatches (bit for bit) | > 1 ulp "
        "| not at a sqrt(g*g) != abs(g) | sqrt(g*g) != abs(g) | wall s | first mismatch |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for dtype in (torch.float64, torch.float32):
        for name, form in FORMS.items():
            for part, count in ((BANDS[0], n), (BANDS[1], n_out)):
                t = time.perf_counter()
                exact = sample_smoothed_sign(
                    partial(adam, **form),
                    kind="optimizer",
                    dtype=dtype,
                    n=count,
                    eps=a.eps,
                    part=part,
                    seed=a.seed,
                )
                wall = time.perf_counter() - t
                ulp1 = sample_smoothed_sign(
                    partial(adam, **form),
                    kind="optimizer",
                    dtype=dtype,
                    n=count,
                    eps=a.eps,
                    part=part,
                    seed=a.seed,
                    ulps=1,
                )
                print(
                    f"| {exact.dtype} | {name} | {part} | {exact.checked} | {exact.mismatches} "
                    f"| {ulp1.mismatches} | {exact.unexplained} | {exact.sqrt_inexact} "
                    f"| {wall:.1f} "
                    f"| {exact.first or '-'} |",
                    flush=True,
                )
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
