"""experiments.runtime: how experiments run, as opposed to what they compute.

`experiments.runtime.pool` is mdcert's one process pool (worker processes with per-task timeouts,
per-task attribution of a worker's death, kill on shutdown and on Ctrl-C);
`experiments.runtime.store` the one content-keyed run store; `outputs` (atomic files and run
directories), `progress`, `resources`, `figures` and `terminal` the rest of the shared plumbing.
"""

__all__: list[str] = []
