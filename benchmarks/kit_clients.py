"""Run the property-test kit on p-GD's authors' optimizer, as a user would (issue 23 item 6).

The client is `SMD_qnorm` from the public repository wuxishy/smd-generalization (`SMD_opt.py`; its q is
the paper's p). It is never copied into mdcert: pass the path of a checkout's SMD_opt.py, which is
imported from where it lies.

Usage: python benchmarks/kit_clients.py /path/to/smd-generalization/SMD_opt.py [--examples 25]
Prints one report per adapter (float64 and float32, every p regime).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time


def load(path: str):
    spec = importlib.util.spec_from_file_location("smd_client", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ignored_options(cls) -> list[str]:
    """Options the constructor accepts: does each change two steps with a constant gradient? (SGD's
    momentum, weight decay and dampening all do.) A user who passes them expects them to act."""
    import torch

    def two_steps(**kw):
        w = torch.tensor([0.7, -1.3], dtype=torch.float64, requires_grad=True)
        opt = cls([w], lr=0.05, q=1.5, **kw)
        for _ in range(2):
            w.grad = torch.tensor([0.4, -0.2], dtype=torch.float64)
            opt.step()
        return w.detach().clone()

    base = two_steps()
    out = []
    for kw in ({"momentum": 0.9}, {"weight_decay": 0.5}, {"momentum": 0.9, "dampening": 0.5}):
        same = torch.equal(two_steps(**kw), base)
        out.append(
            f"option {kw}: {'accepted and IGNORED (two steps identical to the default)' if same else 'acts'}"
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("smd_opt", help="path of the client's SMD_opt.py")
    ap.add_argument("--examples", type=int, default=25)
    args = ap.parse_args()
    import torch

    from experiments.testing import run_kit

    SMD_qnorm = load(args.smd_opt).SMD_qnorm
    print(f"load average at start: {os.getloadavg()}")
    for line in ignored_options(SMD_qnorm):
        print(line)
    adapters = {
        "SMD_qnorm(params, lr=lr, q=p)": (
            lambda params, lr, p: SMD_qnorm(params, lr=lr, q=float(p)),
            {},
        )
    }
    for name, (factory, extra) in adapters.items():
        t0 = time.perf_counter()
        report = run_kit(
            factory,
            kind="optimizer",
            dtypes=(torch.float64, torch.float32),
            max_examples=args.examples,
            **extra,
        )
        print(f"== {name} ({time.perf_counter() - t0:.1f} s wall)")
        print(report.format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
