"""JSON / YAML reader and writer for dependence graphs (schema in ``docs/formats.md``).

The reader validates first (collecting every problem with its key path, e.g.
``instructions[2].reservation.TC[0]``), then builds the frozen IR
(:mod:`twill.sched.ir`), then runs :func:`twill.sched.validate.check_graph`. Every message
names the file, the key path, what is allowed and what was found.

Preconditions: none; malformed input raises :class:`~twill.errors.InputFormatError` (cannot
parse) or :class:`~twill.errors.InvalidProblemError` (parsed, but wrong), never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twill.errors import InputFormatError, InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.validate import check_graph
from twill.text import read_text_file
from twill.yaml_safe import load_yaml_text, short_repr

__all__ = [
    "FORMAT",
    "graph_to_dict",
    "graph_from_dict",
    "recorded_arch",
    "recorded_num_warps",
    "validate_graph_dict",
    "read_graph",
    "write_graph",
    "dumps_graph",
]

FORMAT = "twill-graph/1"

_MACHINE_KEYS = {
    "name",
    "functional_units",
    "registers_per_warp",
    "registers_per_sm",
    "memories",
    "warps",
    "note",
}
_INSTRUCTION_KEYS = {
    "name",
    "cycles",
    "reservation",
    "regs",
    "footprint",
    "variable_latency",
    "streaming",
    "spill_cost",
    "warps",
    "unit",
    "note",
}
_EDGE_KEYS = {"src", "dst", "delay", "distance", "blocking"}
_TOP_KEYS = {"format", "name", "machine", "instructions", "edges", "arch", "num_warps"}
#: Targets a graph extracted from a Triton kernel may record (``arch``: solved as that kernel).
_ARCHES = ("sm_90a", "sm_100a")


def graph_to_dict(graph: DependenceGraph) -> dict[str, Any]:
    """Plain-data form of ``graph`` (the documented schema), suitable for JSON or YAML."""
    m = graph.machine
    return {
        "format": FORMAT,
        "name": graph.name,
        "machine": {
            "name": m.name,
            "functional_units": dict(m.functional_units),
            "registers_per_warp": m.registers_per_warp,
            "memories": dict(m.memories),
            "warps": m.warps,
            "note": m.note,
            **({"registers_per_sm": m.registers_per_sm} if m.registers_per_sm else {}),
        },
        "instructions": [
            {
                "name": i.name,
                "cycles": i.cycles,
                "reservation": {fu: list(row) for fu, row in i.reservation.items()},
                "regs": i.regs,
                "footprint": dict(i.footprint),
                "variable_latency": i.variable_latency,
                "streaming": i.streaming,
                "spill_cost": i.spill_cost,
                "warps": i.warps,
                "unit": i.unit,
                "note": i.note,
            }
            for i in graph.instructions
        ],
        "edges": [
            {
                "src": e.src,
                "dst": e.dst,
                "delay": e.delay,
                "distance": e.distance,
                "blocking": e.blocking,
            }
            for e in graph.edges
        ],
    }


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _Checker:
    """Collects schema problems as ``key.path: expected ..., found ...`` lines."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, expected: str, value: object) -> None:
        self.problems.append(f"{path}: expected {expected}, found {value!r} ({_type_name(value)})")

    def mapping(self, path: str, value: object) -> bool:
        if not isinstance(value, Mapping):
            self.add(path, "a mapping", value)
            return False
        return True

    def keys(
        self, path: str, value: Mapping[str, Any], allowed: set[str], required: set[str]
    ) -> None:
        for key in value:
            if key not in allowed:
                self.problems.append(
                    f"{path}: unknown key {key!r} (allowed: {', '.join(sorted(allowed))})"
                )
        for key in sorted(required - set(value)):
            self.problems.append(f"{path}: missing required key {key!r}")

    def integer(self, path: str, value: object, minimum: int | None = 0) -> None:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok or (minimum is not None and value < minimum):  # type: ignore[operator]
            self.add(path, "an integer" + (f" >= {minimum}" if minimum is not None else ""), value)

    def string(self, path: str, value: object, optional: bool = False) -> None:
        if not (isinstance(value, str) or (optional and value is None)):
            self.add(path, "a string" + (" or null" if optional else ""), value)

    def boolean(self, path: str, value: object) -> None:
        if not isinstance(value, bool):
            self.add(path, "true or false", value)

    def int_map(self, path: str, value: object, minimum: int) -> None:
        if self.mapping(path, value):
            for k, v in value.items():  # type: ignore[union-attr]
                self.integer(f"{path}.{k}", v, minimum)


def validate_graph_dict(data: object) -> list[str]:
    """Every schema problem of ``data`` as ``key.path: expected ..., found ...`` lines."""
    c = _Checker()
    if not c.mapping("(top level)", data):
        return c.problems
    assert isinstance(data, Mapping)
    c.keys("(top level)", data, _TOP_KEYS, {"machine", "instructions"})
    if "format" in data and data["format"] != FORMAT:
        c.add("format", repr(FORMAT), data["format"])
    if "name" in data:
        c.string("name", data["name"])
    if "arch" in data and data["arch"] not in _ARCHES:
        c.add("arch", " or ".join(repr(a) for a in _ARCHES), data["arch"])
    if "num_warps" in data:
        c.integer("num_warps", data["num_warps"], 1)
    if "machine" in data:
        _check_machine(c, data["machine"])
    instructions = data.get("instructions")
    if "instructions" in data:
        if not isinstance(instructions, list):
            c.add("instructions", "a list", instructions)
        else:
            for n, ins in enumerate(instructions):
                _check_instruction(c, f"instructions[{n}]", ins)
    edges = data.get("edges", [])
    if not isinstance(edges, list):
        c.add("edges", "a list", edges)
    else:
        for n, e in enumerate(edges):
            if not _plain_edge(e):  # the common case is checked at once; others in detail
                _check_edge(c, f"edges[{n}]", e)
    return c.problems


def _plain_edge(e: object) -> bool:
    """Whether ``e`` is an edge without any problem, decided quickly: a dict with ``src`` and
    ``dst`` strings, an integer ``delay`` >= 0, an optional integer ``distance`` >= 0 and
    boolean ``blocking``, and no other key (``type(x) is int`` leaves out ``True``)."""
    if type(e) is not dict or type(e.get("src")) is not str or type(e.get("dst")) is not str:
        return False
    delay, distance = e.get("delay"), e.get("distance", 0)
    if type(delay) is not int or type(distance) is not int or delay < 0 or distance < 0:
        return False
    return type(e.get("blocking", False)) is bool and (len(e) == 3 or e.keys() <= _EDGE_KEYS)


def _check_machine(c: _Checker, machine: object) -> None:
    """The ``machine`` mapping: units, memories, registers, warps, name and note."""
    if not c.mapping("machine", machine):
        return
    assert isinstance(machine, Mapping)
    c.keys("machine", machine, _MACHINE_KEYS, {"functional_units"})
    if "functional_units" in machine:
        c.int_map("machine.functional_units", machine["functional_units"], -1)
    if "memories" in machine:
        c.int_map("machine.memories", machine["memories"], 0)
    if machine.get("registers_per_warp") is not None:
        c.integer("machine.registers_per_warp", machine["registers_per_warp"])
    if machine.get("registers_per_sm") is not None:
        c.integer("machine.registers_per_sm", machine["registers_per_sm"], 1)
    if "warps" in machine:
        c.integer("machine.warps", machine["warps"], 1)
    for key in ("name", "note"):
        if key in machine:
            c.string(f"machine.{key}", machine[key])


def _check_instruction(c: _Checker, path: str, ins: object) -> None:
    """One entry of ``instructions`` (at key path ``path``), its reservation table included."""
    if not c.mapping(path, ins):
        return
    assert isinstance(ins, Mapping)
    c.keys(path, ins, _INSTRUCTION_KEYS, {"name", "cycles"})
    if "name" in ins:
        c.string(f"{path}.name", ins["name"])
    for key in ("cycles", "regs", "spill_cost"):
        if key in ins:
            c.integer(f"{path}.{key}", ins[key])
    if "warps" in ins:
        c.integer(f"{path}.warps", ins["warps"], 1)
    for key in ("variable_latency", "streaming"):
        if key in ins:
            c.boolean(f"{path}.{key}", ins[key])
    for key in ("unit", "note"):
        if key in ins:
            c.string(f"{path}.{key}", ins[key], optional=key == "unit")
    if "footprint" in ins:
        c.int_map(f"{path}.footprint", ins["footprint"], 0)
    res = ins.get("reservation", {})
    if c.mapping(f"{path}.reservation", res):
        for fu, row in res.items():
            if not isinstance(row, list):
                c.add(f"{path}.reservation.{fu}", "a list of integers", row)
                continue
            for k, units in enumerate(row):
                c.integer(f"{path}.reservation.{fu}[{k}]", units)


def _check_edge(c: _Checker, path: str, e: object) -> None:
    """One entry of ``edges`` (at key path ``path``)."""
    if not c.mapping(path, e):
        return
    assert isinstance(e, Mapping)
    c.keys(path, e, _EDGE_KEYS, {"src", "dst", "delay"})
    for key in ("src", "dst"):
        if key in e:
            c.string(f"{path}.{key}", e[key])
    for key in ("delay", "distance"):
        if key in e:
            c.integer(f"{path}.{key}", e[key])
    if "blocking" in e:
        c.boolean(f"{path}.blocking", e["blocking"])


def graph_from_dict(data: Mapping[str, Any], source: str | None = None) -> DependenceGraph:
    """Validate ``data`` against the schema, build the graph and check it.

    Raises
    ------
    InvalidProblemError
        Listing every schema problem (with key paths) or every graph defect.
    """
    problems = validate_graph_dict(data)
    if problems:
        raise InvalidProblemError(problems, source=source)
    m = data["machine"]
    machine = MachineDescription(
        name=m.get("name", "machine"),
        functional_units=dict(m["functional_units"]),
        registers_per_warp=m.get("registers_per_warp"),
        memories=dict(m.get("memories", {})),
        warps=m.get("warps", 1),
        note=m.get("note", ""),
        registers_per_sm=m.get("registers_per_sm"),
    )
    instructions = tuple(
        Instruction(
            name=i["name"],
            cycles=i["cycles"],
            reservation={fu: tuple(row) for fu, row in i.get("reservation", {}).items()},
            regs=i.get("regs", 0),
            footprint=dict(i.get("footprint", {})),
            variable_latency=i.get("variable_latency", False),
            streaming=i.get("streaming", False),
            spill_cost=i.get("spill_cost", 0),
            warps=i.get("warps", 1),
            unit=i.get("unit"),
            note=i.get("note", ""),
        )
        for i in data["instructions"]
    )
    edges = tuple(
        Edge(e["src"], e["dst"], e["delay"], e.get("distance", 0), e.get("blocking", False))
        for e in data.get("edges", [])
    )
    default_name = Path(source).stem if source else "graph"
    graph = DependenceGraph(data.get("name", default_name), instructions, edges, machine)
    check_graph(graph, source=source)
    return graph


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {short_repr(key)}")
        seen.add(key)
    return out  # pragma: no cover (a shorter dict has a repeated key)


def _load_json_text(text: str, source: str) -> Any:  # noqa: ANN401 (any JSON value)
    """Parse JSON, refusing duplicate keys; deep nesting and huge numbers give one message."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=source
        ) from None
    except RecursionError:
        raise InputFormatError("not valid JSON: nested too deeply", source=source) from None
    except ValueError as exc:  # duplicate key, or an integer too long to convert
        raise InputFormatError(f"not valid JSON: {exc}", source=source) from None


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def read_graph(path: str | Path) -> DependenceGraph:
    """Read a graph from a ``.json``, ``.yaml`` or ``.yml`` file.

    Raises
    ------
    InputFormatError
        The file is not valid JSON / YAML (message names the file and the position).
    InvalidProblemError
        Schema problems or graph defects, each with its key path or item.
    FileNotFoundError
        The file does not exist.
    """
    path = Path(path)
    return graph_from_dict(_parsed(path, keep=False), source=str(path))


def dumps_graph(
    graph: DependenceGraph, fmt: str = "json", arch: str | None = None, num_warps: int | None = None
) -> str:
    """Serialise ``graph`` as ``"json"`` or ``"yaml"`` text (``arch``: the Triton target it was
    extracted for, ``num_warps`` the kernel's warps, recorded so that solving the file takes
    the same path as the kernel)."""
    data = graph_to_dict(graph)
    if arch is not None:
        data["arch"] = arch
    if num_warps is not None:
        data["num_warps"] = num_warps
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(data, sort_keys=False)
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    raise InvalidProblemError(f"format must be 'json' or 'yaml', found {fmt!r}")


_RECORDED_KEYS = ("arch", "num_warps")
#: The last file parsed: its key (path, modification time, size), the keys that
#: :func:`recorded_arch` and :func:`recorded_num_warps` read, and the whole value until
#: :func:`read_graph` takes it, so that a command does not parse a large file twice.
_last_file: dict[str, Any] = {}


def _file_key(path: Path) -> tuple[str, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _parsed(path: Path, keep: bool) -> Any:  # noqa: ANN401 (any JSON value)
    """The file's JSON or YAML value: the one parsed last if the file has not changed since
    (and ``keep`` is false: it is handed over once), else read and parsed now."""
    key = _file_key(path)
    if key is not None and _last_file.get("key") == key and "data" in _last_file:
        return _last_file["data"] if keep else _last_file.pop("data")
    text = read_text_file(path)
    data = load_yaml_text(text, str(path)) if _is_yaml(path) else _load_json_text(text, str(path))
    recorded = {k: data.get(k) for k in _RECORDED_KEYS} if isinstance(data, Mapping) else {}
    _last_file.clear()
    _last_file.update(key=key, recorded=recorded)
    if keep:
        _last_file["data"] = data
    return data


def _recorded(path: str | Path, key: str) -> object:
    path = Path(path)
    file_key = _file_key(path)
    if file_key is None or _last_file.get("key") != file_key:
        _parsed(path, keep=True)
    return _last_file["recorded"].get(key)


def recorded_arch(path: str | Path) -> str | None:
    """The ``arch`` a graph file records (written by ``twill import-triton``), else ``None``."""
    arch = _recorded(path, "arch")
    return arch if arch in _ARCHES else None


def recorded_num_warps(path: str | Path) -> int | None:
    """The kernel's ``num_warps`` a graph file records (``twill import-triton``), else
    ``None``."""
    warps = _recorded(path, "num_warps")
    return warps if isinstance(warps, int) and not isinstance(warps, bool) else None


def write_graph(
    graph: DependenceGraph, path: str | Path, arch: str | None = None, num_warps: int | None = None
) -> None:
    """Write ``graph`` to ``path``; YAML for ``.yaml``/``.yml``, JSON otherwise. The file is
    replaced atomically: an error or interrupt leaves the old file (or none)."""
    from twill._atomic import write_output

    fmt = "yaml" if _is_yaml(Path(path)) else "json"
    write_output(path, dumps_graph(graph, fmt, arch, num_warps))
