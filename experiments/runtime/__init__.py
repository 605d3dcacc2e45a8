"""What the experiments run on: the content-keyed run store (`experiments.runtime.store`)."""

__all__: list[str] = []
