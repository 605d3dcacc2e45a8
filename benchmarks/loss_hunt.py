"""The loss predicate against generated expression trees with domain traps (issue 20).

Every tree (``tests/theorems/loss_trees.random_loss``: logs, roots, negative and fractional powers,
divisions, tan/asin/acos/acosh/atanh, Piecewise with gaps, and the cancellations sympy's automatic
evaluation removes) goes through ``loss_admissible(text, time_limit=...)``; every HOLDS is then
checked by the independent oracle ``holds_is_wrong`` (mpmath, the text evaluated as written at
sampled points: an undefined or non-real node, l' >= 0, an increase, a kink). The pinned issue-20
expressions and the legitimate losses run first. Reported: trees, distinct texts, verdict counts,
wrong HOLDS (each printed), HOLDS the oracle itself failed on (counted apart), wall time and the summed CPU seconds of the workers, the 1-minute load
average before and after. A progress line goes to stderr every minute.

Usage: python benchmarks/loss_hunt.py [--trees 10000] [--seed 0] [--workers 2] [--time-limit 2]
       [--json out.json] [--jsonl per_tree.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.theorems.loss_trees import LEGIT, PINNED_TRAPS, holds_is_wrong, random_loss  # noqa: E402

_TIME_LIMIT = 2.0


def _init(limit: float) -> None:
    global _TIME_LIMIT
    _TIME_LIMIT = limit


def judge(text: str) -> tuple[str, str, str | None, float]:
    """(text, verdict, why a HOLDS is wrong or None, CPU seconds) for one expression.

    A HOLDS the oracle itself cannot judge (mpmath raising, e.g. OverflowError in erfc at an
    extreme sample point) gets the verdict ``HOLDS (oracle failed)``: counted apart, never as a
    HOLDS shown right, and listed in the summary."""
    from certify.errors import MdcertError
    from theorems.loss import loss_admissible

    t0 = time.process_time()
    try:
        verdict = loss_admissible(text, time_limit=_TIME_LIMIT).check().verdict.name
    except MdcertError:
        verdict = "REFUSED"
    wrong = None
    if verdict == "HOLDS":
        try:
            wrong = holds_is_wrong(text)
        except Exception as exc:  # noqa: BLE001 - the oracle's failure, reported, never "not wrong"
            verdict, wrong = "HOLDS (oracle failed)", f"{type(exc).__name__}: {exc}"[:200]
    return text, verdict, wrong, time.process_time() - t0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--time-limit", type=float, default=2.0, help="seconds of symbolic work per tree"
    )
    ap.add_argument("--json", default=None, help="write the summary here")
    ap.add_argument(
        "--jsonl",
        default=None,
        help="append one line per distinct tree here as it is judged "
        "(a checkpoint: partial counts survive an interrupted run)",
    )
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    generated = [random_loss(rng.choice) for _ in range(args.trees)]
    distinct = list(dict.fromkeys(generated))
    multiplicity = collections.Counter(generated)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    pinned = {t: judge(t)[1:3] for t in (*PINNED_TRAPS, *LEGIT)}
    counts: collections.Counter = collections.Counter()
    wrong: list[tuple[str, str]] = []
    oracle_failed: list[tuple[str, str]] = []
    cpu, done, last = 0.0, 0, time.perf_counter()
    with multiprocessing.get_context("fork").Pool(
        args.workers, initializer=_init, initargs=(args.time_limit,)
    ) as pool:
        for text, verdict, why, seconds in pool.imap_unordered(judge, distinct, chunksize=4):
            counts[verdict] += multiplicity[text]
            cpu += seconds
            done += 1
            if args.jsonl:
                with open(args.jsonl, "a") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "text": text,
                                "verdict": verdict,
                                "wrong": why,
                                "cpu_s": round(seconds, 3),
                                "multiplicity": multiplicity[text],
                            }
                        )
                        + "\n"
                    )
            if verdict == "HOLDS (oracle failed)":
                oracle_failed.append((text, why))
                print(f"ORACLE FAILED on a HOLDS: {text}  ({why})", flush=True)
            elif why is not None:
                wrong.append((text, why))
                print(f"WRONG HOLDS: {text}  ({why})", flush=True)
            if time.perf_counter() - last > 60:
                last = time.perf_counter()
                print(
                    f"[{last - t0:6.0f} s] {done}/{len(distinct)} distinct trees, {dict(counts)}, "
                    f"{len(wrong)} wrong HOLDS, {len(oracle_failed)} HOLDS the oracle failed on",
                    file=sys.stderr,
                    flush=True,
                )
    wall = time.perf_counter() - t0
    summary = {
        "trees": args.trees,
        "distinct": len(distinct),
        "seed": args.seed,
        "workers": args.workers,
        "time_limit_s": args.time_limit,
        "verdicts (over all trees)": dict(counts),
        "wrong_holds": len(wrong),
        "wrong_examples": wrong[:20],
        "holds_unjudged_oracle_failed": len(oracle_failed),
        "oracle_failed_examples": oracle_failed[:20],
        "pinned": {t: v for t, (v, _) in pinned.items()},
        "pinned_wrong_holds": [t for t in PINNED_TRAPS if pinned[t][0] == "HOLDS"],
        "legit_not_holds": [t for t in LEGIT if pinned.get(t, ("HOLDS",))[0] != "HOLDS"],
        "wall_s": round(wall, 1),
        "worker_cpu_s_summed": round(cpu, 1),
        "load_1min_before": load_before,
        "load_1min_after": os.getloadavg()[0],
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
