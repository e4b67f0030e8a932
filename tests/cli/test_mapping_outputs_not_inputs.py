"""Output paths never name a file the command reads, implicit inputs included (the
``mapspace.yaml`` beside ``--arch``, a network folder's layers), also through links."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from twill.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "cosa"
LAYER = "problem: {R: 1, S: 1, P: 4, Q: 4, C: 8, K: 8, N: 1}\n"


@pytest.fixture
def arch_dir(tmp_path):
    d = tmp_path / "arch"
    d.mkdir()
    shutil.copy(DATA / "arch" / "simba.yaml", d / "simba.yaml")
    shutil.copy(DATA / "arch" / "mapspace.yaml", d / "mapspace.yaml")
    (tmp_path / "l.yaml").write_text(LAYER)
    return d


def _refused(capsys, argv, victim: Path) -> None:
    before = victim.read_bytes()
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "refusing to overwrite the input file" in err, err
    assert victim.read_bytes() == before


def test_map_o_never_overwrites_the_mapspace_beside_the_arch(capsys, arch_dir):
    ms = arch_dir / "mapspace.yaml"
    argv = ["map", str(arch_dir.parent / "l.yaml"), "--arch", str(arch_dir / "simba.yaml")]
    _refused(capsys, [*argv, "-o", str(ms)], ms)
    _refused(capsys, [*argv, "-o", str(arch_dir / ".." / "arch" / "mapspace.yaml")], ms)
    link = arch_dir.parent / "link.yaml"
    link.symlink_to(ms)
    _refused(capsys, [*argv, "-o", str(link)], ms)
    hard = arch_dir.parent / "hard.yaml"
    os.link(ms, hard)
    _refused(capsys, [*argv, "-o", str(hard)], ms)


def test_map_network_plot_never_overwrites_a_layer(capsys, tmp_path):
    d = tmp_path / "net"
    d.mkdir()
    (d / "a.yaml").write_text(LAYER)
    (d / "layers.yaml").write_text("[a]\n")
    _refused(capsys, ["map-network", str(d), "--arch", "simba", "--plot", str(d / "a.yaml")],
             d / "a.yaml")  # fmt: skip


def test_solve_o_and_plot_must_differ(capsys, tmp_path):
    out = tmp_path / "x.png"
    code = main(["solve", "flash_attention_forward_simplified", "-o", str(out), "--plot", str(out)])
    assert code == 2 and "name the same file" in capsys.readouterr().err
    assert not out.exists()
