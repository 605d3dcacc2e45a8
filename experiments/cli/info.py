"""``mdcert info PROBLEM``: what a problem file holds, before certifying anything (docs/formats.md).

Prints n, T, d, lengths, zero padding detected without ``lengths``, exact ties in the token scores,
the globally optimal tokens, duplicated tokens, N (attention-SVM rows) against d^2 variables and a
feasibility hint (`certify.info.problem_info`; "infeasible" is a proof: a zero row). Long lists are
summarized (first items and a count); ``--json OUT`` writes everything in full. Exit 0, 1 on bad input.

Classification and regression files (``kind`` in the file, docs/formats.md) get their own summary
(`certify.plaininfo`): sizes, classes and their counts, duplicated and zero points, and a hint whose
"not separable" / "inconsistent" is an exact proof from the data.
"""

from __future__ import annotations

import argparse

HELP = (
    "summarize a problem file: attention (sizes, lengths, padding, ties, optimal and duplicated "
    "tokens, N/d^2, feasibility hint), classification or regression (sizes, classes, duplicates, "
    "exact infeasibility facts)"
)


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


def format_plain(info: dict) -> list[str]:
    """The terminal lines of `certify.plaininfo`'s classification or regression facts."""
    from certify.info import summarize

    def dup_line(noun: str) -> str:
        text = f"duplicated {noun}: {info['duplicate_groups']} group(s)"
        if info["duplicates"]:
            text += f" ({summarize((str(g) for g in info['duplicates']), first=3)})"
        return text

    if info["kind"] == "classification":
        counts = ", ".join(f"{k}: {v}" for k, v in info["label_counts"].items())
        lines = [
            f"{info['type']} classification: n = {info['n']} points, d = {info['d']}, "
            f"K = {info['K']} classes",
            f"data hash: {info['data_hash']}",
            f"label counts: {counts}"
            + (
                f" (empty classes: {', '.join(info['empty_classes'])})"
                if info["empty_classes"]
                else ""
            ),
            dup_line("points"),
            f"zero points: {info['zero_point_count']}",
            f"max-margin program: N = {info['rows']} rows, {info['variables']} variables",
            f"separability: {info['hint']}",
        ]
        if info["provenance"]:
            lines.append("provenance: " + ", ".join(sorted(info["provenance"])[:8]))
        return lines
    lo, hi = info["nonzeros_per_row"]
    return [
        f"regression: N = {info['N']} rows, D = {info['D']} columns"
        + (
            "" if info["overparameterized"] else " (D <= N: not the overparameterized D > N regime)"
        ),
        f"data hash: {info['data_hash']}",
        f"zero targets: {info['zero_targets']}; zero rows of X: {info['zero_row_count']}; "
        f"nonzeros per row: {lo}..{hi}",
        dup_line("rows of X"),
        f"consistency of X beta = y: {info['hint']}",
    ]


def _load(path: str):
    """The problem in ``path``, read once: regression (`load_regression`), else classification or
    attention (`certify.classification.load_problem` tells them apart by ``kind``)."""
    from certify.classification import load_problem
    from certify.regression.problem import declares_regression, load_regression

    return load_regression(path) if declares_regression(path) else load_problem(path)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from certify.info import problem_info
    from certify.problem import AttentionProblem
    from experiments.runtime.outputs import check_distinct, check_output_file, write_text_atomic

    if args.json is not None:
        check_output_file(args.json, option="--json", suffixes=(".json",))
        check_distinct({"--json": args.json}, {"the problem file": args.problem})
    problem = _load(args.problem)
    if isinstance(problem, AttentionProblem):
        info = problem_info(problem)
        print("\n".join(format_info(info)))
        payload = info.to_json()
    else:
        from certify.plaininfo import classification_info, regression_info
        from certify.regression.problem import RegressionProblem

        is_reg = isinstance(problem, RegressionProblem)
        payload = regression_info(problem) if is_reg else classification_info(problem)
        print("\n".join(format_plain(payload)))
    if args.json is not None:
        write_text_atomic(args.json, json.dumps(payload, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
