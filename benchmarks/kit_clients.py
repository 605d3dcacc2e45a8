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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("smd_opt", help="path of the client's SMD_opt.py")
    ap.add_argument("--examples", type=int, default=25)
    args = ap.parse_args()
    import torch

    from experiments.testing import run_kit

    SMD_qnorm = load(args.smd_opt).SMD_qnorm
    print(f"load average at start: {os.getloadavg()}")
    adapters = {
        "SMD_qnorm(params, lr=lr, q=p)": (lambda params, lr, p: SMD_qnorm(params, lr=lr, q=float(p)), {}),
        "SMD_qnorm with momentum=0.9 (accepted, then ignored?)":
            (lambda params, lr, p: SMD_qnorm(params, lr=lr, q=float(p), momentum=0.9), {"properties": ("stationarity",)}),
    }
    for name, (factory, extra) in adapters.items():
        t0 = time.perf_counter()
        report = run_kit(factory, kind="optimizer", dtypes=(torch.float64, torch.float32),
                         max_examples=args.examples, **extra)
        print(f"== {name} ({time.perf_counter() - t0:.1f} s wall)")
        print(report.format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
