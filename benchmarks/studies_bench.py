"""Training-step cost of the study models: LpMirrorDescent (p = 1.1, 2, 3) against Adam, side by side.

Usage:
    python benchmarks/studies_bench.py              # the default sentiment model and the issue's sizing model
    python benchmarks/studies_bench.py --quick      # fewer repeats
    python benchmarks/studies_bench.py --threads 2

Models: (a) the default `mdcert study sentiment` model (size 3, width 48, the corpus's 14,491-id
table) on real batches of 64 reviews (padded to the batch's longest); (b) the issue's sizing model:
3 blocks, width 96, batch 64 of length 48, once with the corpus's table and once with the full
30,522-row table (the dense embedding gradient and its optimizer work). One step = zero_grad,
forward, cross-entropy, backward and the optimizer step; the optimizer's share is the step's time
inside ``opt.step()``. Every optimizer has its own copy of the same model and the same batches;
rounds are interleaved (one step of each optimizer in turn) so background load hits all alike; the
median over rounds is reported with the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from torch.nn import functional as F

from experiments.studies.models import EncoderConfig, TextClassifier, Vocabulary
from experiments.studies.sentiment import load_sentiment
from experiments.studies.train import make_optimizer, parse_optimizer, set_determinism

OPTIMIZERS = ("adam", "1.1", "2", "3")


def bench(name: str, make_model, batches, repeats: int) -> list[dict]:
    rows = []
    setups = []
    for o in OPTIMIZERS:
        model = make_model()
        spec = parse_optimizer(o)
        opt = make_optimizer(spec, model.parameters(), 1e-3 if o == "adam" else 1e-2)
        setups.append((spec, model, opt, [], []))
    for r in range(repeats + 3):
        rows_b, mask, y = batches[r % len(batches)]
        for spec, model, opt, total, inner in setups:
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(rows_b, mask)[0], y)
            loss.backward()
            t1 = time.perf_counter()
            opt.step()
            t2 = time.perf_counter()
            if r >= 3:
                total.append(t2 - t0)
                inner.append(t2 - t1)
    adam = statistics.median(setups[0][3])
    for spec, model, opt, total, inner in setups:
        step, o = statistics.median(total), statistics.median(inner)
        rows.append(
            {
                "model": name,
                "optimizer": spec.label,
                "step_ms": 1e3 * step,
                "optimizer_ms": 1e3 * o,
                "optimizer_share": o / step,
                "vs_adam": step / adam,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    repeats = args.repeats or (10 if args.quick else 40)
    set_determinism(args.threads)
    print(f"threads {torch.get_num_threads()}, load before {os.getloadavg()}")
    task, vocab, train, _, _ = load_sentiment(128)
    g = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(8):
        idx = torch.as_tensor(train)[torch.randint(len(train), (64,), generator=g)]
        (rows, mask), y = task.batch(idx, torch.device("cpu"))
        batches.append((rows, mask, y))
    cfg = EncoderConfig(blocks=3, heads=3, width=48, max_len=128, dropout=0.1)
    out = bench(
        "default: size 3, width 48, corpus table",
        lambda: TextClassifier(cfg, vocab, seed=0),
        batches,
        repeats,
    )
    cfg96 = EncoderConfig(blocks=3, heads=3, width=96, max_len=128, dropout=0.1)
    full = Vocabulary.from_sequences([range(30522)])
    for label, v in (("corpus table (14,491 rows)", vocab), ("full table (30,522 rows)", full)):
        fixed = [
            (
                torch.randint(len(v), (64, 48), generator=g),
                torch.ones(64, 48, dtype=torch.bool),
                torch.randint(0, 2, (64,), generator=g),
            )
            for _ in range(4)
        ]
        out += bench(
            f"issue sizing: width 96, length 48, {label}",
            lambda v=v: TextClassifier(cfg96, v, seed=0),
            fixed,
            repeats,
        )
    print(f"load after {os.getloadavg()}")
    print("| model | optimizer | step ms | optimizer ms | optimizer share | step / Adam step |")
    print("|---|---|---|---|---|---|")
    for r in out:
        print(
            f"| {r['model']} | {r['optimizer']} | {r['step_ms']:.1f} | {r['optimizer_ms']:.1f} | "
            f"{100 * r['optimizer_share']:.0f}% | {r['vs_adam']:.2f} |"
        )


if __name__ == "__main__":
    main()
