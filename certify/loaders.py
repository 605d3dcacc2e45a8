"""Reading untrusted input files within bounds (docs/theory.md section 1; docs/formats.md "Reading input files").

Every file a command reads (a problem ``.npz`` / ``.json``, an initialization ``.npy``) goes through here:

1. `regular_file`: it must be a regular file (after symlinks). A FIFO, a character device (a link to
   ``/dev/zero``) or a socket is refused with one line, never opened (opening a FIFO would wait forever).
2. Sizes before reading: the ``.npz`` central directory gives each member's uncompressed size and
   its ``.npy`` header gives the shape and dtype; a member whose header claims more bytes than it
   holds is refused as corrupt, and the estimated memory (`load_bytes`: the decompressed bytes plus
   `BYTES_PER_NUMBER` per number for the float64 copy and exact views every command makes) must fit
   in half of the memory budget (`certify.memory.default_budget`, or ``mdcert certify
   --memory-budget``); the other half is for the work. A zip bomb is refused after reading headers only.
3. Strict JSON: a duplicated key is refused (which value is meant is ambiguous); numbers keep their
   exact value (``parse_float=Decimal``) until `certify.exactfloat` converts them or refuses them;
   a boolean where a number or a token index is expected is refused.
"""

from __future__ import annotations

import json
import math
import os
import stat
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from certify.memory import default_budget, format_bytes
from certify.errors import MdcertError
from certify.exactfloat import exact_float64, json_float64, json_indices

__all__ = [
    "BYTES_PER_NUMBER",
    "PROBLEM_KEYS",
    "regular_file",
    "load_bytes",
    "check_load",
    "read_npz",
    "read_npy",
    "read_json_object",
    "problem_arrays",
    "check_inits",
    "read_init",
]

#: memory per number read, besides the file's own bytes: its float64 copy (8) and the exact integer
#: views of the data (56: certify.budget counts 48 bytes per exact Python integer, plus its pointer)
BYTES_PER_NUMBER = 64
#: the keys of a problem file (other members of an .npz are not read)
PROBLEM_KEYS = ("X", "y", "z", "v", "alpha", "lengths", "provenance")

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_file(path: str | Path, *, what: str, missing: str) -> Path:
    """``path`` when it is (a link to) a regular file; else one-line `MdcertError`: ``missing`` when it does
    not exist, "is a directory", or "is not a regular file (it is a FIFO ...)"."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise MdcertError(missing) from None
    except OSError as exc:
        raise MdcertError(
            f"cannot read {what} {str(p)!r}: {exc.strerror or type(exc).__name__}"
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise MdcertError(f"{what} {str(p)!r} is a directory; give a file")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
        raise MdcertError(
            f"{what} {str(p)!r} is not a regular file (it is {kind}); give a file saved on disk"
        )
    return p


def load_bytes(file_bytes: int, numbers: int) -> int:
    """Estimated peak memory of reading ``numbers`` numbers from ``file_bytes`` decompressed bytes."""
    return int(file_bytes) + BYTES_PER_NUMBER * int(numbers)


#: a file that needs at most this many bytes to read is always read, whatever the budget (it cannot
#: exhaust memory; a tiny --memory-budget then bounds the solve, which answers no_verified_result)
READ_FLOOR = 1 << 20


def check_load(need: int, *, what: str, budget: int | None, detail: str = "") -> None:
    """Refuse (one line) when ``need`` bytes exceed half of ``budget`` (default `default_budget`) and
    `READ_FLOOR`."""
    budget = default_budget() if budget is None else int(budget)
    if need > budget // 2 and need > READ_FLOOR:
        raise MdcertError(
            f"{what} would need about {format_bytes(need)} of memory to read{detail}, more than "
            f"half of the memory budget {format_bytes(budget)}; give a smaller file (or raise "
            f"mdcert certify --memory-budget)"
        )


def _header(fp, name: str) -> tuple[tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        raise MdcertError(
            f"{name} is a .npy file of format version {version[0]}.{version[1]}; save it with numpy.save"
        )
    if dtype.hasobject:
        raise MdcertError(
            f"cannot read {name}: it holds Python objects (dtype object, never unpickled); "
            f"save numbers with numpy.save"
        )
    return tuple(int(k) for k in shape), dtype


def _claim(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, int]:
    count = math.prod(shape)
    return count, count * dtype.itemsize


def read_npz(
    path: Path, *, keys: tuple[str, ...] | None, what: str, budget: int | None
) -> dict[str, np.ndarray]:
    """The ``.npy`` members of an ``.npz`` (only ``keys`` when given), sizes checked first (module docstring)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":
                raise MdcertError(
                    f"cannot read {what} {str(path)!r}: not a .npz archive; write it with numpy.savez"
                )
        with zipfile.ZipFile(path) as zf:
            infos = [i for i in zf.infolist() if i.filename.endswith(".npy")]
            names = [i.filename[:-4] for i in infos]
            dup = next((k for k in names if names.count(k) > 1), None)
            if dup is not None:
                raise MdcertError(
                    f"cannot read {what} {str(path)!r}: it holds two arrays named {dup!r}; "
                    f"which one is meant is ambiguous"
                )
            chosen = [(k, i) for k, i in zip(names, infos) if keys is None or k in keys]
            heads, total_bytes, total_numbers, largest = {}, 0, 0, (0, "", 0)
            for key, info in chosen:
                with zf.open(info) as fp:
                    shape, dtype = _header(fp, f"{what} {str(path)!r} member {info.filename}")
                count, claimed = _claim(shape, dtype)
                if claimed > info.file_size:
                    raise MdcertError(
                        f"cannot read {what} {str(path)!r}: member {info.filename} claims shape {shape} "
                        f"({claimed} bytes) but holds {info.file_size} bytes; the file is corrupt"
                    )
                heads[key] = info
                total_bytes += claimed
                total_numbers += count
                largest = max(largest, (claimed, info.filename, info.compress_size))
            size, member, packed = largest
            detail = (
                f" ({member} inflates to {format_bytes(size)} from {format_bytes(packed)})"
                if packed and size > 16 * packed
                else ""
            )
            check_load(
                load_bytes(total_bytes, total_numbers),
                what=f"{what} {str(path)!r}",
                budget=budget,
                detail=detail,
            )
            out = {}
            for key, info in heads.items():
                with zf.open(info) as fp:
                    out[key] = np.lib.format.read_array(fp, allow_pickle=False)
            return out
    except MdcertError:
        raise
    except (
        Exception
    ) as exc:  # zipfile.BadZipFile, EOFError, OSError, ValueError (object arrays, bad headers)
        raise MdcertError(f"cannot read {what} {str(path)!r}: {_first_line(exc)}") from None


def read_npy(path: Path, *, what: str, budget: int | None) -> np.ndarray:
    """One ``.npy`` array, its header's claim checked against the file size and the budget first."""
    try:
        with open(path, "rb") as fh:
            shape, dtype = _header(fh, f"{what} {str(path)!r}")
            count, claimed = _claim(shape, dtype)
            held = os.fstat(fh.fileno()).st_size - fh.tell()
            if claimed > held:
                raise MdcertError(
                    f"cannot read {what} {str(path)!r}: its header claims shape {shape} ({claimed} "
                    f"bytes) but the file holds {held}; the file is truncated or corrupt"
                )
            check_load(load_bytes(claimed, count), what=f"{what} {str(path)!r}", budget=budget)
            fh.seek(0)
            return np.lib.format.read_array(fh, allow_pickle=False)
    except MdcertError:
        raise
    except Exception as exc:  # OSError, ValueError (object arrays, bad headers), EOFError
        raise MdcertError(f"cannot read {what} {str(path)!r}: {_first_line(exc)}") from None


def check_inits(W, d: int, *, name: str, stack: bool) -> np.ndarray:
    """Initializations W(0) (docs/theory.md section 2): a (d, d) array, or (K, d, d) when ``stack``, of real
    numbers converted to float64 exactly (`certify.exactfloat`), finite and none the zero matrix (its
    direction is undefined). Returns (K, d, d) when ``stack``, else (d, d). One validator for
    ``mdcert check --init`` and ``mdcert paths --init``."""
    arr = W if isinstance(W, np.ndarray) else np.asarray(W)
    if arr.dtype.kind not in "biuf":
        raise MdcertError(
            f"{name} must hold real numbers (a real numeric array), got dtype {arr.dtype}; "
            f"save float64 values"
        )
    shape = tuple(arr.shape)
    if (
        (arr.ndim != 2 and not (stack and arr.ndim == 3))
        or shape[-2:] != (d, d)
        or (arr.ndim == 3 and not shape[0])
    ):
        raise MdcertError(
            f"{name} has shape {shape}, but the problems have d = {d}: give shape ({d}, {d})"
            f"{f' or (K, {d}, {d})' if stack else ''}"
        )
    arr = exact_float64(name, arr).reshape((-1, d, d))
    finite = np.isfinite(arr).all(axis=(1, 2))
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        raise MdcertError(
            f"{name} contains NaN or Inf{f' (matrix {k})' if stack else ''}; give finite initializations"
        )
    zero = ~np.any(arr != 0, axis=(1, 2))
    if zero.any():
        k = int(np.flatnonzero(zero)[0])
        raise MdcertError(
            f"{name}{f' matrix {k}' if stack else ''} is the zero matrix; its direction is undefined - "
            f"give a nonzero W0"
        )
    return arr if stack else arr[0]


def read_init(path: str | Path, d: int, *, stack: bool, budget: int | None = None) -> np.ndarray:
    """An ``--init`` file: a ``.npy`` array (or an ``.npz`` holding one), read within bounds (`read_npy`),
    validated by `check_inits`."""
    what = "--init"
    p = regular_file(
        path,
        what=what,
        missing=f"--init file not found: {str(path)!r} (the initialization W0); "
        f"save W0 with numpy.save('W0.npy', W0)",
    )
    try:
        with open(p, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise MdcertError(f"cannot read {what} {str(p)!r}: {_first_line(exc)}") from None
    if magic == b"\x93NUMPY":
        W = read_npy(p, what=what, budget=budget)
    elif magic[:4] == b"PK\x03\x04":
        arrays = read_npz(p, keys=None, what=what, budget=budget)
        if len(arrays) != 1:
            raise MdcertError(
                f"{what} {str(p)!r} holds {len(arrays)} arrays; give a .npy file with one array "
                f"(numpy.save('W0.npy', W0))"
            )
        W = next(iter(arrays.values()))
    else:
        raise MdcertError(
            f"{what} {str(p)!r} is not a NumPy .npy file; save W0 with numpy.save('W0.npy', W0)"
        )
    return check_inits(W, d, name=f"{what} {str(p)!r}", stack=stack)


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise MdcertError(
                f"duplicate key {key[:40]!r} in a JSON object; each key may appear once "
                f"(which value is meant is ambiguous)"
            )
        out[key] = value
    return out


def read_json_object(path: Path, *, what: str, budget: int | None) -> dict:
    """A JSON object from a file: no duplicate keys, numbers as exact int / `Decimal`."""
    size = path.stat().st_size
    check_load(load_bytes(size, size), what=f"{what} {str(path)!r}", budget=budget)
    try:
        data = json.loads(
            path.read_bytes().decode("utf-8"),
            object_pairs_hook=_pairs,
            parse_float=Decimal,
            parse_int=int,
        )
    except MdcertError as exc:
        raise MdcertError(f"cannot read {what} {str(path)!r}: {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise MdcertError(
            f"cannot read {what} {str(path)!r}: not valid JSON ({_first_line(exc)})"
        ) from None
    except Exception as exc:  # RecursionError, OSError
        raise MdcertError(f"cannot read {what} {str(path)!r}: {_first_line(exc)}") from None
    if not isinstance(data, dict):
        raise MdcertError(f"{str(path)!r} must hold a JSON object with keys X, y, z, v")
    return data


def problem_arrays(data: dict) -> dict:
    """The problem fields of a parsed JSON object, numbers converted exactly (`certify.exactfloat`):
    X, y, z, v as float64 arrays, alpha and lengths as lists of ints (or exact floats); other values
    (provenance, an alpha string) unchanged."""
    out = dict(data)
    for key in ("X", "y", "z", "v"):
        if key in out and out[key] is not None:
            out[key] = json_float64(key, out[key])
    for key in ("alpha", "lengths"):
        if isinstance(out.get(key), (list, bool, int, Decimal)):
            out[key] = json_indices(key, out[key])
    if "provenance" in out:
        out["provenance"] = _plain(out["provenance"])
    return out


def _plain(value: Any) -> Any:
    """Provenance as plain JSON values (a Decimal becomes its float; provenance is not data)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    return (text.splitlines()[0] if text else type(exc).__name__)[:160]
