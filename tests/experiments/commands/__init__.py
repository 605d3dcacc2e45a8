"""Tests (mirrors the package layout)."""
