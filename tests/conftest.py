"""Shared fixtures: where the benchmark data shipped with the repository lives (``data/``)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The benchmark data shipped in the repository (``data/SUITE/...``, each with LICENSE and SOURCE).
BENCHMARKS = ROOT / "data"


@pytest.fixture(scope="session")
def benchmark_data() -> Path:
    """``data/`` at the repository root. It ships with the repository, so a missing folder is an
    error, never a skip."""
    assert BENCHMARKS.is_dir(), f"benchmark data missing: {BENCHMARKS}"
    return BENCHMARKS


@pytest.fixture(scope="session")
def chstone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 263 CHStone loops (``data/hatschet/ChStone.tar.xz``), unpacked once per session:
    the folder of ``BENCH/graphN.graphml`` and ``BENCH/graphN_RM.xml``."""
    import tarfile

    out = tmp_path_factory.mktemp("chstone")
    with tarfile.open(BENCHMARKS / "hatschet" / "ChStone.tar.xz") as tar:
        tar.extractall(out, filter="data")
    return out / "ChStone"
