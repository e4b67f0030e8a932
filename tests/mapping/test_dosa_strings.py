"""parse_dosa_mappings (a column of DOSA strings at once) against parse_dosa_mapping: the
same factors, orders and kept tensors on every admitted string, and every string it does not
admit is left to the scalar parser (which refuses it or reads another spelling)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from twill.mapping.dosa_strings import parse_dosa_mappings
from twill.mapping.mapping import parse_dosa_mapping
from twill.mapping.workload import OPERANDS

EDGE = [
    "L3[WIO] K2 - L2[] N1 K2X C3X - L1[OW] C2 - L0[W] P2",  # empty and reordered keeps
    "L3[WIO] K2 K2X - L2[WI] N1 - L1[O] - L0[W] P2 Q3X",  # same dimension temporal and spatial
    "L3[WIO] K123456789 - L2[WI] - L1[O] - L0[W] P1X",  # nine digits
    "L0[W] P2 - L1[O] C2 - L2[WI] N1 - L3[WIO] K2",  # levels listed innermost first
]
REFUSED_OR_OTHER = [
    "L3[WIO] K2 K4 - L2[WI] N1 - L1[O] C2 - L0[W] P2",  # a loop twice
    "L3[WIO] K2 - L2[WI] N1 - L1[O] C2 - L3[W] P2",  # a level twice, L0 missing
    "L3[WIO] K2 - L2[WI] N1 - L1[O] C2",  # three levels
    "L4[WIO] K2 - L3[WIO] K2 - L2[WI] N1 - L1[O] C2 - L0[W] P2",  # five levels
    "L3[wio] k2 - L2[WI] N1 - L1[O] C2 - L0[W] P2",  # lower case
    "L3[WIO] K0 - L2[WI] - L1[O] - L0[W]",  # a zero factor
    "L3[WIO] K01 - L2[WI] - L1[O] - L0[W]",  # a leading zero
    "L3[WIO] G2 - L2[WI] - L1[O] - L0[W]",  # a group loop
    "L3 K2 - L2 - L1 - L0",  # no keeps
    "L3[WIO]  K2 - L2[WI] - L1[O] - L0[W]",  # two spaces
    "L3[WIO] K2 - L2[WI] - L1[O] - L0[W] -",
    "",
    "garbage",
]


def _same(text: str, got, b: int) -> None:
    m = parse_dosa_mapping(text)
    assert np.array_equal(got.temporal[b], np.array(m.temporal)), text
    assert np.array_equal(got.spatial[b], np.array(m.spatial)), text
    assert np.array_equal(got.order[b], [[d.index for d in lv] for lv in m.order]), text
    assert np.array_equal(got.keeps[b], [[v in k for v in OPERANDS] for k in m.keeps]), text


def test_every_shipped_string_and_the_edge_cases(benchmark_data: Path):
    with open(benchmark_data / "dosa" / "timeloop_sample.csv", encoding="utf-8") as fh:
        texts = [r["mapping.mapping"] for r in csv.DictReader(fh)]
    got = parse_dosa_mappings([*texts, *EDGE], 4)
    assert got.ok.all()
    for b, text in enumerate([*texts, *EDGE]):
        _same(text, got, b)


@pytest.mark.parametrize("text", REFUSED_OR_OTHER)
def test_what_is_not_admitted_is_left_to_the_scalar_parser(text):
    got = parse_dosa_mappings([EDGE[0], text, EDGE[1]], 4)
    assert got.ok.tolist() == [True, False, True]
    _same(EDGE[0], got, 0)
    _same(EDGE[1], got, 2)  # a rejected row between two good ones leaves them intact
    assert (got.temporal[1] == 1).all() and not got.keeps[1].any()


def test_no_strings():
    got = parse_dosa_mappings([], 4)
    assert got.temporal.shape == (0, 4, 7) and got.ok.shape == (0,)
