"""Formulation C on EPFL designs whose long carry chains defeat time-order placement."""

from __future__ import annotations

import sys
from pathlib import Path

from twill.io.aiger import read_aiger
from twill.sched.baselines.list_sched import list_schedule
from twill.sched.gaus.bounds import default_D
from twill.sched.gaus.graph import asap_alap, gaus_view
from twill.sched.gaus.legalise import legalise_modulo
from twill.sched.gaus.verify import schedule_violations

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from gaus_modulo import pipelined  # noqa: E402  (the benchmark's pipelined variant)


def test_adder_carry_chain_gets_a_legal_modulo_schedule(benchmark_data) -> None:
    # 257 first-level gates fill two of the eight congruence classes; placed in time order,
    # the 256-gate carry chain then loses two steps in eight and ends at step 339 > D - 1.
    graph = pipelined(read_aiger(benchmark_data / "epfl" / "adder.aig"), 8)
    g = gaus_view(graph)
    D = default_D(g, "C", 8)
    asap, _ = asap_alap(g, D)
    t, msg = legalise_modulo(g, asap.astype(float), 8, D)
    assert t is not None, msg
    assert schedule_violations(g, t, D, 8) == []
    r = list_schedule(graph, "C", D=D, II=8)
    assert r.legal and r.objective is not None
