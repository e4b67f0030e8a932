"""The layer and architecture examples in docs/formats.md read as documented."""

from __future__ import annotations

import re
from pathlib import Path

from twill.io.timeloop import read_arch, read_layer

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


def _yaml_block(starting_with: str) -> str:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    (block,) = [b for b in blocks if b.startswith(starting_with)]
    return block


def test_layer_example(tmp_path: Path) -> None:
    (tmp_path / "conv.yaml").write_text(_yaml_block("problem:"))
    layer = read_layer(tmp_path / "conv.yaml")
    assert layer.macs == 3 * 3 * 56 * 56 * 64 * 128


def test_arch_example(tmp_path: Path) -> None:
    (tmp_path / "arch.yaml").write_text(_yaml_block("arch:"))
    arch = read_arch(tmp_path / "arch.yaml")
    assert [lv.name for lv in arch.levels][-1] == "DRAM"
    assert arch.macs == 256 and arch.level("GlobalBuffer").energy_pj == 2.0
