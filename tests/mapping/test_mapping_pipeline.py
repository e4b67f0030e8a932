"""Whole networks: weighted totals, parallel executors (local pool, Ray)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from twill.mapping.arch import simba_arch
from twill.mapping.pipeline import map_network
from twill.mapping.workload import Layer
from twill.options import SolverOptions

LAYERS = [
    Layer("a", {"P": 7, "Q": 7, "C": 32, "K": 32}, count=2),
    Layer("b", {"C": 64, "K": 16}, count=1),
]


def test_serial_totals_weighted():
    res = map_network(
        LAYERS,
        simba_arch(),
        methods=("cosa", "random"),
        executor="serial",
        options={"cosa": SolverOptions(time_limit=30)},
    )
    for m in ("cosa", "random"):
        tot = res.total(m)
        per = res.results[m]
        assert tot.cycles == 2 * per[0].solution.report.cycles + per[1].solution.report.cycles
        assert tot.energy_pj == pytest.approx(
            2 * per[0].solution.report.energy_pj + per[1].solution.report.energy_pj
        )
    d = res.to_dict()
    assert len(d["layers"]) == 2 and set(d["totals"]) == {"cosa", "random"}
    assert {t["name"] for t in d["totals"].values()} == {res.network}  # not "a+b+..."


def test_local_pool_matches_serial():
    serial = map_network(
        LAYERS,
        simba_arch(),
        methods=("random",),
        executor="serial",
        options={"random": SolverOptions(seed=4)},
    )
    pool = map_network(
        LAYERS,
        simba_arch(),
        methods=("random",),
        executor="local",
        workers=2,
        options={"random": SolverOptions(seed=4)},
    )
    assert [str(r.solution.mapping) for r in serial.results["random"]] == [
        str(r.solution.mapping) for r in pool.results["random"]
    ]


def test_a_layer_reached_after_the_deadline_is_unknown_at_once():
    """Issue 51: a task whose turn comes after the deadline builds no model (2-3 s a layer on
    a loaded machine, past the command's limit): UNKNOWN at once, saying why."""
    import time

    from twill.deadline import Deadline
    from twill.results import Status

    t0 = time.monotonic()
    res = map_network(LAYERS * 4, simba_arch(), methods=("cosa",), executor="serial",
                      options={"cosa": SolverOptions(deadline=Deadline.after(0))})  # fmt: skip
    assert time.monotonic() - t0 < 0.5
    for r in res.results["cosa"]:
        assert r.status is Status.UNKNOWN and r.solution is None
        assert r.stats["stopped"] == "time_limit" and "not started" in r.stats["message"]


def _remove_new_ray_sessions(root: Path, before: set[Path] | None) -> None:
    """Ray keeps each local session's logs under ``/tmp/ray``; remove what this test made."""
    if before is None:
        shutil.rmtree(root, ignore_errors=True)
        return
    for entry in set(root.iterdir()) - before if root.exists() else ():
        if entry.is_symlink() or entry.is_file():
            entry.unlink(missing_ok=True)
        else:
            shutil.rmtree(entry, ignore_errors=True)


def test_ray_local_instance():
    ray = pytest.importorskip("ray", reason="ray not installed (optional extra [ray])")
    root = Path(tempfile.gettempdir()) / "ray"
    before = set(root.iterdir()) if root.exists() else None
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        res = map_network(
            LAYERS,
            simba_arch(),
            methods=("random",),
            executor="ray",
            options={"random": SolverOptions(seed=4)},
        )
        assert all(r.solution.report.valid for r in res.results["random"])
        assert res.executor == "ray"
    finally:
        ray.shutdown()
        _remove_new_ray_sessions(root, before)
