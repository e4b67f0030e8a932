"""Demo of Twill Phase 2: joint software pipelining + warp specialisation of the example kernels."""

from __future__ import annotations


def run() -> None:
    from rich.console import Console
    from rich.table import Table

    from twill.kernels import KERNELS
    from twill.sched.exact.algorithm1 import algorithm1

    table = Table(title="Twill Phase 2 (Algorithm 1: minimum I with a warp assignment)")
    for col in ("kernel", "Phase-1 I", "I", "L", "optimal", "warps (slot: ops)", "seconds"):
        table.add_column(col)
    for name, factory in KERNELS.items():
        r = algorithm1(factory())
        by_slot: dict[int, list[str]] = {}
        for op, w in (r.warps or {}).items():
            by_slot.setdefault(w, []).append(op)
        warps = "; ".join(f"{w}: {','.join(ops)}" for w, ops in sorted(by_slot.items()))
        table.add_row(name, str(r.phase1_I), str(r.I), str(r.L), str(r.optimal), warps,
                      f"{r.seconds:.2f}")  # fmt: skip
    Console(width=200).print(table)


if __name__ == "__main__":
    run()
