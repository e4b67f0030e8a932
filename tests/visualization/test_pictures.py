"""Pictures: text Gantt charts and the pipeline figure (`twill solve ... --plot`)."""

from __future__ import annotations

from twill.cli import main
from twill.kernels import flash_attention_forward_hopper
from twill.sched.exact.algorithm1 import algorithm1
from twill.visualization.text import modulo_gantt, program_gantt


def test_text_gantt_lists_every_copy_per_warp():
    g = flash_attention_forward_hopper()
    r = algorithm1(g)
    text = program_gantt(g, r.schedule, r.assignment, r.I, r.L)
    assert text.count("warp ") == len(set(r.warps.values()))
    assert all(f"{v}.0" in text for v in g.names)
    assert modulo_gantt(g, r.schedule, r.I).count("\n") == len(g.names)


def test_cli_plot_writes_png_and_svg(tmp_path, capsys):
    png, svg = tmp_path / "fa3.png", tmp_path / "fa3.svg"
    assert main(["solve", "flash_attention_forward_hopper", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["solve", "flash_attention_forward_hopper", "--plot", str(svg), "--json"]) == 0
    assert b"<svg" in svg.read_bytes()[:2000]
