"""Output-path checks and atomic writes shared by the ``mdcert`` commands.

Every command validates its output paths *before* the work starts (so a typo in ``-o`` does not
waste a long run) and writes through a temporary name that is renamed into place, removing the
temporary on any failure or interrupt: an output either appears complete or not at all.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from certify.errors import MdcertError

__all__ = ["check_output_file", "check_output_dir", "write_text_atomic", "atomic_dir", "check_seed", "writable",
           "check_distinct", "check_outside", "write_npy_atomic"]


def _check_parent(path: Path, option: str) -> None:
    parent = path.parent
    for anc in [parent, *parent.parents]:
        if anc.exists():
            if not anc.is_dir():
                raise MdcertError(f"{option} {str(path)!r}: {str(anc)!r} is a file, not a directory; choose another path")
            if not writable(anc):
                raise MdcertError(f"{option} {str(path)!r}: directory {str(anc)!r} is not writable; choose another path")
            return


def writable(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (tried, not guessed: root, read-only mounts, /proc)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    probe = directory / f".mdcert-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


def check_output_file(path: str | os.PathLike, *, option: str, suffixes: tuple[str, ...] = (),
                      must_have_parent: bool = True) -> Path:
    """Validate an output file path before any work: suffix, parent directory, not a directory.

    Raises:
        MdcertError: with one line naming the option, the path and the fix.
    """
    out = Path(path)
    if str(path).strip() == "":
        raise MdcertError(f"{option} is empty; give a file name")
    if suffixes and out.suffix.lower() not in suffixes:
        raise MdcertError(f"{option} {str(out)!r}: use a {' or '.join(suffixes)} file name")
    if out.is_dir():
        raise MdcertError(f"{option} {str(out)!r} is a directory; give a file name")
    if must_have_parent and not out.parent.is_dir():
        if out.parent.exists():
            raise MdcertError(f"{option} {str(out)!r}: {str(out.parent)!r} is not a directory")
        raise MdcertError(f"{option} {str(out)!r}: directory {str(out.parent)!r} does not exist; create it first")
    _check_parent(out, option)
    return out


def check_output_dir(path: str | os.PathLike, *, option: str, overwrite: bool,
                     inputs: dict[str, str | os.PathLike | None] | None = None) -> Path:
    """Validate a run directory before any work: not a file, empty unless ``overwrite`` (and then a
    run directory: it holds a summary.json), writable parent, neither one of ``inputs`` nor containing
    one (`check_outside`).

    Raises:
        MdcertError: with one line naming the option, the path and the fix.
    """
    out = Path(path)
    if str(path).strip() == "":
        raise MdcertError(f"{option} is empty; give a directory name")
    check_outside(out, inputs or {}, option=option)
    if out.exists() and not out.is_dir():
        raise MdcertError(f"{option} {str(out)!r} exists and is not a directory; choose another {option}")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise MdcertError(f"run directory {str(out)!r} exists and is not empty; use --overwrite or another {option}")
        if not (out / "summary.json").is_file():  # never replace a directory of the user's files
            raise MdcertError(f"{option} {str(out)!r} is not an mdcert run directory (it has no summary.json); "
                              f"--overwrite replaces only run directories - choose another {option}")
    _check_parent(out, option)
    return out


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a temporary file next to ``path`` and rename it into place."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        tmp.replace(target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same resolved path (symlinks, ``..``, relative paths) or,
    when both exist, the same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_distinct(outputs: dict[str, str | os.PathLike | None], inputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuse, before any work, an output path that names one of the inputs or another output.

    Args:
        outputs: option -> output path (None: not requested), e.g. ``{"-o": "cert.json"}``.
        inputs: description -> input path, e.g. ``{"the problem file": "problem.npz"}``.

    Raises:
        MdcertError: one line naming both and the fix.
    """
    given = [(opt, Path(path)) for opt, path in outputs.items() if path is not None]
    for k, (opt, out) in enumerate(given):
        for what, path in inputs.items():
            if path is not None and _same_file(out, Path(path)):
                raise MdcertError(f"{opt} {str(out)!r} is {what}; inputs are never overwritten - choose another "
                                  f"output path")
        for opt2, out2 in given[:k]:
            if _same_file(out, out2):
                raise MdcertError(f"{opt} and {opt2} name the same file {str(out)!r}; give two different paths")


def check_outside(path: str | os.PathLike, inputs: dict[str, str | os.PathLike | None], *, option: str) -> None:
    """Refuse, before any work, a run directory that is one of the inputs or contains one: writing the
    run replaces the whole directory (`atomic_dir`), so an input inside it would be deleted.

    Args:
        path: the run directory.
        inputs: description -> input path (None: not given).

    Raises:
        MdcertError: one line naming both and the fix.
    """
    out = Path(os.path.realpath(path))
    for what, given in inputs.items():
        if given is None:
            continue
        inp = Path(os.path.realpath(given))
        if inp == out or out in inp.parents:
            raise MdcertError(f"{option} {str(path)!r} contains {what} {str(given)!r}; the run directory is replaced "
                              f"when it is written - choose another {option} or move the input")


def write_npy_atomic(path: str | os.PathLike, array) -> Path:
    """Write one array as a ``.npy`` file (no pickles) through a temporary name renamed into place."""
    import numpy as np

    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, np.asarray(array), allow_pickle=False)
        tmp.replace(target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


@contextmanager
def atomic_dir(out: str | os.PathLike, *, overwrite: bool) -> Iterator[Path]:
    """Yield a fresh temporary directory next to ``out``; on success it replaces ``out``
    (``overwrite`` needed for a non-empty one), on any failure or interrupt it is removed."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
        check_output_dir(out, option="-o", overwrite=overwrite)
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def check_seed(seed: int, option: str = "--seed", *, bounded: bool = True) -> int:
    """A seed numpy (and, when ``bounded``, torch) accepts: an integer >= 0 (and < 2**63)."""
    if seed < 0 or (bounded and seed >= 2 ** 63):
        raise MdcertError(f"invalid {option} {seed}; give an integer in 0..2**63-1"
                          if bounded else f"invalid {option} {seed}; give an integer >= 0")
    return seed
