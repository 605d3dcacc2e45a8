"""``mdcert verify PROBLEM CERT``: exit 0 when every claim is verified, 1 with the first failing claim."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from certify import synthetic_problem
from certify.svm import certify_svm
from experiments.cli.main import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    pr = synthetic_problem()
    pr.save(d / "problem.npz")
    (d / "cert.json").write_text(json.dumps(certify_svm(pr, "3", digits=30).to_json()))
    return d


def test_verify_accepts(files, capsys):
    assert main(["verify", str(files / "problem.npz"), str(files / "cert.json"), "-v"]) == 0
    out = capsys.readouterr().out
    assert "verified: all" in out and "ok   opt_lower" in out


def test_verify_rejects_corrupted_bound(files, tmp_path, capsys):
    data = json.loads((files / "cert.json").read_text())
    num, den = data["opt_lower"].split("/")
    data["opt_lower"] = f"{int(num) * 2}/{den}"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "bad.json")]) == 1
    assert "NOT verified: opt_lower" in capsys.readouterr().err


def test_verify_rejects_other_data_and_p(files, tmp_path, capsys):
    pr = synthetic_problem(seed=1)
    pr.save(tmp_path / "other.npz")
    assert main(["verify", str(tmp_path / "other.npz"), str(files / "cert.json")]) == 1
    assert "data_hash" in capsys.readouterr().err
    assert main(["verify", str(files / "problem.npz"), str(files / "cert.json"), "--p", "2"]) == 1
    assert "p:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("{not json", "not valid JSON"),
        ('{"status": "weird"}', "unknown certificate status"),
        ("[1]", "JSON object"),
    ],
)
def test_verify_bad_certificate_file(files, tmp_path, capsys, content, pattern):
    (tmp_path / "c.json").write_text(content)
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "c.json")]) == 1
    err = capsys.readouterr().err
    assert pattern in err and err.strip().count("\n") == 0


def test_verify_missing_certificate(files, tmp_path, capsys):
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "none.json")]) == 1
    assert "not found" in capsys.readouterr().err


def test_verify_imports_no_solver_and_no_torch(files):
    code = (
        "import sys; from experiments.cli.main import main; "
        f"rc = main(['verify', {str(files / 'problem.npz')!r}, {str(files / 'cert.json')!r}]); "
        "bad = [m for m in ('torch', 'cvxpy', 'scipy.optimize', 'certify.svm', 'certify.refine') if m in sys.modules]; "
        "assert not bad, bad; sys.exit(rc)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr + res.stdout


def test_verify_alpha_option_and_stored_alpha_note(files, tmp_path, capsys):
    pr = synthetic_problem()
    opt = list(pr.optimal_indices().indices)
    other = [(a + 1) % pr.T for a in opt]
    pr.with_alpha(other).save(tmp_path / "stored.npz")
    problem, cert = str(files / "problem.npz"), str(files / "cert.json")  # cert: alpha = opt
    assert main(["verify", problem, cert, "--alpha", "opt"]) == 0
    assert main(["verify", problem, cert, "--alpha", ",".join(map(str, opt))]) == 0
    capsys.readouterr()
    assert main(["verify", problem, cert, "--alpha", ",".join(map(str, other))]) == 1
    assert f"alpha: certificate alpha = {opt}, expected {other}" in capsys.readouterr().err
    # the problem file stores another alpha: still verified (the claims hold), with a note
    assert main(["verify", str(tmp_path / "stored.npz"), cert]) == 0
    captured = capsys.readouterr()
    assert "verified: all" in captured.out and f"stores alpha = {other}" in captured.err
    assert main(["verify", str(tmp_path / "stored.npz"), cert, "--alpha", "problem"]) == 1
    assert "NOT verified: alpha" in capsys.readouterr().err
    assert main(["verify", problem, cert, "--alpha", "problem"]) == 1
    err = capsys.readouterr().err
    assert "stores no alpha" in err and err.strip().count("\n") == 0
    assert main(["verify", problem, cert, "--alpha", "0,x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mdcert: error: invalid alpha") or "invalid alpha" in err.splitlines()[0]
    assert "NOT verified" not in err and err.strip().count("\n") == 0


# ------------------------------------------------ hostile certificates (issue 11 items 5, 8, 11)
def _hostile(cert: dict) -> dict[str, bytes]:
    """name -> certificate file content; every one must be refused with exit 1."""
    import copy

    from certify.exact import decimal_str

    def edit(f) -> bytes:
        d = copy.deepcopy(cert)
        f(d)
        return json.dumps(d).encode()

    text = json.dumps(cert)
    return {
        "deep": b"[" * 200_000 + b"]" * 200_000,
        "deep_object": b'{"a": ' * 200_000,
        "duplicate_key": (text[:-1] + ', "status": "optimal"}').encode(),
        "nan": text.replace('"d": 10', '"d": NaN').encode(),
        "infinity": (text[:-1] + ', "x": Infinity}').encode(),
        "float_overflow": (text[:-1] + ', "x": 1e999}').encode(),
        "non_utf8": text.encode()[:-1] + b', "x": "\xff\xfe"}',
        "utf16": text.encode("utf-16"),
        "w_exp_1e7": edit(lambda d: d["w"].__setitem__("exp", 10**7)),
        "w_4000_digits": edit(lambda d: d["w"]["ints"].__setitem__(0, int("9" * 4000))),
        "lam_4000_digits": edit(lambda d: d["lam"]["ints"].__setitem__(0, int("9" * 4000))),
        "lam_1e6_digits": edit(lambda d: d["lam"]["ints"].__setitem__(0, decimal_str(10**10**6))),
        "lam_den_huge": edit(lambda d: d["lam"].__setitem__("den", decimal_str(7**300_000))),
        "opt_upper_huge": edit(lambda d: d.__setitem__("opt_upper", "1" + "0" * 300_000 + "/1")),
        "bound_float": edit(lambda d: d.__setitem__("opt_lower", 1.5)),
        "ints_nested": edit(lambda d: d["w"].__setitem__("ints", [[[[1]]]])),
        "support_strings": edit(lambda d: d["support"].__setitem__("tight", [["a", "b"]])),
        "status_list": edit(lambda d: d.__setitem__("status", ["optimal"])),
        "p_list": edit(lambda d: d.__setitem__("p", [3])),
        "no_w": edit(lambda d: d.pop("w")),
        "empty": b"",
        "bare_number": b"12",
    }


@pytest.fixture(scope="module")
def hostile_files(files, tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    cert = json.loads((files / "cert.json").read_text())
    for name, content in _hostile(cert).items():
        (d / f"{name}.json").write_bytes(content)
    with open(d / "sparse_huge.json", "wb") as fh:  # 4 GiB, sparse: must be refused unread
        fh.truncate(4 << 30)
    return d


HOSTILE = [
    *_hostile({"w": {"ints": [1]}, "lam": {"ints": [1]}, "support": {}}).keys(),
    "sparse_huge",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_certificate_exit_1_one_line(files, hostile_files, capsys, name):
    import hashlib
    import time

    problem, cert = files / "problem.npz", hostile_files / f"{name}.json"
    before = [
        hashlib.sha256(problem.read_bytes()).hexdigest(),
        cert.stat().st_size,
        cert.stat().st_mtime_ns,
    ]
    t = time.perf_counter()
    assert main(["verify", str(problem), str(cert)]) == 1
    assert time.perf_counter() - t < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err[
        :300
    ]
    assert err.startswith(("mdcert verify: error: ", "NOT verified: "))
    assert [
        hashlib.sha256(problem.read_bytes()).hexdigest(),
        cert.stat().st_size,
        cert.stat().st_mtime_ns,
    ] == before


@pytest.mark.parametrize("name", ["deep", "lam_1e6_digits", "w_exp_1e7", "sparse_huge"])
def test_hostile_certificate_subprocess(files, hostile_files, name):
    """A real process: exit 1, one line, no traceback (deep nesting would be a RecursionError)."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.cli",
            "verify",
            str(files / "problem.npz"),
            str(hostile_files / f"{name}.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, (
        res.stderr[:300]
    )


def test_fuzzed_certificates_never_exit_70(files, tmp_path):
    """Certificates mutated by the checker's fuzzer, through the command: exit 0 or 1, one line."""
    from hypothesis import HealthCheck, given, settings

    from tests.certify.check.test_checker_fuzz import fuzz_case

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(fuzz_case())
    def run(case):
        problem, data = case
        problem.save(tmp_path / "p.npz")
        (tmp_path / "c.json").write_text(json.dumps(data))
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(
                [
                    "verify",
                    str(tmp_path / "p.npz"),
                    str(tmp_path / "c.json"),
                    "--export-w",
                    str(tmp_path / "W.npy"),
                ]
            )
        lines = [
            ln
            for ln in err.getvalue().splitlines()
            if not ln.startswith("mdcert verify: warning: ")
        ]
        assert rc in (0, 1) and len(lines) <= 1 + (rc == 0), err.getvalue()[
            :300
        ]  # warnings: suspicious data
        assert rc == 0 or len(lines) == 1

    run()


def test_valid_certificate_with_huge_weak_bounds_exports(files, tmp_path, capsys):
    """A true but weak claim (distance <= 1e400) is verified, and exporting it prints the bounds
    without a float conversion (it exited 70 with OverflowError)."""
    data = json.loads((files / "cert.json").read_text())
    for key, zeros in (
        ("distance_upper", 400),
        ("direction_error_upper", 400),
        ("bregman_upper", 800),
    ):
        data[key] = "1" + "0" * zeros + "/1"
    (tmp_path / "weak.json").write_text(json.dumps(data))
    assert (
        main(
            [
                "verify",
                str(files / "problem.npz"),
                str(tmp_path / "weak.json"),
                "--export-w",
                str(tmp_path / "W.npy"),
            ]
        )
        == 0
    )
    assert "<= 1.00e+400" in capsys.readouterr().out and (tmp_path / "W.npy").exists()


def test_verify_refuses_tight_claims_over_too_many_open_rows_in_one_line(tmp_path, capsys):
    """Issue 21: 1 tight row and every other row undecided (N = 120 rows, m = 16) is refused at once with
    one line; the same certificate claiming every row undecided verifies (it claims nothing)."""
    from certify.synth import planted_problem

    pr = planted_problem(n=40, T=4, d=4, seed=1)
    pr.save(tmp_path / "problem.npz")
    data = certify_svm(pr, "7/4", digits=20).to_json()
    rows = sorted(
        list(r) for part in ("tight", "inactive", "undecided") for r in data["support"][part]
    )
    for tight, code in ((1, 1), (0, 0)):
        data["support"] = {"tight": rows[:tight], "inactive": [], "undecided": rows[tight:]}
        (tmp_path / "cert.json").write_text(json.dumps(data))
        assert main(["verify", str(tmp_path / "problem.npz"), str(tmp_path / "cert.json")]) == code
        err = capsys.readouterr().err
        if code:
            assert (
                err.startswith(
                    "NOT verified: support_tight: more than 16 distinct rows are not claimed "
                    "inactive"
                )
                and err.count("\n") == 1
            ), err


def test_verify_classification_and_tampered(tmp_path, capsys):
    from certify.maxmargin import certify_max_margin
    from certify.synth import classification_problem

    prob = classification_problem(n=60, d=3, classes=3, seed=1)
    prob.save(tmp_path / "points.npz")
    data = certify_max_margin(prob, "2", digits=20).to_json()
    (tmp_path / "cert.json").write_text(json.dumps(data))
    assert (
        main(
            [
                "verify",
                str(tmp_path / "points.npz"),
                str(tmp_path / "cert.json"),
                "--p",
                "2",
                "--svm",
                "multiclass",
            ]
        )
        == 0
    )
    assert "verified: all" in capsys.readouterr().out
    num, den = (int(k) for k in data["opt_lower"].split("/"))
    data["opt_lower"] = f"{num * 11}/{den * 10}"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert main(["verify", str(tmp_path / "points.npz"), str(tmp_path / "bad.json")]) == 1
    assert "NOT verified: opt_lower" in capsys.readouterr().err
