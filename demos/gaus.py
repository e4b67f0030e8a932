"""GauS demo: one formulation-A run on a GS-Schedule graph against list scheduling, and the
Hopper FlashAttention kernel modulo-scheduled at II = 4."""

from __future__ import annotations

from pathlib import Path


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.gaus_solver import GauSSolver, gaus_solve_twill_graph
    from twill.io.gml import read_gml
    from twill.kernels import flash_attention_forward_hopper
    from twill.sched.baselines.list_sched import list_schedule

    table = Table(title="GauS (formulation A: 100 * peak + communication; C: modulo MaxLive)")
    for col in ("graph", "method", "formulation", "legal", "objective", "II", "seconds"):
        table.add_column(col)
    gml = Path(__file__).resolve().parents[1] / "data/gs_schedule"
    path = gml / "rand_graph_sparse_1000_1.gml"
    if path.exists():
        g = read_gml(path)
        for r in (GauSSolver(g, max_iters=600).solve_resource(), list_schedule(g, "A")):
            table.add_row(
                g.name, r.method, "A", str(r.legal), f"{r.objective:.4g}", "-", f"{r.seconds:.1f}"
            )
    r = gaus_solve_twill_graph(flash_attention_forward_hopper(), target_II=4, D=20)
    table.add_row(
        "fa_fwd_hopper",
        "gaus",
        "C",
        str(r.legal),
        f"{r.objective:.4g}",
        str(r.II),
        f"{r.seconds:.1f}",
    )
    Console(width=140).print(table)


if __name__ == "__main__":
    run()
