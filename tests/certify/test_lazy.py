"""Tests of `certify.lazy`: PEP 562 lazy exports shared by the certify and experiments packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from certify.errors import MdcertError
from certify.lazy import lazy_exports, lazy_registry


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
    code = (
        "import sys, certify, experiments; assert 'torch' not in sys.modules; "
        "assert 'certify.svm' not in sys.modules; certify.parse_p; assert 'certify.exact' in sys.modules; "
        "assert 'parse_p' in dir(certify) and 'LpMirrorDescent' in dir(experiments)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_loads_checks_and_caches():
    entries = {"half": "tests.certify.test_lazy:HALF"}
    get = lazy_registry("number", entries, Named)
    assert get("half") is HALF and get("half") is HALF
    with pytest.raises(MdcertError, match=r"^unknown number 'third'; use one of half$"):
        get("third")
    with pytest.raises(MdcertError, match=r"^unknown number 3; use one of half$"):
        get(3)
    entries["wrong"] = (
        "tests.certify.test_lazy:HALF"  # the registry is read at each call; .name must match
    )
    with pytest.raises(TypeError, match="is not the Named 'wrong'"):
        get("wrong")
    entries["frac"] = "fractions:Fraction"  # not an instance of the registry's class
    with pytest.raises(TypeError, match="is not the Named 'frac'"):
        get("frac")


class Named:
    def __init__(self, name):
        self.name = name


HALF = Named("half")
