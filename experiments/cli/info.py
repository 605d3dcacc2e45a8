"""``mdcert info PROBLEM``: what a problem file holds, before certifying anything (docs/formats.md).

Prints n, T, d, lengths, zero padding detected without ``lengths``, exact ties in the token scores,
the globally optimal tokens, duplicated tokens, N (attention-SVM rows) against d^2 variables and a
feasibility hint (`certify.info.problem_info`; "infeasible" is a proof: a zero row). Long lists are
summarized (first items and a count); ``--json OUT`` writes everything in full. Exit 0, 1 on bad input.
"""

from __future__ import annotations

import argparse

HELP = "summarize a problem file: sizes, lengths, padding, ties, optimal and duplicated tokens, N/d^2, feasibility hint"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (.npz or .json)")
    parser.add_argument(
        "--json", default=None, metavar="OUT.json", help="also write the full summary as JSON"
    )


def format_info(info) -> list[str]:
    """The terminal lines of a `certify.info.ProblemInfo` (long lists summarized)."""
    from certify.info import summarize

    lines = [
        f"n = {info.n} examples, T = {info.T} tokens, d = {info.d}",
        f"data hash: {info.data_hash}",
    ]
    if info.lengths is None:
        lines.append("lengths: none (every example has T tokens)")
    else:
        lines.append(
            f"lengths: {min(info.lengths)}..{max(info.lengths)} ({sum(info.lengths)} of "
            f"{info.n * info.T} tokens valid): {summarize(info.lengths, first=8)}"
        )
    if info.padded:
        lines.append(
            f"padding detected without lengths: {len(info.padded)} example(s) end in all-zero tokens "
            f"(example, count: {summarize(info.padded, first=4)}); declare them with 'lengths'"
        )
    else:
        lines.append("padding detected without lengths: none")
    lines.append(f"globally optimal tokens: {summarize(info.optimal, first=10)}")
    lines.append(
        f"ties in the token scores: {len(info.ties)} example(s)"
        + (
            f" ({summarize((f'{i}: {list(ts)}' for i, ts in info.ties), first=3)})"
            if info.ties
            else ""
        )
    )
    lines.append(
        f"duplicated tokens: {len(info.duplicates)} group(s)"
        + (
            f" ({summarize((f'{i}: {list(ts)}' for i, ts in info.duplicates), first=3)})"
            if info.duplicates
            else ""
        )
    )
    lines.append(
        f"attention SVM: N = {info.rows} rows, d^2 = {info.variables} variables, "
        f"N/d^2 = {info.rows_per_variable:.3g}"
    )
    lines.append(f"feasibility hint (alpha = {info.alpha_source}): {info.hint}")
    return lines


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from certify.info import problem_info
    from certify.problem import AttentionProblem
    from experiments.runtime.outputs import check_distinct, check_output_file, write_text_atomic

    if args.json is not None:
        check_output_file(args.json, option="--json", suffixes=(".json",))
        check_distinct({"--json": args.json}, {"the problem file": args.problem})
    info = problem_info(AttentionProblem.load(args.problem))
    print("\n".join(format_info(info)))
    if args.json is not None:
        write_text_atomic(args.json, json.dumps(info.to_json(), indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
