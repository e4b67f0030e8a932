"""FADiff demo: BERT (DOSA variant) on the default Gemmini, layer-wise vs fused (< ~30 s)."""

from __future__ import annotations


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.io.networks import load_network
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.fadiff.baselines import greedy_fusion_baseline
    from twill.mapping.fadiff.train import fadiff

    net, arch = load_network("dosa_bert"), gemmini_arch()
    lw = fadiff(net, arch, fusion=False, steps=120, seed=0)
    gf = greedy_fusion_baseline(net, arch, lw.plan)
    fd = fadiff(net, arch, steps=120, seed=0, init=lw.plan, candidates=[lw.plan, gf.plan])
    t = Table(title="FADiff demo: BERT encoder on Gemmini 16x16, 128 KB SP, 32 KB ACC")
    for col in ("method", "EDP (uJ*cycles)", "energy (uJ)", "cycles", "DRAM (MB)", "fused", "s"):
        t.add_column(col)
    for name, rep, sec in (
        ("layerwise-gradient", lw.report, lw.seconds),
        ("layerwise-greedy-fusion", gf.report, gf.seconds),
        ("fadiff", fd.report, fd.seconds),
    ):
        t.add_row(
            name,
            f"{rep.edp:.4g}",
            f"{rep.energy_uj:.1f}",
            f"{rep.cycles:.0f}",
            f"{rep.dram_bytes / 1e6:.2f}",
            str(len(rep.fused)),
            f"{sec:.1f}",
        )
    Console(width=140).print(t)


if __name__ == "__main__":
    run()
