"""The out-of-process solver worker imports the running twill only: a ``twill/`` package or a
``pyscipopt.py`` in the current directory (or on ``PYTHONPATH``) is never imported."""

from __future__ import annotations

from pathlib import Path

from tests.mapping.mappers import mapped
from twill.mapping.arch import simba_arch
from twill.mapping.workload import Layer
from twill.results import Status

EVIL = "import pathlib; pathlib.Path({marker!r}).write_text('imported')\n"


def _plant(folder: Path, marker: Path) -> None:
    code = EVIL.format(marker=str(marker))
    for rel in ("twill/__init__.py", "twill/mapping/__init__.py",
                "twill/mapping/cosa/__init__.py", "twill/mapping/cosa/worker.py"):  # fmt: skip
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(code)
    (folder / "pyscipopt.py").write_text(code)


def test_scip_worker_ignores_a_twill_package_in_the_cwd(tmp_path, monkeypatch):
    cwd, marker = tmp_path / "work", tmp_path / "marker"
    cwd.mkdir()
    _plant(cwd, marker)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PYTHONPATH", f".:{cwd}")
    res = mapped("cosa", Layer("fc", {"C": 8, "K": 8}), simba_arch(), backend="scip", time_limit=20)
    assert not marker.exists(), "the worker imported code from the working directory"
    assert res.status is Status.OPTIMAL and res.solution.report.valid
