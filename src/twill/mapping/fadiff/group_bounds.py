"""The group-consistent capacity bound: the fewest DRAM words of any verified fusion plan,
with the edges of the plan and the groups they form chosen jointly.

:func:`twill.mapping.fadiff.bounds.capacity_bound` prices every layer's fusion status on its
own, so one layer may count its output as fused while its reader does not, and each layer
counts only its own weights beside its buffers. Here the fused edge set is one choice for
the whole network, and per layer the bound charges the least DRAM words its tiles allow
(:class:`~twill.mapping.fadiff.floors.TileRows`) with:

* its statuses read from the chosen edges: input fused when a data edge into it is fused,
  output fused when every out-edge is, a hand-off buffer when any is (fusion rule 2: complete
  before hand-off);
* every fused tensor it reads or writes live beside its tiles, whole in a one-block group,
  else at least ``size / B`` with ``B`` dividing P, Q and N of every layer it is fused with
  (fusion rules 3 and 4);
* a mode shared along fused edges (the group runs in one block or in several: one block
  count per group): one block, blocks with its weights resident (no weight-relevant DRAM
  loop), or blocks with its weights read again per block;
* in blocks, the resident weights of its fused neighbours in the scratchpad too (fusion rule 4:
  resident weights stay for the whole group), and those of earlier layers known to be in
  its group (carried in the state for up to three groups, rounded down to 1/64 of the
  scratchpad);
* a fused tensor whose producer comes before the layer and whose reader after it (fusion rule 5
  puts the layer in their group, and the tensor is live while it runs: a residual block's
  input during the block's first convolutions).

The minimum over edge sets and modes is exact, by dynamic programming over the layers in
execution order: a state assigns the edges and layer modes that an earlier layer's charge
shares with a later one. Every verified plan chooses one such assignment, and each layer's
charge is a lower bound of its DRAM words under it, so the minimum is a lower bound of every
plan's DRAM words. It leaves out what the per-layer bound leaves out beyond that: the other
members of a group (not fused to the layer directly), carried halo rows and larger input
windows.

The same programme prices the charges by energy and cycles together
(:func:`group_edp_floor`): each tile's DRAM words, on-chip floor and cycle floor give
``a·E + b·D`` per weight ``(a, b)``, the components run in one pass (they share states and
rules), and their minima are lines that bound every plan's total energy and cycles
(:mod:`twill.mapping.fadiff.edp_floor`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.fadiff.edp_floor import Pricing, min_product_over_lines
from twill.mapping.fadiff.floors import input_words_floor, tile_row_chunks
from twill.mapping.network import EPILOGUE_KINDS, Network
from twill.mapping.workload import Dim, Operand

__all__ = ["GroupAssignment", "group_dram_assignment", "group_dram_words", "group_edp_floor"]

_MAX_STATES = 200_000
#: most assignments tried at one layer (states x the new variables' values): a layer with many
#: candidate edges (T5's last encoder layer feeds every decoder block) would otherwise
#: enumerate 2^20+ assignments per state (minutes and gigabytes); the programme then gives up
_MAX_WORK = 2_000_000
_RESIDENT_STEPS = 64  # the running resident words are tracked in 1/64 of the scratchpad
_MAX_CARRIED = 3  # groups whose resident words a state carries
_Carried = tuple[int, frozenset[int]]  # (resident steps, layers known to be in the group)
_UNBLOCKED, _REREAD, _RESIDENT = 0, 1, 2
_MODES = {_UNBLOCKED: "one", _REREAD: "reread", _RESIDENT: "resident"}
_WORDS = Pricing()  # charges in DRAM words


def group_dram_words(net: Network, arch: Arch) -> float | None:
    """Fewest DRAM words (int8) of any verified plan of ``net`` on ``arch`` (module
    docstring), or ``None`` when the architecture is not Gemmini-like or the dynamic
    programme would exceed its state budget."""
    got = group_dram_assignment(net, arch)
    return None if got is None else got.words


@dataclass(frozen=True)
class GroupAssignment:
    """Where the group bound is reached: its DRAM words, the fused candidate edges and each
    layer's mode (``"one"`` block, ``"resident"`` or ``"reread"`` weights in blocks)."""

    words: float
    fused: tuple[int, ...]
    modes: tuple[str, ...]


def group_dram_assignment(net: Network, arch: Arch) -> GroupAssignment | None:
    """:func:`group_dram_words` with the edges and modes that reach it: the optimum of a
    relaxation, which need not verify as a plan (``docs/fadiff.md``)."""
    got = _minimum(net, arch, _WORDS)
    if got is None:
        return None
    words, value = got
    words = float(words[0])
    fused = tuple(sorted(i for (kind, i), v in value.items() if kind == "z" and v))
    modes = tuple(_MODES[value.get(("u", j), _UNBLOCKED)] for j in range(len(net.layers)))
    return GroupAssignment(words, fused, modes)


def group_edp_floor(
    net: Network, arch: Arch, scale: float, *, stop: float = math.inf
) -> tuple[float, float] | None:
    """:func:`group_dram_words` and, from the same pass, a lower bound of every verified
    plan's EDP (pJ·cycles): the charges priced by energy and cycles together
    (:class:`~twill.mapping.fadiff.edp_floor.Pricing`, weights around ``scale``, energy over
    cycles near the optimum), one line ``a·E + b·D ≥ L`` per weight, and the least product
    the lines allow (:func:`~twill.mapping.fadiff.edp_floor.min_product_over_lines`).
    ``None`` where :func:`group_dram_words` is, or once ``stop`` (a ``perf_counter``
    deadline) has passed."""
    pricing = Pricing.around(scale, words=True)
    got = _minimum(net, arch, pricing, stop)
    if got is None:
        return None
    (words, *priced), _ = got
    lines = [(a, b, float(lim)) for (a, b), lim in zip(pricing.weights, priced, strict=True)]
    return float(words), min_product_over_lines(lines)


def _minimum(
    net: Network, arch: Arch, pricing: Pricing, stop: float = math.inf
) -> tuple[np.ndarray, dict[tuple[str, int], int]] | None:
    charges = []
    for j in range(len(net.layers)):
        charge = _LayerCharge.build(net, arch, j, pricing)
        if charge is None or time.perf_counter() >= stop:
            return None
        charges.append(charge)
    return _frontier_minimum(net, charges, stop)


class _LayerCharge:
    """What layer ``j`` is charged for each assignment of its scope (its incident candidate
    edges, fused or not, and the modes of itself and its neighbours): the least DRAM words
    its tiles allow, or their least price (:class:`~twill.mapping.fadiff.edp_floor.Pricing`),
    one value per component."""

    def __init__(
        self, net: Network, arch: Arch, j: int, chunks: list, pricing: Pricing = _WORDS
    ) -> None:
        self.j = j
        self.arch = arch
        self.pricing = pricing
        self.infinite = np.full(pricing.size, np.inf)
        ly = net.layers[j]
        cands = set(net.candidates)
        edges = net.edges
        self.data_in = [
            i for i in cands if edges[i].dst == j and edges[i].kind not in EPILOGUE_KINDS
        ]
        self.add_in = [i for i in cands if edges[i].dst == j and edges[i].kind in EPILOGUE_KINDS]
        outs = [i for i, e in enumerate(edges) if e.src == j]
        self.cand_out = [i for i in outs if i in cands]
        self.all_out_candidates = bool(outs) and len(self.cand_out) == len(outs)
        self.edges = sorted(self.data_in + self.add_in + self.cand_out)
        self.spanning = [i for i in cands if edges[i].src < j < edges[i].dst]  # edges over j
        self.span_ends = {i: {edges[i].src, edges[i].dst} for i in self.spanning}
        self.span_tensor = {
            i: float(net.layers[edges[i].src].footprint(Operand.O)) for i in self.spanning
        }
        self.other = {i: edges[i].src if edges[i].dst == j else edges[i].dst for i in self.edges}
        self.neighbours = sorted(set(self.other.values()))
        self.words_of = {m: float(net.layers[m].footprint(Operand.W)) for m in self.neighbours}
        self.tensor = {i: float(net.layers[edges[i].src].footprint(Operand.O)) for i in self.edges}
        self.dims = {
            m: tuple(net.layers[m].dim(d) for d in (Dim.P, Dim.Q, Dim.N))
            for m in [j, *self.neighbours]
        }
        self.chunks = chunks
        self.w = float(ly.footprint(Operand.W))
        self.o = float(ly.footprint(Operand.O))
        self.halo_in = input_words_floor(ly)
        self._memo: dict[tuple, np.ndarray] = {}
        self.step = float(arch.levels[-2].entries or 1) / _RESIDENT_STEPS
        self._scope = self.scope()
        self._words_memo: dict[tuple, tuple[np.ndarray, int]] = {}

    @classmethod
    def build(
        cls, net: Network, arch: Arch, j: int, pricing: Pricing = _WORDS
    ) -> _LayerCharge | None:
        chunks = tile_row_chunks(net.layers[j], arch)
        return None if chunks is None else cls(net, arch, j, chunks, pricing)

    def scope(self) -> list[tuple[str, int]]:
        """The variables this charge reads: its edges, the edges over it from or to its
        neighbours, its own mode and its neighbours' modes."""
        edges = [("z", i) for i in self.edges + self.spanning]
        return edges + [("u", self.j)] + [("u", m) for m in self.neighbours]

    def words(
        self, value: Callable[[tuple[str, int]], int], carried: tuple[_Carried, ...] = ()
    ) -> tuple[np.ndarray, tuple[_Carried, ...]]:
        """The charge under an assignment (``inf`` where it breaks a rule), and what it
        carries to later layers.

        Each :data:`_Carried` is the resident words (in steps of ``self.step``, rounded
        down) of some earlier layers of one group, with layers known to be in that group.
        When this layer is fused to one of those, it is in that group, so those resident
        weights stay in the scratchpad while it runs in blocks (fusion rule 4); groups it joins
        merge (their layers are distinct, so their words add)."""
        fused_to = {self.other[i] for i in self.edges if value(("z", i))}
        fused_to |= {m for i in self.spanning if value(("z", i)) for m in self.span_ends[i]}
        joined = [c for c in carried if c[1] & fused_to]
        steps = sum(c[0] for c in joined)
        key = (tuple(value(v) for v in self._scope), steps)
        got = self._words_memo.get(key)
        if got is None:
            got = self._words_memo[key] = self._words(value, steps)
        charge, after = got
        if after < 0:  # not in a group run in blocks: nothing changes
            return charge, carried
        members = {m for m in fused_to if m < self.j} | {self.j}
        members = members.union(*(c[1] for c in joined))
        rest = [c for c in carried if not c[1] & fused_to]
        return charge, ((after, frozenset(members)), *rest)

    def _words(self, value: Callable[[tuple[str, int]], int], steps: int) -> tuple[np.ndarray, int]:
        fused = [i for i in self.edges if value(("z", i))]
        mode = value(("u", self.j))
        blocked = mode != _UNBLOCKED
        if not fused:
            if blocked or any(value(("z", i)) for i in self.spanning):
                return self.infinite, -1  # fusion rule 5: under a fused edge, in its group
            return self._least(False, False, False, 0.0, (self.j,), 0.0, None), -1
        partners = {self.other[i] for i in fused}
        if any((value(("u", m)) != _UNBLOCKED) != blocked for m in partners):
            return self.infinite, -1  # one block count per group
        if not blocked:
            return self._charge(value, fused, partners, mode, 0.0), -1
        earlier = sum(
            self.words_of[m] for m in partners if m < self.j and value(("u", m)) == _RESIDENT
        )
        later = sum(
            self.words_of[m] for m in partners if m > self.j and value(("u", m)) == _RESIDENT
        )
        upto = max(steps * self.step, earlier)
        reserve = ((upto + later) // self.step) * self.step  # rounded down: fewer charges
        own = self.w if mode == _RESIDENT else 0.0
        return self._charge(value, fused, partners, mode, reserve), int((upto + own) // self.step)

    def _charge(
        self,
        value: Callable[[tuple[str, int]], int],
        fused: list[int],
        partners: set[int],
        mode: int,
        reserve: float,
    ) -> np.ndarray:
        fused_in = any(i in fused for i in self.data_in)
        buffered = any(i in fused for i in self.cand_out)
        fused_out = self.all_out_candidates and all(i in fused for i in self.cand_out)
        x = sum(self.tensor[i] for i in fused if i not in self.cand_out)
        x += self.o if buffered else 0.0
        # live while this layer runs: fusion rules 5 (its group) and 4 (its buffers) count it
        x += sum(self.span_tensor[i] for i in self.spanning if value(("z", i)))
        key_partners = tuple(sorted(partners | {self.j}))
        return self._least(fused_in, fused_out, buffered, x, key_partners, reserve, _MODES[mode])

    def _least(
        self,
        fused_in: bool,
        fused_out: bool,
        buffered: bool,
        x: float,
        partners: tuple[int, ...],
        reserve: float,
        mode: str | None,
    ) -> np.ndarray:
        key = (fused_in, fused_out, buffered, x, partners, reserve, mode)
        got = self._memo.get(key)
        if got is None:
            common = np.gcd.reduce(np.array([self.dims[m] for m in partners], dtype=np.int64))
            # what every mapping with this status moves, whatever its tile
            moved = self.w + (0.0 if fused_in else self.halo_in) + (0.0 if fused_out else self.o)
            got = self.infinite
            for rows in self.chunks:
                words = rows.row_words(fused_in, fused_out, buffered, x, common, reserve, mode)
                got = np.minimum(got, self.pricing.least(rows, np.maximum(words, moved), self.arch))
            self._memo[key] = got
        return got


def _domain(net: Network, var: tuple[str, int], charges: list[_LayerCharge]) -> tuple[int, ...]:
    if var[0] == "z":
        return (0, 1)
    return (_UNBLOCKED, _REREAD, _RESIDENT) if charges[var[1]].edges else (_UNBLOCKED,)


def _still_open(carried: tuple[_Carried, ...], later: set[int]) -> tuple[_Carried, ...]:
    """``carried`` restricted to layers a later charge can still be fused to, at most
    :data:`_MAX_CARRIED` groups (the most resident words first; dropping one only lowers
    the charges), in a canonical order."""
    kept = [(steps, m & later) for steps, m in carried if m & later]
    kept.sort(key=lambda c: (-c[0], sorted(c[1])))
    return tuple(kept[:_MAX_CARRIED])


def _frontier_minimum(
    net: Network, charges: list[_LayerCharge], stop: float = math.inf
) -> tuple[np.ndarray, dict[tuple[str, int], int]] | None:
    """Least total charge over every assignment, per component, and one assignment that
    reaches the first component's, layer by layer in execution order: the state keeps the
    variables an earlier charge shares with a later one. The components share the states
    and rules and differ only in their charges, so an elementwise minimum keeps each one's
    own minimum."""
    last_use: dict[tuple[str, int], int] = {}
    for c in charges:
        for v in c.scope():
            last_use[v] = max(last_use.get(v, -1), c.j)
    frontier: list[tuple[str, int]] = []
    # a state: the frontier's values, then what the charges carry (_LayerCharge.words); its
    # assignment is a chain (earlier chain, variables, values) shared between states, not a
    # dict copied per state (a copy per state and layer grew with the network: gigabytes on
    # T5's 133 layers)
    states: dict[tuple, tuple[np.ndarray, tuple]] = {((),): (np.zeros(charges[0].pricing.size), ())}
    for c in charges:
        new = [v for v in dict.fromkeys(c.scope()) if v not in frontier]
        new_t = tuple(new)
        names = frontier + new
        keep = [k for k, v in enumerate(names) if last_use[v] > c.j]
        later = {v[1] for k, v in enumerate(names) if k in keep and v[0] == "u"}
        nxt: dict[tuple, tuple[np.ndarray, tuple]] = {}
        domains = [_domain(net, v, charges) for v in new]
        if len(states) * math.prod(len(d) for d in domains) > _MAX_WORK:
            return None
        if time.perf_counter() >= stop:  # a caller's deadline: no bound rather than late
            return None
        for state, (total, done) in states.items():
            for vals in itertools.product(*domains):
                full = state[:-1] + vals
                index = dict(zip(names, full, strict=True))
                got, carried = c.words(index.__getitem__, state[-1])
                key = (*(full[k] for k in keep), _still_open(carried, later))
                if not math.isfinite(got[0]):
                    continue
                old = nxt.get(key)
                if old is None or total[0] + got[0] < old[0][0]:
                    best = total + got if old is None else np.minimum(old[0], total + got)
                    nxt[key] = (best, (done, new_t, vals))
                elif len(got) > 1:
                    nxt[key] = (np.minimum(old[0], total + got), old[1])
        c.chunks = []  # the charges are memoised; the tiles are no longer needed
        if not nxt or len(nxt) > _MAX_STATES:
            return None
        states, frontier = nxt, [names[k] for k in keep]
    least = np.minimum.reduce([total for total, _ in states.values()])
    chain = min(states.values(), key=lambda x: x[0][0])[1]
    value: dict[tuple[str, int], int] = {}
    while chain:
        chain, names_k, vals_k = chain
        for v, x in zip(names_k, vals_k, strict=True):
            value.setdefault(v, x)  # the latest assignment of a variable wins (as the dicts did)
    return least, value
