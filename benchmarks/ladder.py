"""The constraint-heavy ladder in one run: certify (and re-check) planted or random attention SVMs
(n, T, d) for a list of n, then fit the scaling exponents of time and memory in N = n(T-1).

Every case runs in its own subprocess through `scale_bench.run_case` (its peak RSS is its own; the
1-minute load average is recorded before and after). The fit is ordinary least squares of
``log(seconds)`` and ``log(peak RSS)`` on ``log(N)`` over the cases that finished, with a 95%
t-interval on the slope (n - 2 degrees of freedom; no interval with fewer than three points). Times
are wall seconds of the solve alone (``certify_svm`` inside the child, start-up excluded); the
checker's are reported beside them and fitted the same way. The float peers (cvxpy + Clarabel at
every p, scipy SLSQP at p = 2) run on the same rows for n <= ``--peers-max-n`` (default 500; 0: none),
each in its own subprocess with the same limit; they prove nothing, and their columns say whether
they finished, their wall and CPU seconds and the speed-up of ours (their wall / ours, and their
CPU / ours: on a loaded machine the CPU ratio is the comparable one). ``--ps`` runs the ladder at
several p, one table and one fit per p.

Usage:
  python benchmarks/ladder.py [--ns 250,500,1000,2000] [--T 32] [--d 64] [--ps 2,3] [--kind planted]
                              [--timeout 1200] [--no-checker] [--peers-max-n 500] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_bench import run_case  # noqa: E402  (a sibling script, not a package)

__all__ = ["fit_exponent", "main"]


def fit_exponent(N: list[float], y: list[float]) -> tuple[float, tuple[float, float] | None]:
    """Slope of log(y) on log(N) and its 95% t-interval (None with fewer than three points)."""
    from scipy import stats

    if len(N) < 2:
        raise ValueError("a slope needs at least two points")
    res = stats.linregress([math.log(v) for v in N], [math.log(v) for v in y])
    if len(N) < 3:
        return float(res.slope), None
    half = float(stats.t.ppf(0.975, len(N) - 2)) * float(res.stderr)
    return float(res.slope), (float(res.slope) - half, float(res.slope) + half)


def _fmt_fit(name: str, N: list[float], y: list[float]) -> str:
    if len(N) < 2:
        return f"- {name}: fewer than two finished cases, no fit"
    slope, ci = fit_exponent(N, y)
    band = "no interval (two points)" if ci is None else f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
    return (
        f"- {name} ~ N^{slope:.2f}, {band}, over {len(N)} cases (N = {int(min(N))}..{int(max(N))})"
    )


def _peer_cell(peer: dict | None, ours: dict) -> str:
    """A peer's column: '-' when not run, else its status, wall seconds and ours' speed-up."""
    if peer is None:
        return "-"
    if peer.get("seconds") is None or peer.get("status") not in ("optimal", "infeasible"):
        return str(peer.get("status", "failed"))[:60]
    cell = f"{peer['status']}, {peer['seconds']:.1f}"
    if peer.get("cpu_seconds") is not None:
        cell += f" (CPU {peer['cpu_seconds']:.1f})"
    if ours.get("seconds"):
        cell += f"; {peer['seconds'] / ours['seconds']:.1f}x our wall"
    if ours.get("cpu_seconds") and peer.get("cpu_seconds") is not None:
        cell += f", {peer['cpu_seconds'] / ours['cpu_seconds']:.1f}x our CPU"
    return cell


def _secs(r: dict) -> str:
    """``wall (CPU c)`` of a case, or '-' when it did not finish."""
    if r.get("seconds") is None:
        return "-"
    cpu = r.get("cpu_seconds")
    return f"{r['seconds']:.1f}" + ("" if cpu is None else f" (CPU {cpu:.1f})")


def _ladder(args: argparse.Namespace, ns: list[int], p: str) -> list[dict]:
    """One ladder at one p: the table rows as they finish, then the fitted exponents."""
    print(
        f"# ladder {args.kind} (n, {args.T}, {args.d}) p = {p}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(
        "| n | N x m | solve wall s (CPU) | solve RSS (MB) | verdict | checker wall s (CPU) "
        "| checker RSS (MB) | Clarabel | SLSQP | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in ns:
            spec = dict(kind=args.kind, n=n, T=args.T, d=args.d, p=p)
            spec["cert"] = str(Path(tmp) / f"cert{n}.json")
            ours = run_case({**spec, "what": "ours"}, args.timeout)
            chk = {}
            if ours.get("seconds") is not None and not args.no_checker:
                chk = run_case({**spec, "what": "check"}, args.timeout)
            N = n * (args.T - 1)
            verdict = ours.get("status")
            if verdict == "optimal":
                verdict = f"optimal, {ours['digits']} digits, {ours['support'][2]} undecided"
            crss = "-" if not chk else f"{chk.get('rss_mb', 0):.0f}"
            ok = "" if not chk else (" ok" if chk.get("ok") else " REJECTED")
            peers = {}
            for name in ("clarabel", "slsqp"):
                if n <= args.peers_max_n and (name == "clarabel" or float(p) == 2.0):
                    peers[name] = run_case({**spec, "what": name}, args.timeout)
            cells = [_peer_cell(peers.get(name), ours) for name in ("clarabel", "slsqp")]
            print(
                f"| {n} | {N} x {args.d**2} | {_secs(ours)} | {ours.get('rss_mb', 0):.0f} | "
                f"{verdict} | {_secs(chk) if chk else '-'}{ok} | {crss} | {cells[0]} | "
                f"{cells[1]} | {ours['load'][0]:.1f}-{ours['load'][1]:.1f} |",
                flush=True,
            )
            rows.append({"N": N, "ours": ours, "check": chk, "peers": peers})
    done = [r for r in rows if r["ours"].get("seconds") is not None]
    N = [r["N"] for r in done]
    print(_fmt_fit("solve time", N, [r["ours"]["seconds"] for r in done]))
    print(_fmt_fit("solve peak RSS", N, [r["ours"]["rss_mb"] for r in done]))
    checked = [r for r in done if r["check"].get("seconds") is not None]
    if checked:
        Nc = [r["N"] for r in checked]
        print(_fmt_fit("checker time", Nc, [r["check"]["seconds"] for r in checked]))
        print(_fmt_fit("checker peak RSS", Nc, [r["check"]["rss_mb"] for r in checked]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="250,500,1000,2000", help="comma-separated n (examples)")
    ap.add_argument("--T", type=int, default=32)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--ps", "--p", default="2", help="comma-separated p, one ladder each")
    ap.add_argument("--kind", choices=("planted", "random"), default="planted")
    ap.add_argument("--timeout", type=float, default=1200.0, help="limit of each case (s)")
    ap.add_argument("--no-checker", action="store_true")
    ap.add_argument(
        "--peers-max-n",
        type=int,
        default=500,
        help="run cvxpy+Clarabel (and SLSQP at p = 2) for n up to this (0: no peers)",
    )
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ns = [int(v) for v in args.ns.split(",")]
    out = {}
    for p in args.ps.split(","):
        out[p] = _ladder(args, ns, p.strip())
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
