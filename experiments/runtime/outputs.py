"""Output-path checks and run directories shared by the ``mdcert`` commands.

Every command validates its output paths *before* the work starts (so a typo in ``-o`` does not
waste a long run) and writes through `certify.io.atomic` (re-exported here): an output appears
complete or not at all, and no file the command did not create is removed.

A run directory (`run_dir`: ``mdcert paths``, ``regpath``, ``demo``) carries a marker,
``.mdcert-run``: JSON with its kind, mdcert's version and the files mdcert wrote in it (``mdcert
plot`` adds its figures). ``--overwrite`` replaces only a directory whose marker names the same kind
and that holds nothing but the files listed there; the old run is moved aside atomically and only
its listed files are deleted once the new one is in place (docs/formats.md, "Outputs are atomic").
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from certify.errors import MdcertError
from certify.io.atomic import atomic_dir, write_npy_atomic, write_npz_atomic, write_text_atomic

__all__ = [
    "check_output_file",
    "check_output_dir",
    "write_text_atomic",
    "write_npy_atomic",
    "write_npz_atomic",
    "atomic_dir",
    "run_dir",
    "run_files",
    "write_marker",
    "add_run_files",
    "read_marker",
    "MARKER",
    "check_seed",
    "writable",
    "check_distinct",
    "check_outside",
]

#: the marker file of a run directory (see the module docstring)
MARKER = ".mdcert-run"
MARKER_FORMAT = "mdcert-run/1"


def _check_parent(path: Path, option: str) -> None:
    parent = path.parent
    for anc in [parent, *parent.parents]:
        if anc.exists():
            if not anc.is_dir():
                raise MdcertError(
                    f"{option} {str(path)!r}: {str(anc)!r} is a file, not a directory; choose another path"
                )
            if not writable(anc):
                raise MdcertError(
                    f"{option} {str(path)!r}: directory {str(anc)!r} is not writable; choose another path"
                )
            return


def writable(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (tried, not guessed: root, read-only mounts, /proc)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        probe = tempfile.mkdtemp(prefix=".mdcert-probe-", dir=directory)  # never a user's name
    except OSError:
        return False
    os.rmdir(probe)
    return True


def check_output_file(
    path: str | os.PathLike,
    *,
    option: str,
    suffixes: tuple[str, ...] = (),
    must_have_parent: bool = True,
) -> Path:
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
        raise MdcertError(
            f"{option} {str(out)!r}: directory {str(out.parent)!r} does not exist; create it first"
        )
    _check_parent(out, option)
    return out


def check_output_dir(
    path: str | os.PathLike,
    *,
    option: str,
    overwrite: bool,
    kind: str | None = None,
    inputs: dict[str, str | os.PathLike | None] | None = None,
) -> Path:
    """Validate a run directory before any work: not a file, empty unless ``overwrite`` (and then a
    run directory of ``kind`` that mdcert wrote: `run_files`), writable parent, neither one of
    ``inputs`` nor containing one (`check_outside`).

    Raises:
        MdcertError: with one line naming the option, the path and the fix.
    """
    out = Path(path)
    if str(path).strip() == "":
        raise MdcertError(f"{option} is empty; give a directory name")
    check_outside(out, inputs or {}, option=option)
    if out.is_symlink():
        raise MdcertError(
            f"{option} {str(out)!r} is a symbolic link; give the directory itself (a "
            f"run directory is renamed into place when written)"
        )
    if out.exists() and not out.is_dir():
        raise MdcertError(
            f"{option} {str(out)!r} exists and is not a directory; choose another {option}"
        )
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise MdcertError(
                f"run directory {str(out)!r} exists and is not empty; use --overwrite or another {option}"
            )
        if kind is None:
            raise TypeError("check_output_dir(overwrite=True) needs the run kind")
        run_files(out, kind=kind, option=option)  # never replace a directory of the user's files
    _check_parent(out, option)
    return out


def read_marker(folder: str | os.PathLike) -> dict | None:
    """The marker of a run directory (format, kind, mdcert_version, files), or None when ``folder``
    has no readable, well-formed one."""
    path = Path(folder) / MARKER
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 2**22:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != MARKER_FORMAT:
        return None
    files = data.get("files")
    if not isinstance(data.get("kind"), str) or not isinstance(files, list):
        return None
    return data if all(isinstance(f, str) for f in files) else None
    return data


def _entries(folder: Path) -> Iterator[tuple[str, bool]]:
    """``(relative path, is a real folder)`` of everything under ``folder`` (links not followed)."""
    with os.scandir(folder) as it:
        for entry in it:
            real_dir = entry.is_dir(follow_symlinks=False)
            yield entry.name, real_dir
            if real_dir:
                yield from ((os.path.join(entry.name, r), d) for r, d in _entries(Path(entry.path)))


def run_files(folder: str | os.PathLike, *, kind: str, option: str = "-o") -> frozenset[str]:
    """The files of ``folder`` that ``--overwrite`` may delete: it must be a run directory of
    ``kind`` written by mdcert (its marker says so) holding nothing but the files its marker lists
    (and the folders they are in).

    Raises:
        MdcertError: one line naming the directory, what is wrong and the fix.
    """
    out = Path(folder)
    marker = read_marker(out)
    if marker is None:
        raise MdcertError(
            f"{option} {str(out)!r} is not an mdcert run directory (it has no valid "
            f"{MARKER} marker); --overwrite replaces only a run mdcert wrote - "
            f"choose another {option}"
        )
    if marker["kind"] != kind:
        raise MdcertError(
            f"{option} {str(out)!r} holds a {marker['kind']!r} run, not a {kind!r} "
            f"run; --overwrite replaces only a run of the same kind - choose another "
            f"{option}"
        )
    files = {os.path.normpath(f) for f in marker["files"]} | {MARKER}
    folders = {str(parent) for f in files for parent in Path(f).parents if str(parent) != "."}
    for rel, is_dir in _entries(out):
        if rel not in (folders if is_dir else files):
            raise MdcertError(
                f"{option} {str(out)!r} holds {rel!r}, which mdcert did not write; "
                f"--overwrite never removes it - move it away or choose another "
                f"{option}"
            )
    return frozenset(files)


def _marker_text(kind: str, files: Iterable[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        mdcert_version = version("mdcert")
    except PackageNotFoundError:
        mdcert_version = "unknown"
    return (
        json.dumps(
            {
                "format": MARKER_FORMAT,
                "kind": kind,
                "mdcert_version": mdcert_version,
                "files": sorted(set(files) - {MARKER}),
            },
            indent=1,
        )
        + "\n"
    )


@contextmanager
def run_dir(out: str | os.PathLike, *, kind: str, overwrite: bool) -> Iterator[Path]:
    """Build a run directory of ``kind`` in a temporary folder (`atomic_dir`) and put it in place
    at the end of the block, with its marker listing every file written in it. ``overwrite``: an
    existing run of the same kind is replaced (`run_files` decides what may be deleted); otherwise
    a non-empty ``out`` is refused.

    Raises:
        MdcertError: ``out`` is not empty and not replaceable.
    """
    replaceable = (lambda d: run_files(d, kind=kind)) if overwrite else None
    with atomic_dir(out, replaceable=replaceable) as tmp:
        yield tmp
        write_marker(tmp, kind)


def write_marker(folder: str | os.PathLike, kind: str) -> Path:
    """Write ``folder``'s marker listing every file now under it (a directory built in place)."""
    folder = Path(folder)
    files = [rel for rel, is_dir in _entries(folder) if not is_dir]
    return write_text_atomic(folder / MARKER, _marker_text(kind, files))


def add_run_files(folder: str | os.PathLike, paths: Iterable[str | os.PathLike]) -> None:
    """Add files just written into a run directory (``mdcert plot``'s figures) to its marker; a
    folder without a marker is left as it is."""
    folder = Path(folder)
    marker = read_marker(folder)
    if marker is None:
        return
    added = [os.path.relpath(p, folder) for p in paths]
    write_text_atomic(folder / MARKER, _marker_text(marker["kind"], [*marker["files"], *added]))


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same resolved path (symlinks, ``..``, relative paths) or,
    when both exist, the same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_distinct(
    outputs: dict[str, str | os.PathLike | None], inputs: dict[str, str | os.PathLike | None]
) -> None:
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
                raise MdcertError(
                    f"{opt} {str(out)!r} is {what}; inputs are never overwritten - choose another "
                    f"output path"
                )
        for opt2, out2 in given[:k]:
            if _same_file(out, out2):
                raise MdcertError(
                    f"{opt} and {opt2} name the same file {str(out)!r}; give two different paths"
                )


def check_outside(
    path: str | os.PathLike, inputs: dict[str, str | os.PathLike | None], *, option: str
) -> None:
    """Refuse, before any work, a run directory that is one of the inputs or contains one: writing the
    run replaces the directory (`run_dir`), so an input inside it could be deleted.

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
            raise MdcertError(
                f"{option} {str(path)!r} contains {what} {str(given)!r}; the run directory is replaced "
                f"when it is written - choose another {option} or move the input"
            )


def check_seed(seed: int, option: str = "--seed", *, bounded: bool = True) -> int:
    """A seed numpy (and, when ``bounded``, torch) accepts: an integer >= 0 (and < 2**63)."""
    if seed < 0 or (bounded and seed >= 2**63):
        raise MdcertError(
            f"invalid {option} {seed}; give an integer in 0..2**63-1"
            if bounded
            else f"invalid {option} {seed}; give an integer >= 0"
        )
    return seed
