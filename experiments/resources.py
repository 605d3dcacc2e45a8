"""Memory budgets checked before any work (docs/theory.md section 6: memory grows with what the data holds).

A command whose arrays cannot fit is refused with one line naming the estimate and the options that
shrink it, instead of being killed by the kernel's out-of-memory killer half-way (an exit nobody can
catch, after minutes of work). The estimate is of the arrays the command allocates; the budget is
half of the machine's memory (or of the cgroup limit, when one is set). `usable_cpus` (from `certify.blas`)
counts the CPUs this process may run on (the default worker counts of `mdcert study` and `mdcert sweep`).
"""

from __future__ import annotations

from certify.blas import usable_cpus
from certify.errors import MdcertError
from certify.memory import memory_limit

__all__ = ["memory_limit", "check_memory", "usable_cpus"]


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
    raise MdcertError(f"{what} would need about {_gib(nbytes)} of memory, more than {fraction:.0%} of the "
                      f"{_gib(limit)} available; {fix}")


def _gib(n: int | float) -> str:
    if n >= 2 ** 40 * 1000:
        return f"{n / 2 ** 40:.3g} TiB"
    return f"{n / 2 ** 30:.3g} GiB"
