"""Tests of the benchmark scripts (their code paths at tiny sizes)."""
