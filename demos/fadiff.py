"""FADiff demo: BERT (DOSA variant) on the default Gemmini, layer-wise vs fused (< ~30 s)."""

from __future__ import annotations


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.io.networks import load_network
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.fadiff.baselines import greedy_fusion_baseline
    from twill.mapping.fadiff.train import FADiffSettings, solve
    from twill.mapping.problems import NetworkMappingProblem
    from twill.options import SolverOptions

    net, arch = load_network("dosa_bert"), gemmini_arch()
    options = SolverOptions(seed=0, fadiff=FADiffSettings(steps=120))
    lw = solve(NetworkMappingProblem(net, arch, fusion=False), options)
    gf = greedy_fusion_baseline(net, arch, lw.solution.plan)
    fused = NetworkMappingProblem(net, arch, init=lw.solution.plan,
                                  candidates=(lw.solution.plan, gf.solution.plan))  # fmt: skip
    fd = solve(fused, options)
    t = Table(title="FADiff demo: BERT encoder on Gemmini 16x16, 128 KB SP, 32 KB ACC")
    for col in ("method", "EDP (uJ*cycles)", "energy (uJ)", "cycles", "DRAM (MB)", "fused", "s"):
        t.add_column(col)
    for name, res in (("layerwise-gradient", lw), ("layerwise-greedy-fusion", gf), ("fadiff", fd)):
        rep = res.solution.report
        dram_mb = f"{rep.dram_bytes / 1e6:.2f}"
        t.add_row(name, f"{rep.edp:.4g}", f"{rep.energy_uj:.1f}", f"{rep.cycles:.0f}", dram_mb,
                  str(len(rep.fused)), f"{res.seconds:.1f}")  # fmt: skip
    Console(width=140).print(t)


if __name__ == "__main__":
    run()
