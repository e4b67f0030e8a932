"""Shared fixtures: where the read-only benchmark data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BENCHMARKS = SHARED / "benchmarks"


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    if not BENCHMARKS.is_dir():
        pytest.skip(f"benchmark data not found at {BENCHMARKS}")
    return BENCHMARKS
