"""Named networks resolve where the user says (argument, ``--workloads``, ``$TWILL_WORKLOADS``)
or where they stand (``../shared`` from the current folder): the root is never searched for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from twill.cli import main
from twill.errors import InvalidProblemError
from twill.io.networks import WORKLOADS_ENV, default_workload_root, load_network


def test_default_root_follows_env_then_current_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(WORKLOADS_ENV, str(tmp_path))
    assert default_workload_root() == tmp_path.resolve()
    monkeypatch.delenv(WORKLOADS_ENV)
    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    assert default_workload_root() == (tmp_path / "shared/benchmarks/dosa/workloads").resolve()


def test_explicit_root_is_used_and_a_wrong_one_is_a_clear_error(
    shared_benchmarks: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ../shared from here: only the explicit root can work
    shutil.copytree(shared_benchmarks / "dosa/workloads/bert", tmp_path / "wl/bert")
    net = load_network("bert", tmp_path / "wl")
    assert net.layers and str(tmp_path / "wl") in net.source
    with pytest.raises(InvalidProblemError, match="layers.yaml not found"):
        load_network("bert", tmp_path / "nowhere")


def test_fuse_workloads_option_names_the_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["fuse", "bert", "--workloads", str(tmp_path / "nowhere"), "--steps", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "layers.yaml not found" in err
