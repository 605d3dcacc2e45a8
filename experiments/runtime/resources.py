"""Memory budgets checked before any work (docs/theory.md section 6: memory grows with what the data holds).

A command whose arrays cannot fit is refused with one line naming the estimate and the options that
shrink it, instead of being killed by the kernel's out-of-memory killer half-way (an exit nobody can
catch, after minutes of work). The estimate is of the arrays the command allocates; the budget is
half of `certify.memory.memory_limit` (the machine's memory, or the cgroup limit when one is set: the
project's one reading of it, which certify's own budgets use too).
"""

from __future__ import annotations

from certify.errors import MdcertError
from certify.memory import memory_limit

__all__ = ["check_memory"]


def check_memory(nbytes: int, *, what: str, fix: str, fraction: float = 0.5) -> None:
    """Refuse work whose arrays need more than ``fraction`` of `memory_limit` (one-line MdcertError).

    Args:
        nbytes: the estimated bytes of the arrays.
        what: what needs them (e.g. "200 trajectories of 20000 steps").
        fix: the options that shrink it (e.g. "reduce --trials or --records").
    """
    limit = memory_limit()
    if limit is None or nbytes <= fraction * limit:
        return
    raise MdcertError(
        f"{what} would need about {_gib(nbytes)} of memory, more than {fraction:.0%} of the "
        f"{_gib(limit)} available; {fix}"
    )


def _gib(n: int | float) -> str:
    if n >= 2**40 * 1000:
        return f"{n / 2**40:.3g} TiB"
    return f"{n / 2**30:.3g} GiB"
