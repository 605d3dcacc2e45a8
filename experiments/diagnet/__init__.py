"""Diagonal linear networks trained by gradient descent, smoothed sign descent and Adam
(arXiv 2410.14158; docs/theory.md section 8.5)."""

from __future__ import annotations

from experiments.diagnet.engine import DiagConfig, DiagResult, DiagStatus, Rule, run_diag_paths

__all__ = ["DiagConfig", "DiagResult", "DiagStatus", "Rule", "run_diag_paths"]
