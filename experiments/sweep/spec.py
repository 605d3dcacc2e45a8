"""The SPEC file of ``mdcert sweep`` (TOML, or YAML): a kind and a grid, validated before any job starts.

    kind = "certify"
    description = "optional text"
    [grid]
    problem = ["a.npz", "data/*.npz"]   # files relative to the SPEC; glob patterns expand, sorted
    p = ["1.75", "2"]                   # exact decimals (numbers are read through their shortest repr)
    alpha = ["opt"]
    digits = [30]
    # an integer axis may be a range: seed = { start = 0, stop = 100 }

Every grid value is a non-empty list (or an integer range); the jobs are the Cartesian product of
the axes, generated lazily in the SPEC's order. Unknown keys, empty grids, missing files, bad types
and values the command would refuse (p <= 1, say: every grid point goes through the command's own
parser and config, `JobKind.validate`) raise `MdcertError` with one line.
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from certify.errors import MdcertError

from experiments.sweep.kinds import JobKind, Param, ParamType, get_kind, kind_names

__all__ = ["Axis", "SweepSpec", "load_spec", "MAX_JOBS", "MAX_AXIS", "MAX_SPEC_BYTES"]

#: largest grid accepted (the product of the axes' lengths)
MAX_JOBS = 10**7
#: most values of one axis (a range longer than this is refused)
MAX_AXIS = 10**6
#: largest SPEC file read
MAX_SPEC_BYTES = 16 * 2**20
TOP_KEYS = ("kind", "grid", "description")


@dataclass(frozen=True)
class Axis:
    """One swept parameter: its command-line values and their labels (as written in the SPEC)."""

    name: str
    values: tuple
    labels: tuple[str, ...]
    is_file: bool = False


@dataclass(frozen=True)
class SweepSpec:
    """A validated SPEC: ``kind``, the axes in the SPEC's order, and the SPEC's own bytes' sha256."""

    path: Path
    kind: str
    axes: tuple[Axis, ...]
    description: str
    sha256: str
    text: str

    @property
    def size(self) -> int:
        """Number of grid points (jobs before de-duplication by content key)."""
        return math.prod(len(a.values) for a in self.axes)

    def job_kind(self) -> JobKind:
        return get_kind(self.kind)

    def points(self) -> Iterator[tuple[dict, dict]]:
        """Lazily, every grid point as (command values, labels), in the SPEC's axis order."""
        names = [a.name for a in self.axes]
        for combo in itertools.product(*(range(len(a.values)) for a in self.axes)):
            yield (
                {n: a.values[i] for n, a, i in zip(names, self.axes, combo)},
                {n: a.labels[i] for n, a, i in zip(names, self.axes, combo)},
            )


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a SPEC file (``.toml``, ``.yaml`` or ``.yml``).

    Raises:
        MdcertError: one line naming the SPEC, the key and the fix.
    """
    spec_path = Path(path)
    if not spec_path.is_file():
        what = "is a directory" if spec_path.is_dir() else "not found"
        raise MdcertError(f"SPEC {str(path)!r} {what}; give a .toml or .yaml sweep file")
    suffix = spec_path.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise MdcertError(f"SPEC {str(path)!r}: use a .toml or .yaml file")
    if spec_path.stat().st_size > MAX_SPEC_BYTES:
        raise MdcertError(
            f"SPEC {str(path)!r} is larger than {MAX_SPEC_BYTES // 2**20} MB; use glob "
            f"patterns and ranges instead of listing every value"
        )
    raw = spec_path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MdcertError(f"SPEC {str(path)!r} is not UTF-8 text") from None
    data = _parse(text, suffix, spec_path.name)
    try:
        return _validate(data, spec_path, text, hashlib.sha256(raw).hexdigest())
    except MdcertError as exc:
        raise MdcertError(f"SPEC {spec_path.name}: {exc}") from None


def _parse(text: str, suffix: str, name: str) -> object:
    if suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise MdcertError(f"SPEC {name} is not valid TOML: {exc}") from None
        except RecursionError:  # tomllib recurses once per nested array or table
            raise MdcertError(f"SPEC {name} is nested too deeply") from None
    try:
        import yaml
    except ImportError:
        raise MdcertError(
            f"SPEC {name}: reading YAML needs PyYAML (pip install 'mdcert[ray]', or pip install "
            f"pyyaml); or write the SPEC as .toml"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise MdcertError(f"SPEC {name} is not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise MdcertError(f"SPEC {name} is nested too deeply") from None


def _validate(data: object, spec_path: Path, text: str, sha: str) -> SweepSpec:
    if not isinstance(data, dict):
        raise MdcertError("the SPEC must be a table with keys kind and grid (see docs/formats.md)")
    for key in data:
        if key not in TOP_KEYS:
            raise MdcertError(f"unknown key {key!r}; a SPEC has the keys {', '.join(TOP_KEYS)}")
    if "kind" not in data:
        raise MdcertError(f'missing kind; add kind = "certify" (one of {", ".join(kind_names())})')
    kind = get_kind(data["kind"])
    description = data.get("description", "")
    if not isinstance(description, str):
        raise MdcertError("description must be a string")
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise MdcertError(
            'empty grid; add a [grid] table with at least one list of values, e.g. p = ["2"]'
        )
    allowed = [p.name for p in kind.params]
    for key in grid:
        if kind.param(key) is None:
            raise MdcertError(
                f"unknown key grid.{key} for kind {kind.name!r}; the grid takes {', '.join(allowed)}"
            )
    for p in kind.params:
        if p.required and p.name not in grid:
            raise MdcertError(f"grid.{p.name} is required for kind {kind.name!r}")
    axes = tuple(_axis(kind.param(key), grid[key], spec_path.parent) for key in grid)
    spec = SweepSpec(spec_path, kind.name, axes, description, sha, text)
    if spec.size > MAX_JOBS:
        raise MdcertError(
            f"the grid has {spec.size} jobs; at most {MAX_JOBS} (split it into several SPECs)"
        )
    _validate_points(spec, kind)
    return spec


def _validate_points(spec: SweepSpec, kind: JobKind) -> None:
    """Every grid point's argv through the command's own parser and validation (`JobKind.validate`,
    writing into an empty stand-in record directory): a value the command would refuse is refused
    now, with the grid point and the command's one line, not in every job."""
    import tempfile

    checked: set[tuple[str, ...]] = set()
    with tempfile.TemporaryDirectory(prefix="mdcert-sweep-check-") as record:
        for values, labels in spec.points():
            argv = kind.argv(values, record)
            if tuple(argv) in checked:
                continue
            checked.add(tuple(argv))
            try:
                kind.validate(argv)
            except (MdcertError, ValueError) as exc:
                point = ", ".join(f"{k}={v}" for k, v in labels.items())
                line = " ".join(str(exc).split())
                raise MdcertError(
                    f"grid point ({point}): mdcert {kind.command} refuses it: {line}"
                ) from None


def _axis(param: Param, raw: object, base: Path) -> Axis:
    key = f"grid.{param.name}"
    if param.type is ParamType.INT and isinstance(raw, dict):
        raw = _int_range(raw, key)
    if not isinstance(raw, list):
        raise MdcertError(
            f"{key} must be a list of values, like {param.name} = [...]; got {type(raw).__name__}"
        )
    if not raw:
        raise MdcertError(f"empty grid: {key} is an empty list; give at least one value")
    if param.type is ParamType.FILE:
        paths = [p for item in raw for p in _files(item, key, base)]
        labels = tuple(_label(p, base) for p in paths)
        return Axis(param.name, tuple(str(p) for p in paths), labels, is_file=True)
    values = [_value(param, item, key) for item in raw]
    seen: set = set()
    for v in values:
        if (type(v), v) in seen:
            raise MdcertError(f"{key} lists {v!r} twice; give each value once")
        seen.add((type(v), v))
    return Axis(param.name, tuple(values), tuple(str(v) for v in values))


def _int_range(table: dict, key: str) -> list:
    extra = set(table) - {"start", "stop", "step"}
    if extra or "stop" not in table:
        raise MdcertError(
            f"{key}: a range is {{ start = 0, stop = 100, step = 1 }} (stop required, excluded)"
        )
    bounds = [table.get("start", 0), table["stop"], table.get("step", 1)]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) or bounds[2] == 0:
        raise MdcertError(f"{key}: range start, stop and step must be integers (step not 0)")
    r = range(*bounds)
    if len(r) > MAX_AXIS:
        raise MdcertError(f"{key}: the range has {len(r)} values; at most {MAX_AXIS} per axis")
    return list(r)


def _value(param: Param, item: object, key: str) -> object:
    if param.convert is not None:
        item = param.convert(item)
    t = param.type
    bad = MdcertError(f"{key}: {item!r} is not {_expect(param)}")
    if isinstance(item, bool) != (t is ParamType.BOOL):
        raise bad
    if t is ParamType.BOOL:
        value: object = item
    elif t is ParamType.INT:
        if not isinstance(item, int):
            raise bad
        value = item
    elif t is ParamType.FLOAT:
        if not isinstance(item, (int, float)) or not math.isfinite(item):
            raise bad
        value = float(item)
    elif t is ParamType.DECIMAL:
        if isinstance(item, float):
            if not math.isfinite(item):
                raise bad
            value = repr(item)
        elif isinstance(item, (int, str)):
            value = str(item).strip()
        else:
            raise bad
    else:  # TEXT
        if not isinstance(item, (str, int)):
            raise bad
        value = str(item).strip()
        if param.choices and value not in param.choices:
            raise MdcertError(f"{key}: {item!r} is not one of {', '.join(param.choices)}")
    return value


def _expect(param: Param) -> str:
    return {
        ParamType.BOOL: "true or false",
        ParamType.INT: "an integer",
        ParamType.FLOAT: "a finite number",
        ParamType.DECIMAL: 'a decimal number (a string like "1.75", or a number)',
        ParamType.TEXT: "a string",
        ParamType.FILE: "a file path",
    }[param.type]


def _files(item: object, key: str, base: Path) -> list[Path]:
    if not isinstance(item, str) or not item.strip():
        raise MdcertError(f"{key}: {item!r} is not a file path (a string, relative to the SPEC)")
    pattern = item if Path(item).is_absolute() else str(base / item)
    if glob.has_magic(item):
        found = sorted(Path(m) for m in glob.glob(pattern) if Path(m).is_file())
        if not found:
            raise MdcertError(
                f"{key}: the pattern {item!r} matches no file (relative to the SPEC's folder {str(base)!r})"
            )
        return [f.resolve() for f in found]
    path = Path(pattern)
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "not found"
        raise MdcertError(
            f"{key}: {item!r} {what} (paths are relative to the SPEC's folder {str(base)!r})"
        )
    return [path.resolve()]


def _label(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base.resolve()))
    except ValueError:
        return str(path)
