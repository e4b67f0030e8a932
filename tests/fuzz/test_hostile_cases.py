"""Hand-written hostile inputs for every reader and every command: each must end in exit 2
with one message naming the file and the item, no traceback, in bounded time and memory.

Cases marked ``sub`` could use unbounded memory or time if a guard were missing; they run in
a subprocess under an address-space and a wall-clock limit (see ``conftest.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

GRAPH = """format: twill-graph/1
name: g
machine: {{name: m, functional_units: {{TC: 1}}{machine}}}
instructions:
  - {{name: a, cycles: {cycles}, reservation: {{TC: [1]}}}}
  - {{name: b, cycles: 1, reservation: {{TC: [1]}}}}
edges:
  - {{src: a, dst: b, delay: {delay}}}
  - {{src: b, dst: a, delay: 1, distance: {distance}}}
"""


def graph(cycles: object = 1, delay: object = 1, distance: object = 1, machine: str = "") -> str:
    text = GRAPH.format(cycles=cycles, delay=delay, distance=distance, machine=machine)
    if cycles != 1:  # keep the reservation table the length of cycles only when small
        text = text.replace(
            "cycles: " + str(cycles) + ", reservation: {TC: [1]}", f"cycles: {cycles}"
        )
    return text


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)
DEEP_YAML = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_JSON = '{"a": ' + "[" * 100000 + "]" * 100000 + "}"
DOSA_HEADER = (
    "mapping.mapping,arch.meshX,arch.mem1_instances,arch.mem2_entries,"
    "prob.R,prob.S,prob.P,prob.Q,prob.C,prob.K,prob.N,arch.mem1_depth\n"
)
ENTITY_BOMB = (
    '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(7))
    + "]><graphml>&h;</graphml>"
)
NODE_A = (
    '<graphml><graph><node id="1"><data key="name">a</data>'
    '<data key="uses_resource">A</data></node></graph></graphml>'
)
BIG_GRAPH = "machine: {functional_units: {}}\ninstructions:\n" + "".join(
    f"  - {{name: n{i}, cycles: 100000}}\n" for i in range(300)
)
LAYER = "problem: {{R: 3, S: 3, P: 8, Q: 8, C: {C}, K: 16, N: 1}}\n"
HUGE = "9" * 5000

SIMBA = Path(__file__).resolve().parents[2] / "data/cosa/arch/simba.yaml"
GEMMINI = Path(__file__).resolve().parents[2] / "data/dosa/hw/gemmini/arch/arch.yaml"


def _simba_with(old: str, new: str) -> str:
    text = SIMBA.read_text()
    assert old in text
    return text.replace(old, new, 1)


# (id, files, argv, words the message must contain, run in a limited subprocess)
CASES: list[tuple[str, dict[str, str | bytes], list[str], list[str], bool]] = [
    # ---- graph JSON / YAML
    ("yaml-bomb", {"g.yaml": BOMB}, ["bounds", "{d}/g.yaml"], ["g.yaml", "alias"], True),
    ("yaml-deep", {"g.yaml": DEEP_YAML}, ["bounds", "{d}/g.yaml"], ["g.yaml", "nest"], True),
    ("json-deep", {"g.json": DEEP_JSON}, ["bounds", "{d}/g.json"], ["g.json", "nest"], True),
    (
        "yaml-dup-key",
        {"g.yaml": graph() + "name: h\n"},
        ["bounds", "{d}/g.yaml"],
        ["g.yaml", "duplicate", "name"],
        False,
    ),
    (
        "json-dup-key",
        {"g.json": '{"name": "a", "name": "b"}'},
        ["bounds", "{d}/g.json"],
        ["g.json", "duplicate"],
        False,
    ),
    ("yaml-huge-int", {"g.yaml": graph(delay=HUGE)}, ["bounds", "{d}/g.yaml"], ["g.yaml"], False),
    (
        "json-huge-int",
        {"g.json": '{"a": ' + HUGE + "}"},
        ["bounds", "{d}/g.json"],
        ["g.json"],
        False,
    ),
    (
        "latency-1e9",
        {"g.yaml": graph(cycles=10**9)},
        ["solve", "{d}/g.yaml"],
        ["g.yaml", "cycles", "at most"],
        True,
    ),
    (
        "delay-2^63",
        {"g.yaml": graph(delay=2**63)},
        ["solve", "{d}/g.yaml"],
        ["g.yaml", "delay", "at most"],
        True,
    ),
    (
        "distance-1e9",
        {"g.yaml": graph(distance=10**9)},
        ["solve", "{d}/g.yaml"],
        ["g.yaml", "distance", "at most"],
        True,
    ),
    (
        "warps-1e6",
        {"g.yaml": graph(machine=", warps: 1000000")},
        ["solve", "{d}/g.yaml"],
        ["g.yaml", "warps", "at most"],
        True,
    ),
    (
        "model-size",
        {"g.yaml": BIG_GRAPH},
        ["solve", "{d}/g.yaml"],
        ["g.yaml", "too large to model", "limit"],
        True,
    ),
    (
        "delay-float",
        {"g.yaml": graph(delay=1.5)},
        ["bounds", "{d}/g.yaml"],
        ["g.yaml", "delay"],
        False,
    ),
    (
        "delay-nan",
        {"g.yaml": graph(delay=".nan")},
        ["bounds", "{d}/g.yaml"],
        ["g.yaml", "delay"],
        False,
    ),
    (
        "binary-json",
        {"g.json": b"\xff\xfe\x00garbage"},
        ["bounds", "{d}/g.json"],
        ["g.json"],
        False,
    ),
    ("empty-yaml", {"g.yaml": ""}, ["solve", "{d}/g.yaml"], ["g.yaml"], False),
    ("codegen-bad", {"g.yaml": "[1, 2"}, ["codegen", "{d}/g.yaml"], ["g.yaml"], False),
    # ---- HatScheT
    (
        "graphml-garbage",
        {"l.graphml": "<graphml><graph>", "lRM.xml": "<x/>"},
        ["solve", "{d}/l.graphml"],
        ["l.graphml"],
        False,
    ),
    (
        "graphml-entity-bomb",
        {
            "l.graphml": ENTITY_BOMB,
            "lRM.xml": "<x/>",
        },
        ["bounds", "{d}/l.graphml"],
        ["l.graphml"],
        True,
    ),
    (
        "graphml-latency-huge",
        {
            "l.graphml": NODE_A,
            "lRM.xml": (
                '<M><Resources><Resource name="A" limit="1" latency="1" '
                'blockingTime="99999999999"/></Resources></M>'
            ),
        },
        ["solve", "{d}/l.graphml"],
        ["lRM.xml", "blockingTime", "at most"],
        True,
    ),
    # ---- GS-Schedule GML (gaus)
    (
        "gml-trailing",
        {"g.gml": 'graph [ node [ id 0 label "0" ] ] garbage ]'},
        ["gaus", "{d}/g.gml"],
        ["g.gml", "trailing"],
        False,
    ),
    (
        "gml-deep",
        {"g.gml": "graph " + "[ x " * 50000 + "]" * 50000},
        ["gaus", "{d}/g.gml"],
        ["g.gml", "nest"],
        True,
    ),
    ("gml-empty-graph", {"g.gml": "graph [ directed 1 ]"}, ["gaus", "{d}/g.gml"], ["g.gml"], False),
    (
        "gml-huge-param",
        {"g.gml": 'graph [ node [ id 0 label "0" parameter ' + HUGE + " ] ]"},
        ["gaus", "{d}/g.gml"],
        ["g.gml"],
        False,
    ),
    (
        "gaus-empty-json",
        {"g.json": '{"machine": {"functional_units": {}}, "instructions": []}'},
        ["gaus", "{d}/g.json"],
        ["g.json"],
        False,
    ),
    # ---- AIGER
    (
        "aiger-2e9",
        {"a.aig": b"aig 2000000000 1 0 1 1999999999\n2\n"},
        ["gaus", "{d}/a.aig"],
        ["a.aig"],
        True,
    ),
    (
        "aiger-literal-range",
        {"a.aig": b"aag 3 2 0 1 1\n2\n4\n6\n6 2 99\n"},
        ["gaus", "{d}/a.aag"],
        ["a.aag"],
        False,
    ),
    ("aiger-garbage", {"a.aig": b"aig x y z\n"}, ["gaus", "{d}/a.aig"], ["a.aig"], False),
    # ---- Timeloop layer / arch / mapping YAML
    (
        "layer-string-dim",
        {"l.yaml": LAYER.format(C='"abc"')},
        ["map", "{d}/l.yaml", "--arch", str(SIMBA)],
        ["l.yaml", "C"],
        False,
    ),
    (
        "layer-huge-dim",
        {"l.yaml": LAYER.format(C=HUGE)},
        ["map", "{d}/l.yaml", "--arch", str(SIMBA)],
        ["l.yaml"],
        False,
    ),
    (
        "layer-dim-1e12",
        {"l.yaml": LAYER.format(C=10**12)},
        ["map", "{d}/l.yaml", "--arch", str(SIMBA)],
        ["l.yaml", "C", "at most"],
        True,
    ),
    (
        "layer-bomb",
        {"l.yaml": BOMB},
        ["map", "{d}/l.yaml", "--arch", str(SIMBA)],
        ["l.yaml", "alias"],
        True,
    ),
    (
        "arch-deep",
        {"a.yaml": "arch: " + "{a: " * 3000 + "1" + "}" * 3000},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "nest"],
        True,
    ),
    (
        "arch-v03-deep",
        {
            "a.yaml": "architecture:\n  subtree:\n"
            + "".join(
                "  " * (i + 2) + "- name: n\n" + "  " * (i + 3) + "subtree:\n" for i in range(60)
            )
            + "  " * 62
            + "- name: DRAM\n"
        },
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml"],
        True,
    ),
    (
        "arch-negative-mesh",
        {"a.yaml": _simba_with("instances: 1024", "instances: -4")},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "instances"],
        False,
    ),
    (
        "arch-nan-energy",
        {"a.yaml": _simba_with("word-bits: 8", "word-bits: 8\n    energy_pj: .nan")},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "energy_pj"],
        False,
    ),
    (
        "arch-inf-energy",
        {"a.yaml": _simba_with("word-bits: 8", "word-bits: 8\n    energy_pj: .inf")},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "energy_pj"],
        False,
    ),
    (
        "arch-string-entries",
        {"a.yaml": _simba_with("entries: 64", "entries: lots")},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "entries"],
        False,
    ),
    (
        "arch-zero-block",
        {"a.yaml": _simba_with("entries: 64", "entries: 64\n    block-size: 0")},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "block-size"],
        False,
    ),
    (
        "arch-negative-bandwidth",
        {
            "a.yaml": _simba_with(
                "entries: 64", "entries: 64\n    bandwidth: -3\n    enforce_bandwidth: true"
            )
        },
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml", "bandwidth"],
        False,
    ),
    (
        "arch-huge-instances",
        {"a.yaml": _simba_with("instances: 1024", "instances: " + HUGE)},
        ["map", "{layer}", "--arch", "{d}/a.yaml"],
        ["a.yaml"],
        False,
    ),
    (
        "mapping-huge-factor",
        {
            "m.yaml": "mapping:\n- {target: DRAM, type: temporal, factors: K="
            + HUGE
            + ", permutation: K}\n"
        },
        ["map-eval", "--arch", str(SIMBA), "--layer", "{layer}", "--mapping-file", "{d}/m.yaml"],
        ["m.yaml"],
        False,
    ),
    (
        "mapping-not-list",
        {"m.yaml": "mapping: 3\n"},
        ["map-eval", "--arch", str(SIMBA), "--layer", "{layer}", "--mapping-file", "{d}/m.yaml"],
        ["m.yaml", "mapping"],
        False,
    ),
    (
        "mapping-string-huge-factor",
        {},
        [
            "map-eval",
            "--arch",
            "simba",
            "--layer",
            "{layer}",
            "--mapping",
            "L1[WIO] K" + HUGE + " - L0[W] P7",
        ],
        ["mapping", "factor"],
        False,
    ),
    (
        "mapping-string-huge-level",
        {},
        [
            "map-eval",
            "--arch",
            "simba",
            "--layer",
            "{layer}",
            "--mapping",
            "L" + "9" * 30 + "[W] K2",
        ],
        ["mapping"],
        False,
    ),
    (
        "mapping-string-many-loops",
        {},
        [
            "map-eval",
            "--arch",
            "simba",
            "--layer",
            "{layer}",
            "--mapping",
            "L1[WIO] " + "K1 " * 3000 + "- L0[W] P7",
        ],
        ["more problems"],
        False,
    ),
    # ---- network folders (layers.yaml)
    (
        "layers-escape",
        {"net/layers.yaml": "- ../../etc/passwd\n", "net/a.yaml": LAYER.format(C=4)},
        ["map-network", "{d}/net", "--arch", str(SIMBA), "--methods", "random"],
        ["layers.yaml", "outside"],
        False,
    ),
    (
        "layers-not-list",
        {"net/layers.yaml": "{a: 1}\n"},
        ["map-network", "{d}/net", "--arch", str(SIMBA)],
        ["layers.yaml"],
        False,
    ),
    (
        "layer-count-bad",
        {
            "net/layers.yaml": "- a\n",
            "net/a.yaml": LAYER.format(C=4),
            "net/layer_count.yaml": "[1, 2]\n",
        },
        ["map-network", "{d}/net", "--arch", str(SIMBA), "--methods", "random"],
        ["layer_count.yaml"],
        False,
    ),
    (
        "methods-empty",
        {"net/layers.yaml": "- a\n", "net/a.yaml": LAYER.format(C=4)},
        ["map-network", "{d}/net", "--arch", str(SIMBA), "--methods", ","],
        ["--method"],
        False,
    ),
    # ---- DOSA CSV
    (
        "dosa-nonnumeric",
        {"d.csv": DOSA_HEADER + "x,abc,1,1,1,1,1,1,1,1,1,1\n"},
        ["map-eval", "--dataset", "{d}/d.csv"],
        ["d.csv", "row 2"],
        False,
    ),
    (
        "dosa-nan-mesh",
        {"d.csv": DOSA_HEADER + "x,nan,1,1,1,1,1,1,1,1,1,1\n"},
        ["map-eval", "--dataset", "{d}/d.csv"],
        ["d.csv", "row 2"],
        False,
    ),
    (
        "dosa-negative-mesh",
        {"d.csv": DOSA_HEADER + "x,-4,1,1,1,1,1,1,1,1,1,1\n"},
        ["map-eval", "--dataset", "{d}/d.csv"],
        ["d.csv", "row 2"],
        False,
    ),
    (
        "dosa-huge",
        {"d.csv": DOSA_HEADER + "x,4,1,1,1,1,1,1," + HUGE + ",1,1,1\n"},
        ["map-eval", "--dataset", "{d}/d.csv"],
        ["d.csv", "row 2"],
        False,
    ),
    # ---- options
    ("fuse-steps-huge", {}, ["fuse", "bert", "--steps", "9" * 30], ["--steps", "at most"], False),
    (
        "gaus-seed-huge",
        {},
        ["gaus", "{kernel}", "--seed", "9" * 5000],
        ["--seed", "characters"],
        False,
    ),
    (
        "gaus-iters-huge",
        {},
        ["gaus", "{kernel}", "--max-iters", "10" + "0" * 12],
        ["--max-iters"],
        False,
    ),
    (
        "map-threads-huge",
        {},
        ["map", "{layer}", "--arch", "simba", "--threads", "100000"],
        ["--threads"],
        False,
    ),
    ("fuse-unknown", {}, ["fuse", "../../etc"], ["unknown network"], False),
    (
        "gaus-cap-tiny",
        {},
        [
            "gaus",
            str(Path(__file__).resolve().parents[2] / "data/gs_schedule/rand_graph_1000_1.gml"),
            "--formulation",
            "C",
            "--cap",
            "0.001",
        ],
        ["--cap", "rand_graph_1000_1.gml"],
        True,
    ),
    ("gaus-ratio-nan", {}, ["gaus", "{kernel}", "--ratio", "nan"], ["ratio"], False),
    ("output-dev-full", {}, ["solve", "{kernel}", "-o", "/dev/full"], ["/dev/full"], False),
    (  # a Triton-only option on a graph was ignored silently (exit 0)
        "solve-kernel-flags-on-graph",
        {},
        ["solve", "{kernel}", "--loop", "3", "--config", "0"],
        ["--loop", "--config", "Triton"],
        False,
    ),
]


def _materialise(tmp_path: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    if "a.aig" in files:  # the same bytes under the ASCII suffix too
        (tmp_path / "a.aag").write_bytes(files["a.aig"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("files", "argv", "words", "limited"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_case(cli, tmp_path: Path, files, argv, words, limited) -> None:  # noqa: ANN001
    _materialise(tmp_path, files)
    layer = tmp_path / "ok_layer.yaml"
    layer.write_text(LAYER.format(C=4))
    argv = [
        a.format(d=tmp_path, layer=layer, kernel="flash_attention_forward_simplified") for a in argv
    ]
    code, _out, err = cli.limited(argv) if limited else cli.run(argv)
    cli.clean(code, err, *words)
