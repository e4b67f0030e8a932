"""Mapping demo: the golden Timeloop check, then CoSA vs random best-of-5 on ResNet-50 layers."""

from __future__ import annotations

from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "data"
GOLDEN = (
    "L5[WIO] Q7 P2 - L4[IO] K4X Q2X P2X - L3[I] Q4X P2X - L2[W] K2 - "
    "L1[O] K4 C16 K2X C4X - L0[W] P7"
)


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.mapping.arch import simba_arch
    from twill.mapping.cost import evaluate
    from twill.mapping.mapping import parse_dosa_mapping
    from twill.mapping.pipeline import map_layer
    from twill.mapping.problems import LayerMappingProblem
    from twill.mapping.workload import Layer
    from twill.options import SolverOptions

    con = Console(width=140)
    arch = simba_arch()
    r50_5 = Layer("_outputs_input.5", {"P": 56, "Q": 56, "C": 64, "K": 64})
    rep = evaluate(r50_5, arch, parse_dosa_mapping(GOLDEN))
    con.print(
        f"golden Simba mapping: {rep.cycles:,} cycles (Timeloop 12,544), "
        f"{rep.energy_uj:.3f} µJ (Timeloop 17.03)"
    )
    layers = [
        r50_5,
        Layer("_outputs_input.8", {"R": 3, "S": 3, "P": 56, "Q": 56, "C": 64, "K": 64}),
        Layer("_outputs_3356", {"C": 2048, "K": 1000}),
    ]
    if (BENCH / "cosa").is_dir():
        from twill.io.timeloop import read_layer

        wl = BENCH / "cosa" / "workloads" / "resnet50_graph"
        layers = [read_layer(wl / f"{x.name}.yaml") for x in layers]
    t = Table(title="CoSA (CP-SAT) vs random best-of-5 on Simba, ResNet-50 layers")
    for col in ("layer", "CoSA obj", "status", "CoSA cycles", "rand5 cycles", "CoSA µJ",
                "rand5 µJ", "CoSA s"):  # fmt: skip
        t.add_column(col)
    for layer in layers:
        problem = LayerMappingProblem(layer, arch)
        c = map_layer(problem, "cosa", SolverOptions(time_limit=30, seed=0))
        r = map_layer(problem, "random", SolverOptions(seed=0))
        if c.solution is None or r.solution is None:
            t.add_row(layer.name, "-", c.status.value, "-", "-", "-", "-", f"{c.seconds:.1f}")
            continue
        crep, rrep = c.solution.report, r.solution.report
        t.add_row(layer.name, f"{c.objective:.4f}", c.status.value, f"{crep.cycles:,}",
                  f"{rrep.cycles:,}", f"{crep.energy_uj:.2f}", f"{rrep.energy_uj:.2f}",
                  f"{c.seconds:.1f}")  # fmt: skip
    con.print(t)


if __name__ == "__main__":
    run()
