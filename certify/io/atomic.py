"""The one atomic writer of mdcert: every file and run directory appears complete or not at all.

A file is written to a fresh temporary name in the target's own folder (`tempfile.mkstemp`, so two
writers never share one and no existing file is ever opened), flushed and fsynced, then renamed over
the target with `os.replace` (atomic on POSIX: a reader sees the old file or the new one). On any
failure or interrupt the temporary file, and only it, is removed. Concurrent writers to one path
leave one writer's complete file (the last rename wins). A run directory is built the same way
(`atomic_dir`); replacing an existing one moves it aside atomically and then deletes only the files
the caller says it may delete (docs/formats.md, "Outputs are atomic").

Temporary names are ``.NAME.tmp-XXXXXXXX`` (hidden, next to NAME); files get the mode a plain
``open`` would give them (0666 less the umask), directories 0777 less the umask.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Callable, Collection, Iterator, Mapping

from certify.errors import MdcertError

__all__ = [
    "atomic_file",
    "atomic_dir",
    "write_bytes_atomic",
    "write_text_atomic",
    "write_npy_atomic",
    "write_npz_atomic",
    "tmp_prefix",
]


def tmp_prefix(target: Path) -> str:
    """The prefix of ``target``'s temporary names: ``.NAME.tmp-`` (what a clean-up may look for)."""
    return f".{target.name}.tmp-"


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``/proc/self/status``)."""
    with suppress(OSError, ValueError):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_own(path: str | Path) -> None:
    """Remove a temporary file this process created (gone already: nothing to do)."""
    with suppress(FileNotFoundError):
        os.unlink(path)


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a fresh temporary file next to ``path`` for writing; when the block ends normally it is
    flushed, fsynced and renamed over ``path``; on any exception (interrupts included) it is removed
    and ``path`` is untouched.

    Args:
        path: the target file (its folder must exist).
        mode: ``"wb"`` (bytes) or ``"w"`` (text, UTF-8).

    Yields:
        The open file object.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_file mode must be 'wb' or 'w', not {mode!r}")
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=tmp_prefix(target), dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            fd = -1  # the file object owns it now
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        _remove_own(tmp)
        raise
    _fsync_dir(target.parent)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (`atomic_file`); returns the path."""
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (`atomic_file`); returns the path."""
    with atomic_file(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_npy_atomic(path: str | os.PathLike, array) -> Path:
    """Write one array as a ``.npy`` file atomically (no pickles: an object array raises
    ValueError)."""
    import numpy as np

    with atomic_file(path, "wb") as fh:
        np.save(fh, np.asarray(array), allow_pickle=False)
    return Path(path)


def write_npz_atomic(
    path: str | os.PathLike, arrays: Mapping[str, object], *, compressed: bool = False
) -> Path:
    """Write named arrays as one ``.npz`` file (``numpy.savez`` or, ``compressed``,
    ``savez_compressed``) atomically; returns the path."""
    import numpy as np

    save = np.savez_compressed if compressed else np.savez
    with atomic_file(path, "wb") as fh:
        save(fh, **arrays)
    return Path(path)


def _fsync_tree(root: Path) -> None:
    """fsync every regular file and folder under ``root`` (what a rename of ``root`` publishes)."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with suppress(OSError):
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        _fsync_dir(Path(folder))


def _inside(folder: Path, rel: str) -> Path | None:
    """``folder / rel`` when ``rel`` is a plain relative path that stays inside ``folder`` through
    real folders (no ``..``, no absolute path, no symlinked folder on the way), else None."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        return None
    path = folder.joinpath(*parts)
    expected = os.path.join(os.path.realpath(folder), *parts[:-1]).rstrip(os.sep)
    if os.path.realpath(path.parent) != expected:
        return None
    return path


def _purge(folder: Path, files: Collection[str]) -> list[str]:
    """Delete the listed files (relative paths) under ``folder``, then the folders holding them once
    empty, then ``folder`` itself if empty; returns what was left (never deleted: not listed)."""
    folders = {folder}
    for rel in files:
        path = _inside(folder, rel)
        if path is None:
            continue
        if path.is_symlink() or path.is_file():
            with suppress(FileNotFoundError):
                path.unlink()
        folders.update(p for p in path.parents if folder in p.parents)
    for sub in sorted(folders, key=lambda p: -len(p.parts)):
        with suppress(OSError):
            os.rmdir(sub)  # only empty folders go
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@contextmanager
def atomic_dir(
    out: str | os.PathLike, *, replaceable: Callable[[Path], Collection[str]] | None = None
) -> Iterator[Path]:
    """Yield a fresh temporary folder next to ``out``; when the block ends normally it becomes
    ``out``, on any exception it is removed (with everything the block wrote in it).

    ``out`` absent or an empty folder: the temporary folder is renamed into place. ``out`` a
    non-empty folder: refused (`MdcertError`) unless ``replaceable`` is given; ``replaceable(out)``
    must then check ``out`` (raising `MdcertError` to refuse) and return the relative paths of the
    files in it that may be deleted. The old folder is renamed aside (``.NAME.old-XXXXXXXX``), the
    new one renamed in, and only those files (and the folders they leave empty) are deleted;
    anything else found there stays in the aside folder, named on stderr. If the new folder cannot
    be renamed in, the old one is moved back.

    Raises:
        MdcertError: ``out`` became non-empty, or is not replaceable, when the block ends.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=tmp_prefix(out), dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        _fsync_tree(tmp)
        _commit_dir(tmp, out, replaceable)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(out.parent)


def _commit_dir(
    tmp: Path, out: Path, replaceable: Callable[[Path], Collection[str]] | None
) -> None:
    """Rename ``tmp`` to ``out`` (see `atomic_dir`)."""
    try:
        os.rename(tmp, out)  # succeeds when out is absent or an empty folder
        return
    except OSError:
        if out.is_symlink() or not out.is_dir():
            raise MdcertError(
                f"{str(out)!r} exists and is not a directory (or is a symbolic "
                f"link); nothing was written - choose another output "
                f"directory"
            ) from None
    if replaceable is None:
        raise MdcertError(
            f"{str(out)!r} was filled by another process while this one ran; "
            f"nothing was replaced - choose another output directory"
        )
    files = replaceable(out)
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    try:
        os.rename(out, aside)  # onto an empty folder: atomic
    except FileNotFoundError:  # removed meanwhile: nothing to replace
        os.rmdir(aside)
        os.rename(tmp, out)
        return
    except BaseException:
        with suppress(OSError):
            os.rmdir(aside)
        raise
    try:
        os.rename(tmp, out)
    except BaseException:
        with suppress(OSError):
            os.rename(aside, out)  # put the old run back
        raise
    left = _purge(aside, files)
    if left:
        print(
            f"note: kept {len(left)} file(s) that appeared in {str(out)!r} while it was replaced "
            f"(e.g. {left[0]!r}) in {str(aside)!r}",
            file=sys.stderr,
        )
