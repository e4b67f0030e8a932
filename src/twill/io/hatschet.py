"""Reader for HatScheT modulo-scheduling instances (``NAME.graphml`` + resource model XML).

Format (SpeedyBK/hatschet ``benchmarks/``; copies in the repository's ``data/hatschet/``):

* graphml ``<node id=...>`` with ``<data key="name">`` and ``<data key="uses_resource">``;
  ``<edge source=... target=...>`` with ``<data key="distance">`` and ``<data key="delay">``
  (older files such as ``cTest/MoovacExample`` spell them ``backward`` and ``latency``; both
  are accepted; a missing value is 0).
* resource model ``<Resource name latency blockingTime limit>``; ``limit = -1`` is unlimited.

Semantics (HatScheT): precedence ``t_dst + distance*I >= t_src + latency(src) + delay``, and an
operation whose resource has ``limit >= 0`` reserves ``blockingTime`` consecutive cycles of
it. Built as: one functional unit per resource (capacity ``limit``, ``-1`` unlimited); one
instruction per node with ``cycles = blockingTime`` and an RRT of ones on its resource; one
edge per graphml edge with ``delay = latency(src) + delay``.

Node names that repeat are made unique: a repeated ``NAME`` becomes ``NAME#ID`` (its node id;
``NAME#ID.2``, ... if that is taken too), so the operations and edges stay distinct.

The resource model is found beside the graph as ``NAME_RM.xml`` (MachSuite) or ``NAMERM.xml``
(origami, cTest) unless given. Malformed XML (upstream ``cTest/vanDongen.graphml``) raises
:class:`~twill.errors.InputFormatError` naming the file and position.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from twill.errors import InputFormatError, InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.validate import LIMITS, check_graph
from twill.text import check_input_file
from twill.yaml_safe import short_repr

__all__ = [
    "read_hatschet",
    "find_resource_model",
    "read_resource_model",
    "resource_model_candidates",
]


def resource_model_candidates(graphml_path: str | Path) -> list[Path]:
    """The files :func:`find_resource_model` looks for: ``NAME_RM.xml`` then ``NAMERM.xml``."""
    path = Path(graphml_path)
    return [path.with_name(path.stem + "_RM.xml"), path.with_name(path.stem + "RM.xml")]


def find_resource_model(graphml_path: str | Path) -> Path:
    """``NAME_RM.xml`` or ``NAMERM.xml`` beside ``NAME.graphml``.

    Raises
    ------
    InputFormatError
        Neither file exists.
    """
    path = Path(graphml_path)
    candidates = resource_model_candidates(path)
    for cand in candidates:
        if cand.is_file():
            return cand
    raise InputFormatError(
        "no resource model found beside it (looked for "
        + " and ".join(c.name for c in candidates)
        + "); name one with --resource-model",
        source=str(path),
    )


def _parse(path: Path) -> ET.Element:
    check_input_file(path)  # a pipe, a device or a file above MAX_INPUT_BYTES: refused
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise InputFormatError(f"malformed XML: {exc}", source=str(path)) from None
    for elem in root.iter():  # drop XML namespaces (MachSuite files declare the graphml one)
        if isinstance(elem.tag, str) and "}" in elem.tag:
            elem.tag = elem.tag.split("}", 1)[1]
    return root


def _int(text: str | None, what: str, problems: list[str], default: int | None = None) -> int:
    if text is None or not text.strip():
        if default is not None:
            return default
        problems.append(f"{what}: missing value")
        return 0
    try:
        return int(text.strip())
    except ValueError:
        problems.append(f"{what}: expected an integer, found {short_repr(text.strip())}")
        return 0


def read_resource_model(path: str | Path) -> dict[str, tuple[int, int, int]]:
    """Resources of a HatScheT model: ``name -> (latency, blockingTime, limit)``."""
    path = Path(path)
    root = _parse(path)
    problems: list[str] = []
    out: dict[str, tuple[int, int, int]] = {}
    for n, res in enumerate(root.iter("Resource")):
        name = (res.get("name") or "").strip()
        where = f"Resource[{n}] {name!r}"
        if not name:
            problems.append(f"Resource[{n}]: missing attribute 'name'")
            continue
        if name in out:
            problems.append(f"{where}: duplicate resource name")
        latency = _int(res.get("latency"), f"{where}.latency", problems)
        blocking = _int(res.get("blockingTime"), f"{where}.blockingTime", problems)
        limit = _int(res.get("limit"), f"{where}.limit", problems)
        for key, value, lo, hi in (
            ("latency", latency, 0, LIMITS["delay"]),
            ("blockingTime", blocking, 0, LIMITS["cycles"]),
            ("limit", limit, -1, LIMITS["capacity"]),
        ):
            if not lo <= value <= hi:
                problems.append(
                    f"{where}.{key}: expected an integer from {lo} to at most {hi:,}, "
                    f"found {short_repr(value)}"
                )
        out[name] = (latency, blocking, limit)
    if problems:
        raise InvalidProblemError(problems, source=str(path))
    return out


def _data(elem: ET.Element, *keys: str) -> str | None:
    for key in keys:
        for d in elem.findall("data"):
            if d.get("key") == key:
                return d.text or ""
    return None


def _unique_names(nodes: list[tuple[str, str, str]]) -> dict[str, str]:
    """Operation name per node id, unique even when the file repeats names.

    A name used by one node only is kept. Nodes that share a name become ``NAME#ID`` (their
    node id); if that is itself taken (by a node really called so, or an earlier rename),
    ``NAME#ID.2``, ``NAME#ID.3``, ... is used. Deterministic: document order decides.
    """
    counts: dict[str, int] = {}
    for _, name, _ in nodes:
        counts[name] = counts.get(name, 0) + 1
    taken = {name for name, c in counts.items() if c == 1}
    out: dict[str, str] = {}
    for nid, name, _ in nodes:
        if nid in out:  # duplicate id: reported by the caller
            continue
        if counts[name] == 1:
            out[nid] = name
            continue
        base = cand = f"{name}#{nid}"
        k = 2
        while cand in taken:
            cand, k = f"{base}.{k}", k + 1
        taken.add(cand)
        out[nid] = cand
    return out


def read_hatschet(
    graphml_path: str | Path, resource_model: str | Path | None = None
) -> DependenceGraph:
    """Read a HatScheT instance into a :class:`~twill.sched.ir.DependenceGraph`.

    Parameters
    ----------
    graphml_path
        ``NAME.graphml``.
    resource_model
        The resource-model XML; ``None`` looks for ``NAME_RM.xml`` / ``NAMERM.xml`` beside it.

    Returns
    -------
    DependenceGraph
        Named after the file stem, checked with :func:`twill.sched.validate.check_graph`.

    Raises
    ------
    InputFormatError
        Malformed XML or no resource model (names the file).
    InvalidProblemError
        Unknown resources, dangling edges, bad numbers, zero-distance circuits (every one).
    """
    path = Path(graphml_path)
    rm_path = Path(resource_model) if resource_model is not None else find_resource_model(path)
    root = _parse(path)
    resources = read_resource_model(rm_path)
    graph_elem = root if root.tag == "graph" else root.find("graph")
    if graph_elem is None:
        raise InputFormatError("no <graph> element", source=str(path))
    problems: list[str] = []
    nodes: list[tuple[str, str, str]] = []  # (id, name, resource)
    for n, node in enumerate(graph_elem.iter("node")):
        nid = (node.get("id") or "").strip()
        name = (_data(node, "name") or "").strip() or nid
        res = (_data(node, "uses_resource") or "").strip()
        where = f"node[{n}] id={nid!r} name={name!r}"
        if not nid:
            problems.append(f"{where}: missing attribute 'id'")
        if not res:
            problems.append(f'{where}: missing <data key="uses_resource">')
        elif res not in resources:
            problems.append(f"{where}: resource {res!r} is not in {rm_path.name}")
        nodes.append((nid, name, res))
    ids: dict[str, str] = {}
    for nid, name in _unique_names(nodes).items():
        ids[nid] = name
    seen: set[str] = set()
    for nid, _, _ in nodes:
        if nid in seen:
            problems.append(f"node id {nid!r}: duplicate id")
        seen.add(nid)
    used = sorted({res for _, _, res in nodes if res in resources})
    machine = MachineDescription(
        name=rm_path.stem,
        functional_units={r: resources[r][2] for r in used},
        note=f"HatScheT resource model {rm_path.name}",
    )
    instructions = []
    latency: dict[str, int] = {}
    for nid, _, res in nodes:
        lat, blocking, _ = resources.get(res, (0, 0, -1))
        latency[nid] = lat
        rrt = {res: (1,) * blocking} if res in resources and blocking > 0 else {}
        instructions.append(Instruction(ids.get(nid, nid), blocking, rrt, unit=res or None))
    edges = []
    for n, edge in enumerate(graph_elem.iter("edge")):
        src, dst = (edge.get("source") or "").strip(), (edge.get("target") or "").strip()
        where = f"edge[{n}] {edge.get('id') or ''} ({src}->{dst})".replace("  ", " ")
        dist = _int(_data(edge, "distance", "backward"), f"{where}.distance", problems, 0)
        delay = _int(_data(edge, "delay", "latency"), f"{where}.delay", problems, 0)
        for end, nid in (("source", src), ("target", dst)):
            if nid not in ids:
                problems.append(f"{where}: unknown {end} node id {nid!r}")
        if src in ids and dst in ids:
            edges.append(Edge(ids[src], ids[dst], latency[src] + delay, dist))
    if problems:
        raise InvalidProblemError(problems, source=str(path))
    graph = DependenceGraph(path.stem, tuple(instructions), tuple(edges), machine)
    check_graph(graph, source=str(path))
    _check_blocking_times(graph, rm_path, str(path))
    return graph


#: Largest modulo resource model accepted from a HatScheT graph (:func:`reservation_terms`):
#: one op blocking its unit for 1,000 cycles (10^6 terms) takes CBC 7 s, for 4,000 cycles it
#: did not finish in 120 s (issue 49); the shipped HatScheT graphs need at most 0.4 10^6.
MAX_HATSCHET_RESERVATION_TERMS = 2_000_000


def _check_blocking_times(graph: DependenceGraph, rm_path: Path, source: str) -> None:
    """A HatScheT graph whose blocking times make the modulo resource rows too long to model
    is refused with its estimate (``docs/formats.md``): HatScheT's cycle-level models reserve
    a unit for ``blockingTime`` cycles per op, and each cycle costs a term at every time step."""
    from twill.sched.validate import reservation_terms

    terms = reservation_terms(graph)
    if terms > MAX_HATSCHET_RESERVATION_TERMS:
        raise InvalidProblemError(
            f"reservations too long to model: the blockingTime values of {rm_path.name} give "
            f"about {terms:,} resource terms (reserved cycles after each op's first x the "
            f"serial schedule's length); the limit is {MAX_HATSCHET_RESERVATION_TERMS:,}",
            source=source,
        )
