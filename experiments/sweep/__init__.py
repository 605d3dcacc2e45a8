"""Parameter sweeps of mdcert commands (``mdcert sweep``): grids of jobs, content-keyed records, local and Ray engines."""

from __future__ import annotations

__all__: list[str] = []
