"""certify_max_margin: closed-form optima, the checker's acceptance and rejection, exact Gordan
certificates of non-separable data, multiclass digits, and agreement with the decoder SVM."""

from __future__ import annotations

import ast
import copy
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from certify import AttentionProblem, CertStatus, certified_solution, check_certificate
from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.maxmargin import certify_max_margin
from certify.svm import certify_svm
from certify.synth import classification_problem

A = np.array([3.0, 4.0])


def _encloses(cert, power: int, value: Fraction) -> bool:
    """``OPT**power = value`` lies in the certified enclosure (exact rationals)."""
    return cert.opt_lower**power <= value <= cert.opt_upper**power


@pytest.mark.parametrize(("p", "q"), [("2", 2), ("1.5", 3), ("4/3", 4)])
def test_one_active_constraint_opt_is_one_over_the_dual_norm(p, q) -> None:
    """Rows a and 2a (points a, -2a with labels +1, -1): OPT = 1/||a||_q exactly, a tight, 2a inactive."""
    prob = ClassificationProblem(np.array([A, -2 * A]), [1.0, -1.0])
    cert = certify_max_margin(prob, p, digits=30)
    assert cert.status is CertStatus.OPTIMAL
    norm_q = sum(Fraction(int(abs(a))) ** q for a in A)  # ||a||_q^q; OPT^q = 1 / ||a||_q^q
    assert _encloses(cert, q, 1 / norm_q)
    assert (
        cert.support.tight == ((0,),)
        and cert.support.inactive == ((1,),)
        and not cert.support.undecided
    )
    assert check_certificate(prob, cert).ok


def test_symmetric_two_points_binary_and_multiclass() -> None:
    """x and -x, labels +1/-1: OPT = 1/||x||_2 = 1/5; as classes 0/1 (Crammer-Singer, K = 2) the
    optimum splits w_0 = -w_1, OPT^2 = 2 (1/(2*5))^2 = 1/50."""
    X = np.array([A, -A])
    b = certify_max_margin(ClassificationProblem(X, [1.0, -1.0]), "2", digits=30)
    assert _encloses(b, 1, Fraction(1, 5)) and b.support.counts() == (2, 0, 0)
    mprob = ClassificationProblem(X, [0, 1])
    m = certify_max_margin(mprob, "2", digits=30)
    assert _encloses(m, 2, Fraction(1, 50)) and m.svm == "multiclass" and len(m.w) == 4
    assert check_certificate(mprob, m).ok
    sol = certified_solution(m, problem=mprob)
    assert sol.point.shape == (2, 2) and np.allclose(sol.point[0], -sol.point[1])


@pytest.fixture(scope="module", params=["1.5", "2", "3"])
def planted(request):
    prob = classification_problem(n=120, d=6, seed=1)
    cert = certify_max_margin(prob, request.param, digits=40)
    assert cert.status is CertStatus.OPTIMAL and not cert.support.undecided
    return prob, json.loads(json.dumps(cert.to_json()))


def _rejects(prob, data, name: str) -> None:
    res = check_certificate(prob, data)
    assert not res.ok and res.first_failure.startswith(name), res.first_failure


def test_checker_accepts_planted(planted) -> None:
    prob, data = planted
    res = check_certificate(prob, data, p=data["p"], svm="binary")
    assert res.ok, res.first_failure
    assert len(data["support"]["tight"]) <= prob.d


def test_checker_rejects_tampered_certificates(planted) -> None:
    prob, data = planted
    bad = copy.deepcopy(data)
    num, den = (int(k) for k in bad["opt_lower"].split("/"))
    bad["opt_lower"] = f"{num * 1001}/{den * 1000}"  # a lower bound 0.1% too high
    _rejects(prob, bad, "opt_lower")
    bad = copy.deepcopy(data)
    bad["w"]["ints"] = [k * 99 // 100 for k in bad["w"]["ints"]]  # w scaled by 0.99: infeasible
    _rejects(prob, bad, "w_feasible")
    bad = copy.deepcopy(data)
    bad["support"]["inactive"].append(
        bad["support"]["tight"].pop()
    )  # a tight example claimed inactive
    _rejects(prob, bad, "support")  # support_inactive, or support with the exact p = 2 KKT
    bad = copy.deepcopy(data)
    bad["svm"] = "decoder"
    _rejects(prob, bad, "svm")
    bad = copy.deepcopy(data)
    bad["alpha"] = [0]
    _rejects(prob, bad, "svm")
    other = ClassificationProblem(prob.X, -prob.y)
    _rejects(other, data, "data_hash")


def test_attention_certificate_is_not_a_classification_one() -> None:
    from certify import synthetic_problem

    att = synthetic_problem()
    cert = certify_svm(att, "2", svm="decoder", alpha="opt", digits=20).to_json()
    cert["svm"] = "binary"
    res = check_certificate(att, cert)
    assert not res.ok


@pytest.mark.parametrize("classes", [None, 3])
def test_duplicated_points_with_different_labels_give_an_exact_gordan(classes) -> None:
    prob = classification_problem(n=40, d=3, classes=classes, seed=2)
    y = prob.y.copy()
    other = -y[5] if classes is None else (y[5] + 1) % classes
    prob = ClassificationProblem(np.vstack([prob.X, prob.X[5:6]]), np.r_[y, other], classes=classes)
    cert = certify_max_margin(prob, "1.5")
    assert cert.status is CertStatus.INFEASIBLE and "examples 5 and 40" in cert.info["feasibility"]
    assert sum(1 for k in cert.gordan.ints if k) == 2
    assert check_certificate(prob, cert).ok
    bad = cert.to_json()
    bad["gordan"]["ints"] = [1 if i == 0 else 0 for i in range(len(bad["gordan"]["ints"]))]
    _rejects(prob, bad, "gordan")


def test_zero_point_is_infeasible() -> None:
    prob = ClassificationProblem(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, -1.0]]), [1.0, -1.0, -1.0])
    cert = certify_max_margin(prob, "2")
    assert cert.status is CertStatus.INFEASIBLE and check_certificate(prob, cert).ok


@pytest.mark.parametrize("classes", [None, 3])
def test_random_labels_are_proved_not_separable(classes) -> None:
    prob = classification_problem(n=200, d=3, classes=classes, separable=False, seed=4)
    cert = certify_max_margin(prob, "2")
    assert cert.status is CertStatus.INFEASIBLE
    assert check_certificate(prob, cert).ok


@pytest.mark.parametrize("p", ["1.5", "3"])
def test_random_binary_labels_sampled_start_at_p_not_2(p) -> None:
    """N > 8m: the warm start runs on a row sample, whose p = 2 dual diverges; the near-Gordan
    vector lives on the sample rows and the checker re-proves it on the whole data."""
    prob = classification_problem(n=400, d=4, separable=False, seed=3)
    cert = certify_max_margin(prob, p)
    assert cert.status is CertStatus.INFEASIBLE
    assert check_certificate(prob, cert).ok


def test_multiclass_digits_subset() -> None:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.concatenate([np.flatnonzero(y == k)[:12] for k in range(10)])
    prob = ClassificationProblem(X[keep].astype(np.float64), y[keep].astype(np.float64))
    assert (prob.kind, prob.K, prob.m, prob.N) == ("multiclass", 10, 640, 120 * 9)
    cert = certify_max_margin(prob, "1.5", digits=20)
    assert cert.status is CertStatus.OPTIMAL and not cert.support.undecided
    res = check_certificate(prob, cert)
    assert res.ok, res.first_failure
    W = certified_solution(cert, problem=prob).point
    assert W.shape == (10, 64)
    assert np.all(
        np.argmax(prob.X @ W.T, axis=1) == prob.y
    )  # the certified point separates the data


def test_binary_equals_the_decoder_svm() -> None:
    """The decoder SVM at tokens alpha is this program on the rows y_i x_{i alpha_i}: same OPT."""
    prob = classification_problem(n=60, d=4, seed=5)
    n, d = prob.n, prob.d
    X3 = np.zeros((n, 2, d))
    X3[:, 0] = prob.X
    att = AttentionProblem(X3, prob.y, np.ones((n, d)), np.ones(d))
    for p in ("1.5", "2"):
        ours = certify_max_margin(prob, p, digits=30)
        dec = certify_svm(att, p, svm="decoder", alpha=[0] * n, digits=30)
        assert ours.status is dec.status is CertStatus.OPTIMAL
        assert max(ours.opt_lower, dec.opt_lower) <= min(ours.opt_upper, dec.opt_upper)
        assert ours.support.counts() == dec.support.counts()


def test_bad_arguments_are_one_line_errors() -> None:
    prob = classification_problem(n=10, d=2, seed=0)
    for kwargs, pattern in ((dict(p="1"), "p > 1"), (dict(p="2", digits=0), "invalid digits")):
        with pytest.raises(MdcertError, match=pattern):
            certify_max_margin(prob, **kwargs)
    with pytest.raises(MdcertError, match="needs a ClassificationProblem"):
        certify_max_margin("x.npz", "2")


def test_checker_row_module_imports_no_solver() -> None:
    for name in ("check/rows.py", "classification.py"):
        tree = ast.parse((Path(__file__).resolve().parents[2] / "certify" / name).read_text())
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in mods if m and m.split(".")[0] in {"scipy", "cvxpy", "torch"}}
        assert not mods & {
            "certify.svm",
            "certify.ops",
            "certify.refine",
            "certify.bounds",
            "certify.feasible",
        }
