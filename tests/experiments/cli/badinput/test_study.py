"""``mdcert study`` against hostile command lines: one line, exit 1, nothing written (all refused
before any training; most before the corpus is read)."""

from __future__ import annotations

import pytest

from tests.experiments.cli.badinput.kit import check_case, params

S = "mdcert study sentiment: error: "  # argparse errors of a kind carry its name
V = "mdcert study vision: error: "
R = "mdcert study realdata: error: "
CASES = [
    (["study"], r"give a study"),
    (["study", "poetry", "-o", "{o}/s"], r"invalid choice: 'poetry'", 1, "mdcert study: error: "),
    (["study", "sentiment"], r"required: -o", 1, S),
    (["study", "vision", "--device", "tpu", "-o", "{o}/s"], r"invalid choice: 'tpu'", 1, V),
    (["study", "sentiment", "--seeds", "x", "-o", "{o}/s"], r"invalid int value", 1, S),
    *[
        (["study", "sentiment", *extra, "-o", "{o}/s"], m)
        for extra, m in [
            (["--size", "5"], r"--size 5: use one of"),
            (["--size", "3,3"], r"repeats a size"),
            (["--size", "three"], r"give sizes like 3"),
            (["--size", ""], r"give sizes like 3"),
            (["--optimizers", "1.1,sgd"], r"unknown optimizer 'sgd'"),
            (["--optimizers", "1.7"], r"no step-size grid for p=1.7"),
            (["--optimizers", "0.5"], r"unknown optimizer '0.5'"),
            (["--optimizers", "2,gd"], r"repeats an optimizer"),
            (["--optimizers", "1e400"], r"unknown optimizer"),
            (["--width", "50"], r"not a multiple of size 3"),
            (["--width", "0"], r"--width 0"),
            (["--seeds", "0"], r"--seeds 0"),
            (["--seeds", "99999"], r"--seeds 99999"),
            (["--epochs", "0"], r"--epochs 0"),
            (["--dropout", "1.5"], r"--dropout 1.5"),
            (["--dropout", "nan"], r"--dropout nan"),
            (["--max-len", "4"], r"--max-len 4"),
            (["--max-len", "100000"], r"--max-len 100000"),
            (["--train-limit", "3"], r"--train-limit 3"),
            (["--threads", "0"], r"--threads 0"),
            (["--workers", "0"], r"--workers 0"),
            (["--lr=-1"], r"--lr -1.0: give a positive"),
            (["--lr", "nan"], r"--lr nan"),
            (["--lr", "inf"], r"--lr inf"),
            (["--seed-start=-5"], r"--seed-start -5"),
            (["--batch", "0"], r"--batch 0"),
        ]
    ],
    (["study", "vision", "--width", "30", "-o", "{o}/s"], r"not a multiple of size 4"),
    (["study", "vision", "--size", "5", "-o", "{o}/s"], r"--size 5: use one of"),
    (["study", "sentiment", "-o", "{d}/good.npz"], r"exists and is not a directory"),
    (["study", "sentiment", "-o", ""], r"-o is empty"),
    # realdata: refused before any data is read or certified
    (["study", "realdata", "--embed", "bert", "-o", "{o}/s"], r"invalid choice: 'bert'", 1, R),
    *[
        (["study", "realdata", "--quick", *extra, "-o", "{o}/s"], m)
        for extra, m in [
            (["--modalities", "audio"], r"invalid --modalities 'audio'"),
            (["--modalities", "text,text"], r"invalid --modalities"),
            (["--modalities", ""], r"invalid --modalities"),
            (["--seeds", "0"], r"--seeds 0"),
            (["--seeds", "500"], r"--seeds 500: give between 1 and 100"),
            (["--workers", "0"], r"--workers 0"),
            (["--workers", "100"], r"--workers 100: give a number of certification processes"),
            (["--lr", "0.1"], r"--lr and --seed-start are options of the transformer studies"),
            (
                ["--seed-start", "3"],
                r"--lr and --seed-start are options of the transformer studies",
            ),
        ]
    ],
    (["study", "realdata", "--quick", "-o", "{d}/good.npz"], r"exists and is not a directory"),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_study_bad_command_line(argv, match, rc, prefix, files, tmp_path, capsys) -> None:
    check_case(argv, match, files=files, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)
