"""``benchmarks/gaus_epfl.py`` runs each method in a child process: a child that passes the
resident-memory limit is stopped and its row says so; one within it reports its row."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import gaus_epfl  # noqa: E402  (the benchmark script itself)


def _hungry(method, g, form, D, II_, args) -> dict:  # noqa: ANN001
    hoard = bytearray(400 * 2**20)  # 400 MB, every page touched
    for k in range(0, len(hoard), 4096):
        hoard[k] = 1
    time.sleep(30)
    return {"objective": 1.0, "legal": True, "seconds": 30.0, "note": "finished"}


def _modest(method, g, form, D, II_, args) -> dict:  # noqa: ANN001
    return {"objective": 2.0, "legal": True, "seconds": 0.0, "note": "finished"}


def test_a_method_above_the_memory_limit_is_stopped_and_reported(monkeypatch) -> None:
    monkeypatch.setattr(gaus_epfl, "run_method", _hungry)
    args = argparse.Namespace(rss_limit_gb=0.2)
    t0 = time.perf_counter()
    row = gaus_epfl.in_child("cpsat", None, "B", 10, None, args)
    assert time.perf_counter() - t0 < 20  # stopped, not left to finish its 30 s
    assert row["objective"] is None and not row["legal"]
    assert row["note"].startswith("out of memory") and row["peak_rss_mb"] > 200


def test_a_method_within_the_limit_reports_its_row(monkeypatch) -> None:
    monkeypatch.setattr(gaus_epfl, "run_method", _modest)
    row = gaus_epfl.in_child("list", None, "A", 10, None, argparse.Namespace(rss_limit_gb=16))
    assert row["objective"] == 2.0 and row["note"] == "finished" and row["peak_rss_mb"] > 0
