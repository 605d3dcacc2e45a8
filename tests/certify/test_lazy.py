"""Tests of `certify.lazy`: PEP 562 lazy exports shared by the certify and experiments packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from certify.lazy import lazy_exports


def test_loads_on_first_access_and_caches():
    namespace: dict = {}
    getattr_, dir_ = lazy_exports("pkg", {"Fraction": "fractions"}, namespace)
    assert "Fraction" in dir_() and "Fraction" not in namespace
    from fractions import Fraction

    assert getattr_("Fraction") is Fraction and namespace["Fraction"] is Fraction
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")


def test_packages_stay_lazy():
    """Importing certify and experiments loads neither a solver nor torch; a name loads on use."""
    code = ("import sys, certify, experiments; assert 'torch' not in sys.modules; "
            "assert 'certify.svm' not in sys.modules; certify.parse_p; assert 'certify.exact' in sys.modules; "
            "assert 'parse_p' in dir(certify) and 'LpMirrorDescent' in dir(experiments)")
    subprocess.run([sys.executable, "-c", code], check=True)
