"""`make demo`, part phase1: the four kernels and a HatScheT loop through Twill Phase 1.

Each graph is solved with CBC (the paper's solver) and CP-SAT; the table shows the bounds, the
minimum I with its proof status, L and the time of each backend.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HATSCHET_LOOP = ROOT / "data" / "hatschet" / "cTest" / "iir_biqu.graphml"


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.io import load_graph
    from twill.kernels import KERNELS
    from twill.twill_solver import twill_solve

    specs = list(KERNELS)
    if HATSCHET_LOOP.is_file():
        specs.append(str(HATSCHET_LOOP))
    table = Table(title="Twill Phase 1: minimum initiation interval with proof")
    for col in ("graph", "ops", "ResMII", "RecMII", "I (cbc)", "L", "proven", "cbc s",
                "I (cpsat)", "cpsat s", "schedule (cbc)"):  # fmt: skip
        table.add_column(col)
    for spec in specs:
        graph = load_graph(spec)
        cbc = twill_solve(graph, backend="cbc", phase2=False)  # Phase 1: the modulo problem
        cp = twill_solve(graph, backend="cpsat", phase2=False)
        sched = cbc.schedule or {}
        shown = ", ".join(f"{n}@{t}" for n, t in sorted(sched.items(), key=lambda kv: kv[1]))
        if len(shown) > 48:
            shown = shown[:45] + "..."
        table.add_row(graph.name, str(len(graph.instructions)), str(cbc.res_mii),
                      str(cbc.rec_mii), str(cbc.I), str(cbc.L),
                      "yes" if cbc.optimal and cp.optimal else "NO", f"{cbc.seconds:.2f}",
                      str(cp.I), f"{cp.seconds:.2f}", shown)  # fmt: skip
    Console(width=170).print(table)


if __name__ == "__main__":
    run()
