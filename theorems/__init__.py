"""theorems: the paper's hypotheses as three-valued certified predicates (HOLDS / FAILS / UNDECIDED)."""

__all__: list[str] = []
