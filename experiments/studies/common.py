"""Option parsing shared by the study kinds: model sizes and optimizer lists (docs/theory.md section 6.5)."""

from __future__ import annotations

from certify.errors import MdcertError

__all__ = ["parse_sizes", "parse_optimizers"]


def parse_sizes(text: str, *, allowed: tuple[int, ...]) -> list[int]:
    """``"3,4,6"`` -> ``[3, 4, 6]``; each must be one of ``allowed``; no repeats."""
    parts = [s.strip() for s in str(text).split(",")]
    if not parts or any(not s.isdigit() for s in parts):
        raise MdcertError(f"--size {text!r}: give sizes like 3 or 3,4,6")
    sizes = [int(s) for s in parts]
    bad = [s for s in sizes if s not in allowed]
    if bad:
        raise MdcertError(f"--size {bad[0]}: use one of {', '.join(map(str, allowed))}")
    if len(set(sizes)) != len(sizes):
        raise MdcertError(f"--size {text!r} repeats a size")
    return sizes


def parse_optimizers(text: str, grids: dict) -> list:
    """``"1.1,2,3,adam"`` -> `OptimizerSpec` list; each needs a step-size grid in ``grids``; GD (p = 2) first
    is not required, but the paired differences of the report need it in the list."""
    from experiments.studies.train import parse_optimizer

    specs = [parse_optimizer(s) for s in str(text).split(",")]
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise MdcertError(f"--optimizers {text!r} repeats an optimizer")
    for s in specs:
        if s.key not in grids:
            known = ", ".join(k[1:] if k.startswith("p") else k for k in grids)
            raise MdcertError(f"--optimizers: no step-size grid for {s.label}; use {known}")
    return specs
