"""``twill solve``'s text report for people (issue 38): the certificate summarised in runs, the
reservation table only when it fits, and times named "units" with their scale in SM clocks when
the graph's costs are normalised."""

from __future__ import annotations

import json
from pathlib import Path

from twill.cli import main
from twill.kernels import flash_attention_forward_simplified
from twill.sched.exact.search import CertificateEntry
from twill.triton import SHIPPED_DIR
from twill.twill_solver import twill_solve
from twill.visualization.text import clocks_per_unit, format_result, summarise_certificate

DATA = Path(__file__).resolve().parents[1] / "data"


def test_certificate_runs():
    class R:
        res_mii, rec_mii = 58, 3
        certificate = (
            *(CertificateEntry(i, "below_bound", "ResMII") for i in range(1, 58)),
            CertificateEntry(58, "infeasible", "cpsat", 0.25),
            CertificateEntry(59, "infeasible", "cpsat", 0.5),
            CertificateEntry(60, "unknown", "cpsat", 10.0),
        )

    assert summarise_certificate(R()) == [
        "I = 1..57 excluded: ResMII 58",
        "I = 58..59 proven infeasible (cpsat, 0.75 s)",
        "I = 60 UNKNOWN (cpsat hit its limit, 10.00 s)",
    ]


def test_units_scale_and_table_width():
    graph = flash_attention_forward_simplified()
    result = twill_solve(graph, max_I=5)
    assert clocks_per_unit(graph) == 1024
    short = format_result(result, graph, width=20)
    assert "I = 2 units" in short and "1 unit = 1,024 SM clocks" in short
    assert "certificate: I = 1 excluded: ResMII 2" in short
    assert "modulo reservation table: 2 slots" in short and "TC (cap 1)" not in short
    full = format_result(result, graph, width=20, verbose=True)
    assert "TC (cap 1)  | S | O" in full and "I=1: excluded by ResMII" in full


def test_json_names_the_time_unit(capsys):
    ttgir = str(SHIPPED_DIR / "gemm.sm_90a.ttgir")
    assert main(["solve", ttgir, "--arch", "sm_90a", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["time_unit"], d["sm_clocks_per_unit"]) == ("units", 64.0)
    assert main(["solve", str(DATA / "circt_canis14_fig2.yaml"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["time_unit"] == "cycles" and "sm_clocks_per_unit" not in d
