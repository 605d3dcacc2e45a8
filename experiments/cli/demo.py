"""``mdcert demo``: the main job end to end on a built-in example (the paper-size synthetic problem).

Each stage runs the same code path as its own command (``synth``, ``certify``, ``verify``, ``check``,
``paths``, ``plot``), so the demo is also a smoke test of the whole toolkit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HELP = "run the main job on a built-in example: synthesize, certify, verify, check hypotheses, train, plot"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a short variant (fewer trials and steps; used by CI)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic problem (default 7)")
    parser.add_argument("--p", default="1.75", help="exponent of the certified SVM and the check (default 1.75)")
    parser.add_argument("-o", "--out", default=None,
                        help="keep every output in this new directory (default: a temporary directory, removed)")


def _stage(title: str, argv: list[str]) -> None:
    from experiments.cli.main import main

    print(f"\n== {title}\n$ mdcert {' '.join(argv)}", flush=True)
    rc = main(argv)
    # certify: 0 certified; check: 0 ran. Anything else stops the demo with that stage named.
    if rc != 0:
        raise RuntimeError(f"demo stage '{title}' exited with code {rc}")


def _near_svm_init(cert_path: str, out: Path, *, seed: int) -> str:
    """W(0) = 2 * (certified unit SVM direction) + small seeded noise, saved as .npy."""
    import json

    import numpy as np

    from certify import Certificate

    cert = Certificate.from_json(json.loads(Path(cert_path).read_text()))
    direction = cert.direction_float()
    noise = np.random.default_rng(seed).standard_normal(direction.shape)
    np.save(out, 2.0 * direction + 0.02 * noise)
    return str(out)


def run(args: argparse.Namespace) -> int:
    from certify.errors import MdcertError

    import shutil

    from certify.exact import parse_p
    from experiments.outputs import check_output_dir, check_seed

    from experiments.paths.config import check_float_p

    start = time.perf_counter()
    check_float_p(parse_p(args.p, name="--p"), str(args.p))  # the demo trains a float64 path at this p
    check_seed(args.seed)
    if args.out is not None:
        if not str(args.out).strip():
            raise MdcertError("-o is empty; give a new directory name")
        if Path(args.out).exists():
            raise MdcertError(f"output directory {args.out!r} already exists; choose a new one")
        check_output_dir(args.out, option="-o", overwrite=False)
    tmp = None
    if args.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="mdcert-demo-")
        out = Path(tmp.name)
    else:
        out = Path(args.out)
        out.mkdir(parents=True)
    completed = False
    try:
        problem = str(out / "problem.npz")
        cert = str(out / "cert.json")
        trials, steps = ("8", "300,300,1000") if args.quick else ("30", "1500,2000,5000")
        try:
            _stage("1. synthesize the paper-size problem (n=6, T=8, d=10)",
                   ["synth", "--seed", str(args.seed), "-o", problem])
            _stage(f"2. certify the l_p attention SVM of the globally optimal tokens (p = {args.p})",
                   ["certify", problem, "--p", args.p, "--alpha", "opt", "--digits", "60", "-o", cert])
            _stage("3. re-check the certificate independently from the data alone",
                   ["verify", problem, cert])
            init = _near_svm_init(cert, out / "W0.npy", seed=args.seed)
            _stage("4. check the hypotheses of Theorem 10 (local directional convergence) on an initialization\n"
                   "   near the certified SVM direction, along the mirror-descent path the command runs",
                   ["check", problem, "--p", args.p, "--theorem", "10", "--alpha", "opt", "--init", init,
                    "--lr", "0.1", "--mu", "0.1", "--R", "1", "--steps", "300" if args.quick else "2000"])
            _stage(f"5. batched mirror-descent paths ({trials} trials x p in 1.75, 2, 3; normalized steps, lr 0.1)",
                   ["paths", "--trials", trials, "--p", "1.75,2,3", "--steps", steps, "--lr", "0.1",
                    "--normalize", "--seed", str(args.seed), "--device", "cpu", "--progress", "off",
                    "-o", str(out / "paths")])
            _stage("6. figures", ["plot", str(out / "paths")])
        except RuntimeError as exc:
            print(f"mdcert demo: {exc}" + ("" if tmp is not None else f"; removed the partial {str(out)!r}"),
                  file=sys.stderr)
            return 1
        print(f"\ndemo finished in {time.perf_counter() - start:.1f} s"
              + (f"; outputs in {out}" if tmp is None else " (outputs were temporary; use -o DIR to keep them)"))
        completed = True
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()
        elif not completed:  # a failed or interrupted demo leaves no half-filled -o directory
            shutil.rmtree(out, ignore_errors=True)
