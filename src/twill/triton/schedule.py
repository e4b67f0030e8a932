"""Triton's loop schedule as text: read it, match it to Twill's graph, write Twill's into it.

Triton 3.9's ``schedule_loops`` leaves on every operation of a loop it will pipeline the
attributes ``loop.stage`` (which iteration's copy the op belongs to) and ``loop.cluster``
(its place in the steady-state body: clusters run in increasing order, the ops of one cluster
in program order), ``tt.scheduled_max_stage`` on the loop, and ``ttg.partition`` where warp
specialisation is asked for. This module works on the printed IR (no Triton import):

* :func:`scheduled_loop` reads the loop's operations with their attributes and their source
  locations, resolved to the chain of ``file:line:col`` (callee first, then each call site);
* :func:`match_graph` maps every instruction of Twill's graph (extracted from the
  ``num_stages=1`` TTGIR, :mod:`twill.triton.extract`) to one scheduled operation: same
  location chain and same operation (a TMA copy in the final IR is the ``tt.descriptor_load``
  it was lowered from); several candidates are paired in program order. What does not match is
  listed, never guessed;
* :func:`write_schedule` writes a Twill schedule in: stage ``floor(M(v) / I)``, cluster the
  rank of ``M(v) mod I`` among the distinct offsets; an operation Twill does not schedule
  (index arithmetic, views, the ``local_alloc`` that a TMA load is lowered into) takes the
  stage and cluster of its earliest scheduled user (else of its latest producer), so that the
  pipeliner sees a complete schedule;
* :func:`read_back` reads the pipelined IR: the prologue holds ``max_stage - stage`` copies of
  each operation, which gives back every matched operation's stage and the prologue depth.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from twill.errors import InvalidProblemError
from twill.triton.extract import ExtractedLoop
from twill.triton.ttgir import LOC_DEF, OP_NAME, RESULTS

__all__ = [
    "LoopOp",
    "ScheduledLoop",
    "Match",
    "scheduled_loop",
    "graph_ops",
    "match_graph",
    "write_schedule",
    "read_back",
    "ReadBack",
    "write_partitions",
    "with_partition",
    "with_attribute",
    "with_empty_schedule",
]

_FLC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_VALUE = re.compile(r"%[\w$.-]+")
_TAIL_LOC = re.compile(r"loc\(((?:[^()]|\([^()]*\))*)\)\s*$")
_PARTITION = re.compile(r"ttg\.partition = array<i32(?::\s*([\d, ]+))?>")
#: The integer attributes of Triton's schedule (an op's stage and cluster, the loop's last
#: stage), each ``NAME = N : i32``: the one pattern per name that reads and rewrites it.
_I32_ATTRS = {
    a: re.compile(rf"{re.escape(a)} = (\d+) : i32")
    for a in ("loop.stage", "loop.cluster", "tt.scheduled_max_stage")
}
#: Operations that later passes lower into another: matched as the one they come from.
_SAME = {
    "ttng.async_tma_copy_global_to_local": "tt.descriptor_load",
    "ttg.async_copy_global_to_local": "tt.load",
}


def klass(name: str) -> str:
    """The identity an operation is matched by (its name, or what it is lowered from)."""
    return _SAME.get(name, name)


def _loc_table(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := LOC_DEF.match(line))}


def resolve(loc: str, table: Mapping[str, str], depth: int = 0) -> tuple[str, ...]:
    """``file:line:col`` of a location, callee first, then each call site (aliases expanded)."""
    if depth > 50:
        return ()
    out: list[str] = []
    pos = 0
    for m in re.finditer(r'#loc\d*|"[^"]+":\d+:\d+', loc):
        if m.start() < pos:
            continue
        tok = m.group(0)
        if tok.startswith("#loc"):
            out += resolve(table.get(tok, ""), table, depth + 1)
        else:
            f = _FLC.match(tok)
            out.append(f"{f.group(1).rsplit('/', 1)[-1]}:{f.group(2)}:{f.group(3)}")  # type: ignore[union-attr]
        pos = m.end()
    return tuple(out)


@dataclass
class LoopOp:
    """One operation of the scheduled loop's body."""

    index: int
    name: str
    results: list[str]
    operands: list[str]
    line: int  # 0-based line of the text that carries the attributes and the location
    loc: tuple[str, ...]
    stage: int | None = None
    cluster: int | None = None
    partition: tuple[int, ...] | None = None
    start: int = -1  # 0-based line where the op begins (a region op ends on ``line``)

    @property
    def klass(self) -> str:
        return klass(self.name)


@dataclass
class ScheduledLoop:
    """The loop Triton will pipeline: its body and where its header and end are."""

    ops: list[LoopOp]
    header: int
    end: int
    max_stage: int | None

    def users(self, op: LoopOp) -> list[LoopOp]:
        res = set(op.results)
        return [u for u in self.ops if res & set(u.operands)]

    def producers(self, op: LoopOp) -> list[LoopOp]:
        ops = set(op.operands)
        return [p for p in self.ops if ops & set(p.results)]


def _results(line: str) -> tuple[list[str], str]:
    m = RESULTS.match(line)
    if not m:
        return [], line
    return [r.split(":")[0].strip() for r in m.group(1).split(",")], line[m.end() :]


def _loop_ops(lines: list[str], header: int, table: Mapping[str, str]) -> tuple[list[LoopOp], int]:
    """Body operations of the ``scf.for`` on line ``header`` and the line closing it."""
    ops: list[LoopOp] = []
    depth, pending = 0, None  # region depth inside the body; a region op awaiting its end
    for k in range(header + 1, len(lines)):
        s = lines[k].strip()
        closes, opens = s.startswith("}"), s.endswith("{")
        if closes:
            if depth == 0:
                return ops, k
            depth -= 1
            if depth == 0 and pending is not None and not opens:
                _finish(pending, lines[k], k, table)
                ops.append(pending)
                pending = None
        elif depth == 0:
            results, rest = _results(s)
            name = OP_NAME.match(rest)
            if name is not None:
                body = re.sub(r"loc\((?:[^()]|\([^()]*\))*\)", "", rest[name.end() :])
                op = LoopOp(len(ops), name.group(1), results, _VALUE.findall(body), k, (), start=k)
                if opens:
                    pending = op
                else:
                    _finish(op, lines[k], k, table)
                    ops.append(op)
        if opens:
            depth += 1
    raise InvalidProblemError("unclosed scf.for in the scheduled TTGIR")


def _i32(text: str, attr: str, default: int | None = None) -> int | None:
    """The value of the i32 attribute ``attr`` in ``text``, else ``default``."""
    m = _I32_ATTRS[attr].search(text)
    return int(m.group(1)) if m else default


def _finish(op: LoopOp, line: str, k: int, table: Mapping[str, str]) -> None:
    op.line = k
    m = _TAIL_LOC.search(line)
    op.loc = resolve(m.group(1), table) if m else ()
    attrs = line[: m.start()] if m else line
    op.stage = _i32(attrs, "loop.stage", op.stage)
    op.cluster = _i32(attrs, "loop.cluster", op.cluster)
    if pa := _PARTITION.search(attrs):
        op.partition = tuple(int(x) for x in (pa.group(1) or "").replace(" ", "").split(",") if x)


def scheduled_loop(
    text: str, line: int | None = None, *, unscheduled: bool = False
) -> ScheduledLoop:
    """The loop that carries Triton's schedule (``loop.stage`` attributes) in ``text``: the
    one at kernel source ``line`` when given, else the only one. With ``unscheduled``, a loop
    at ``line`` that Triton left unscheduled is returned too (no stages, ``max_stage`` None).

    Raises
    ------
    InvalidProblemError
        No such scheduled loop, or several and no ``line``.
    """
    lines = text.splitlines()
    table = _loc_table(text)
    loops, plain = [], []
    for k, text_line in enumerate(lines):
        if re.search(r"\bscf\.for\b", text_line) and text_line.rstrip().endswith("{"):
            ops, end = _loop_ops(lines, k, table)
            top = _i32(lines[end], "tt.scheduled_max_stage")
            at = _loc_of_line(lines, k, table)
            here = line is None or (bool(at) and at[0].split(":")[1] == str(line))
            if here and (top is not None or any(op.stage is not None for op in ops)):
                loops.append(ScheduledLoop(ops, k, end, top))
            elif here and line is not None:
                plain.append(ScheduledLoop(ops, k, end, None))
    if not loops and unscheduled and len(plain) == 1:
        return plain[0]
    if not loops and plain:
        raise InvalidProblemError(
            f"the loop at line {line} has no schedule after Triton's schedule_loops (Triton "
            "3.9 schedules a loop only where it assigns latencies: TMA loads, MMAs, loads it "
            "can make asynchronous), so its pipeliner takes no stages there; a pointer load "
            "becomes asynchronous with the launch's hints: give the integers a launch "
            "specialises, --signature STRIDE=i32:1 for a unit stride, N=i32:16 for a multiple "
            "of 16"
        )
    if len(loops) != 1:
        raise InvalidProblemError(
            "expected one loop scheduled by Triton's pipeliner"
            + (f" at line {line}" if line is not None else "")
            + f", found {len(loops)} (Triton pipelines a loop only when it can)"
        )
    return loops[0]


@dataclass(frozen=True)
class GraphOp:
    """An instruction of Twill's graph with the operation it was extracted from."""

    name: str
    op: str
    loc: tuple[str, ...]
    index: int


def _loc_of_line(lines: list[str], k: int, table: Mapping[str, str]) -> tuple[str, ...]:
    """Location chain of the op starting on 0-based line ``k`` (a region op carries its
    location on the line that closes it)."""
    end = k
    if lines[k].rstrip().endswith("{"):
        depth = 0
        for end in range(k, len(lines)):
            s = lines[end].strip()
            depth += s.endswith("{") - s.startswith("}")
            if depth == 0:
                break
    m = _TAIL_LOC.search(lines[end])
    return resolve(m.group(1), table) if m else ()


def graph_ops(loop: ExtractedLoop, ttgir: str) -> list[GraphOp]:
    """Twill's instructions of ``loop`` (from :func:`~twill.triton.extract.extract_loops`
    on ``ttgir``, the ``num_stages=1`` text) with the TTGIR operation each was extracted from,
    in loop-body order."""
    lines = ttgir.splitlines()
    table = _loc_table(ttgir)
    made = [(line, name) for line, name, what in loop.accounting if what == "instruction"]
    ins = loop.graph.instructions
    if len(made) != len(ins):
        raise InvalidProblemError(
            f"{loop.graph.name}: {len(made)} instructions accounted, {len(ins)} in the graph"
        )
    out = []
    for k, (i, (line, name)) in enumerate(zip(ins, made, strict=True)):
        if i.note and not i.note.startswith(name):
            raise InvalidProblemError(f"{loop.graph.name}: instruction {i.name} is not {name}")
        out.append(GraphOp(i.name, name, _loc_of_line(lines, line - 1, table), k))
    return out


@dataclass
class Match:
    """Twill's instructions paired with the scheduled loop's operations."""

    pairs: dict[str, LoopOp] = field(default_factory=dict)
    twill_only: list[str] = field(default_factory=list)  # instructions with no loop op
    lowered: dict[str, str] = field(default_factory=dict)  # matched by location only
    triton_only: list[LoopOp] = field(default_factory=list)  # non-trivial loop ops left over

    def to_dict(self) -> dict[str, object]:
        return {
            "matched": {
                v: f"{op.name} @ {op.loc[0] if op.loc else '?'}" for v, op in self.pairs.items()
            },
            "twill_only": self.twill_only,
            "by_location_only": self.lowered,
            "triton_only": [
                f"{op.name} @ {op.loc[0] if op.loc else '?'}" for op in self.triton_only
            ],
        }


#: Loop operations that never carry a Twill instruction (index arithmetic, views, buffers).
_TRIVIAL = re.compile(
    r"^(arith\.(addi|subi|muli|cmpi|select|index_cast|constant)|tt\.(splat|"
    r"broadcast|expand_dims|make_range|addptr|trans|reshape)|ttg\.(memdesc_|"
    r"local_alloc|local_dealloc)|ttng\.(tmem_alloc|tmem_subslice))"
)


def match_graph(ops: list[GraphOp], loop: ScheduledLoop) -> Match:
    """Pair instructions and loop operations by (location chain, operation), in order."""
    free: dict[tuple[tuple[str, ...], str], list[LoopOp]] = defaultdict(list)
    for op in loop.ops:
        free[(op.loc, op.klass)].append(op)
    out = Match()
    for g in ops:
        cands = free.get((g.loc, klass(g.op)))
        if cands:
            out.pairs[g.name] = cands.pop(0)
        else:
            out.twill_only.append(g.name)
    used = {id(op) for op in out.pairs.values()}
    left = [
        op
        for op in loop.ops
        if id(op) not in used and not _TRIVIAL.match(op.name) and op.name != "scf.yield"
    ]
    for name in list(out.twill_only):  # lowered by a later pass into other ops: same location
        g = next(g for g in ops if g.name == name)
        op = next((op for op in left if op.loc == g.loc), None)
        if op is not None:
            out.pairs[name] = op
            out.lowered[name] = op.name
            out.twill_only.remove(name)
    taken = {id(op) for op in out.pairs.values()}
    out.triton_only = [op for op in left if id(op) not in taken]
    return out


def twill_stages(schedule: Mapping[str, int], II: int) -> dict[str, tuple[int, int]]:
    """``(stage, cluster)`` of each op from start times: stage ``floor(M / I)``, cluster the
    rank of ``M mod I`` among the distinct offsets (ties share a cluster)."""
    shift = min(schedule.values(), default=0)
    t = {v: s - shift for v, s in schedule.items()}
    ranks = {o: k for k, o in enumerate(sorted({s % II for s in t.values()}))}
    return {v: (s // II, ranks[s % II]) for v, s in t.items()}


def _fill(loop: ScheduledLoop, given: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """(stage, cluster) for every loop op: the given ones, the others from their earliest
    scheduled user (backwards), else their latest producer, else the first slot."""
    out = dict(given)
    for op in reversed(loop.ops):
        if op.index not in out:
            users = [out[u.index] for u in loop.users(op) if u.index in out]
            if users:
                out[op.index] = min(users)
    for op in loop.ops:
        if op.index not in out:
            prods = [out[p.index] for p in loop.producers(op) if p.index in out]
            out[op.index] = max(prods) if prods else (0, 0)
        else:  # never before a producer of the same iteration
            prods = [out[p.index] for p in loop.producers(op) if p.index in out]
            if prods and max(prods) > out[op.index] and op.index not in given:
                out[op.index] = max(prods)
    return out


def _set_attr(line: str, attr: str, value: int) -> str:
    """``line`` with its i32 attribute ``attr`` set to ``value`` (it must be there)."""
    pattern = _I32_ATTRS[attr]
    if pattern.search(line):
        return pattern.sub(f"{attr} = {value} : i32", line, count=1)
    raise InvalidProblemError(f"no {attr} on a scheduled line: {line.strip()[:80]}")


def with_empty_schedule(text: str, loop: ScheduledLoop) -> str:
    """``text`` with a one-stage schedule on a loop that Triton left unscheduled: every body
    op but the ``scf.yield`` in stage 0, cluster 0, and ``tt.scheduled_max_stage = 0`` on the
    loop, the attributes Triton 3.9's pipeliner reads (``schedule_loops`` writes them from
    the latencies ``assign_latencies`` found; here there were none), for
    :func:`write_schedule` to overwrite."""
    lines = text.splitlines()
    for op in loop.ops:
        if op.name != "scf.yield" and op.stage is None:
            line = with_attribute(lines[op.line], "loop.cluster = 0 : i32")
            lines[op.line] = with_attribute(line, "loop.stage = 0 : i32")
    end = lines[loop.end]
    if _WS_ATTRS.search(end):
        end = _WS_ATTRS.sub(
            lambda m: f"{m.group(1)}{m.group(2)}, tt.scheduled_max_stage = 0 : i32{m.group(3)}",
            end,
            count=1,
        )
    else:
        end = re.sub(r"^(\s*\})\s*loc\(", r"\1 {tt.scheduled_max_stage = 0 : i32} loc(", end)
    lines[loop.end] = end
    return "\n".join(lines) + "\n"


def write_schedule(
    text: str, loop: ScheduledLoop, match: Match, schedule: Mapping[str, int], II: int
) -> tuple[str, dict[str, tuple[int, int]]]:
    """``text`` with Twill's stages and clusters on the loop; returns it and the (stage,
    cluster) written for each matched instruction (the earliest of its op's instructions when
    several were lowered from one op)."""
    mine = twill_stages(schedule, II)
    given: dict[int, tuple[int, int]] = {}
    for v, op in match.pairs.items():  # several instructions on one op: the earliest
        if v in mine:
            given[op.index] = min(given.get(op.index, mine[v]), mine[v])
    full = _fill(loop, given)
    lines = text.splitlines()
    for op in loop.ops:
        if op.stage is None:  # scf.yield and anything else Triton left unscheduled
            continue
        stage, cluster = full[op.index]
        line = _set_attr(lines[op.line], "loop.stage", stage)
        lines[op.line] = _set_attr(line, "loop.cluster", cluster)
    top = max(full[op.index][0] for op in loop.ops if op.stage is not None)
    max_stage = _I32_ATTRS["tt.scheduled_max_stage"]
    lines[loop.end] = max_stage.sub(f"tt.scheduled_max_stage = {top} : i32", lines[loop.end])
    return "\n".join(lines) + "\n", {
        v: full[op.index] for v, op in match.pairs.items() if v in mine
    }


_WS_ATTRS = re.compile(r"(\}\s*\{)([^{}]*)(\}\s*loc\()")


def _type_colon(line: str) -> int | None:
    """Index of the ``" : "`` that starts an op's types: the first one outside every bracket
    (an attribute dictionary ``{axis = 1 : i32}``, ``array<i32: 2>``); ``None`` without."""
    depth = 0
    for i, ch in enumerate(line):
        if ch in "{<([":
            depth += 1
        elif ch in "}])" or (ch == ">" and line[i - 1 : i] != "-"):
            depth -= 1
        elif depth == 0 and line.startswith(" : ", i):
            return i
    return None


def with_partition(line: str, part: int) -> str:
    """One op's line with ``ttg.partition = array<i32: part>`` in its attribute dictionary:
    merged into the one it has, else a new one where the op's syntax puts it (right after the
    name of ``scf.yield`` and ``arith.constant``, whose printed forms start with their
    dictionary; before the types elsewhere). A line already carrying a partition is returned
    as it is."""
    if "ttg.partition" in line:
        return line
    return with_attribute(line, f"ttg.partition = array<i32: {part}>")


def _closing_line_with(line: str, at: int, attr: str) -> str:
    """The closing line of an op with regions (``}) : (types)``, ``} loc(...)``) with ``attr``
    in the dictionary MLIR prints after the regions (generic form: before the types; custom
    form of ``scf.if``: at the end), merged into one already there."""
    head, tail = line[:at], line[at:]
    if tail.lstrip().startswith("{"):  # a dictionary already: merge at its closing brace
        k = at + len(tail) - len(tail.lstrip())
        depth = 0
        for j in range(k, len(line)):
            depth += {"{": 1, "}": -1}.get(line[j], 0)
            if depth == 0:
                inner = line[k + 1 : j].strip()
                return line[:j] + (", " if inner else "") + attr + line[j:]
    return f"{head} {{{attr}}}{tail}"


def with_attribute(line: str, attr: str) -> str:
    """One op's line with ``attr`` (``name = value``) in its attribute dictionary (see
    :func:`with_partition`)."""
    closer = re.match(r"\s*[})]+", line)
    if closer:  # the last line of an op with regions: its dictionary follows the regions
        return _closing_line_with(line, closer.end(), attr)
    results, rest = _results(line)
    name = OP_NAME.match(rest)
    if name and name.group(1) in ("scf.yield", "arith.constant"):
        at = line.index(name.group(1)) + len(name.group(1))
        return f"{line[:at]} {{{attr}}}{line[at:]}"
    at = _type_colon(line)
    if at is None:
        raise InvalidProblemError(f"no place for a partition on: {line.strip()[:80]}")
    head = line[:at].rstrip()
    if head.endswith("}"):  # the op's own dictionary ends just before its types
        depth, k = 0, len(head) - 1
        while k >= 0:  # its opening brace (a dictionary may hold braces: #ttg.slice<{...}>)
            depth += {"}": 1, "{": -1}.get(head[k], 0)
            if depth == 0:
                break
            k -= 1
        inner = head[k + 1 : -1].strip()
        return head[:-1] + (", " if inner else "") + attr + "}" + line[at:]
    return f"{head} {{{attr}}}{line[at:]}"


def _partition_children(lines: list[str], op: LoopOp, part: int) -> None:
    """The ops inside a region op (a ``tt.reduce`` combiner, the branches of an ``scf.if``)
    carry its partition too, as Triton's ``warp_specialize`` verifier requires."""
    for k in range(op.start + 1, op.line):
        s = lines[k].strip()
        if s.startswith(("^", "}")) or s.endswith(("{", "({")) or not OP_NAME.match(_results(s)[1]):
            continue
        lines[k] = with_partition(lines[k], part)


def _result_count(line: str) -> int:
    """How many values an op's line defines (``%a:3 = ...`` is three)."""
    names = RESULTS.match(line)
    if not names:
        return 0
    return sum(int(n.split(":")[1]) if ":" in n else 1 for n in names.group(1).split(","))


def write_partitions(
    text: str, loop: ScheduledLoop, match: Match, assignment: Mapping[str, tuple[int, ...]]
) -> tuple[str, dict[str, int], list[str]]:
    """``text`` with Twill's warp assignment as ``ttg.partition`` on the loop's scheduled ops
    and the loop marked for Triton's ``warp_specialize`` pass (Blackwell), which keeps a
    given grouping of ops into partitions. Twill's slots in use become partitions ``0..k-1``;
    an op Twill does not schedule joins its earliest scheduled user's partition. Returns the
    text, the partition written per instruction, and the instructions that span several slots
    (written on their first slot only)."""
    slots = sorted({min(w) for w in assignment.values() if w})
    pid = {w: k for k, w in enumerate(slots)}
    given: dict[int, tuple[int, int]] = {}
    for v, op in match.pairs.items():
        if assignment.get(v):
            given.setdefault(op.index, (pid[min(assignment[v])], 0))
    full = _fill(loop, given)
    lines = text.splitlines()
    for op in loop.ops:
        if op.stage is not None and "ttg.partition" not in lines[op.line]:
            _partition_children(lines, op, full[op.index][0])
            part = f"ttg.partition = array<i32: {full[op.index][0]}>, "
            lines[op.line] = re.sub(
                r"\bloop\.(stage|cluster) =", part + r"loop.\1 =", lines[op.line], count=1
            )
    every = f"array<i32: {', '.join(str(k) for k in range(len(slots)))}>"
    for op in loop.ops:
        if op.name == "scf.yield" and "ttg.partition" not in lines[op.line]:
            lines[op.line] = with_attribute(lines[op.line], f"ttg.partition = {every}")
    stages = ", ".join("0 : i32" for _ in slots)
    extra = f"ttg.partition.stages = [{stages}], ttg.warp_specialize.tag = 0 : i32"
    if "ttg.partition =" not in lines[loop.end]:
        outs = ", ".join(every for _ in range(_result_count(lines[loop.header])))
        extra = f"ttg.partition = {every}, ttg.partition.outputs = [{outs}], " + extra
    if "tt.warp_specialize" not in lines[loop.end]:
        extra = "tt.warp_specialize, " + extra
    lines[loop.end] = _WS_ATTRS.sub(
        lambda m: f"{m.group(1)}{m.group(2)}, {extra}{m.group(3)}", lines[loop.end], count=1
    )
    written = {v: full[op.index][0] for v, op in match.pairs.items() if assignment.get(v)}
    wide = sorted(v for v, w in assignment.items() if len(w) > 1)
    return "\n".join(lines) + "\n", written, wide


def _regions(lines: list[str], table: Mapping[str, str]) -> dict[tuple[tuple[str, ...], str], str]:
    """(location chain, operation) -> the ``ttg.warp_specialize`` region holding it
    (``default`` or ``partitionN``)."""
    out: dict[tuple[tuple[str, ...], str], str] = {}
    start = next((k for k, ln in enumerate(lines) if "ttg.warp_specialize(" in ln), None)
    if start is None:
        return out
    depth, region = 0, None
    for ln in lines[start + 1 :]:
        s = ln.strip()
        head = re.match(r"^(default|partition\d+)\b", s)
        if depth == 0 and head:
            region = head.group(1)
        elif depth == 0 and s.startswith("}"):
            break
        if region is not None:
            _, rest = _results(s)
            name, m = OP_NAME.match(rest), _TAIL_LOC.search(ln)
            if name and m:
                out.setdefault((resolve(m.group(1), table), klass(name.group(1))), region)
        depth += s.count("{") - s.count("}")
        if depth == 0:
            region = None
    return out


@dataclass
class ReadBack:
    """What the pipeliner made of a schedule: prologue depth and per-op stages read back."""

    depth: int
    stages: dict[str, int]
    missing: list[str]  # matched ops not found in the pipelined loop
    partitions: dict[str, str] = field(default_factory=dict)  # op -> warp_specialize region


def _prologue_counts(lines: list[str], table: Mapping[str, str]) -> tuple[dict, set]:
    """Copies of each (location chain, operation) before the loop of its region (the
    function, or each ``ttg.warp_specialize`` region), and the keys inside the loops."""
    count: dict[tuple[tuple[str, ...], str], int] = defaultdict(int)
    inside: set[tuple[tuple[str, ...], str]] = set()
    loop_seen, for_depth, depth = False, None, 0
    for k, ln in enumerate(lines):
        s = ln.strip()
        if re.match(r"^(default|partition\d+)\b", s):
            loop_seen = False  # a new region: its own prologue
        _, rest = _results(s)
        name = OP_NAME.match(rest)
        chain = _loc_of_line(lines, k, table) if name and not s.startswith("}") else ()
        key = (chain, klass(name.group(1))) if name and chain else None
        if for_depth is None and re.search(r"\bscf\.for\b", s) and s.endswith("{"):
            for_depth, loop_seen = depth, True
        elif key is not None and for_depth is not None:
            inside.add(key)
        elif key is not None and not loop_seen:
            count[key] += 1
        depth += s.count("{") - s.count("}")
        if for_depth is not None and depth <= for_depth:
            for_depth = None
    return count, inside


def read_back(pipelined: str, match: Match) -> ReadBack:
    """Stages of the matched instructions in the pipelined IR: an op of stage ``s`` appears
    ``depth - s`` times in the prologue (the ops before the steady-state loop of its region),
    and, with warp specialisation, the region (partition) each is in."""
    lines = pipelined.splitlines()
    table = _loc_table(pipelined)
    count, inside = _prologue_counts(lines, table)
    if not inside:
        raise InvalidProblemError("no pipelined loop in the TTGIR")
    keys = {v: (op.loc, op.klass) for v, op in match.pairs.items()}
    missing = [v for v, key in keys.items() if key not in inside]
    depth = max((count[key] for key in keys.values()), default=0)
    where = _regions(lines, table)
    parts = {v: where[key] for v, key in keys.items() if key in where}
    return ReadBack(depth, {v: depth - count[key] for v, key in keys.items()}, missing, parts)
