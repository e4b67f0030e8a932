"""Issue 48: on every shipped Triton kernel, the user's masked matmul and the test corpus, both
architectures, Twill's answer (the union of warp specialisation and one partition) is at most
Triton's default schedule priced in Twill's model, at most the one partition's I, and at most
the loop run one operation after another. Small time limits: a bound lost to a limit is
accepted only with the gap shown (the union's lower bound at most Triton's I)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twill.triton import SHIPPED_VARIANTS, kernel_spec, shipped_spec

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = sorted(p.stem for p in (DATA / "triton").glob("*.py") if p.stem != "generate")
LIMIT = 15.0  # seconds for Twill's search and for pricing Triton's schedule, each


def _spec(name: str, arch: str):  # noqa: ANN202 (a KernelSpec)
    if name in SHIPPED_VARIANTS:
        return shipped_spec(name, arch)
    if name == "masked_matmul":
        return kernel_spec(f"{DATA / 'triton_user' / 'masked_matmul.py'}:matmul", arch)
    return kernel_spec(f"{DATA / 'triton' / name}.py:{name}", arch)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("name", [*SHIPPED_VARIANTS, "masked_matmul", *CORPUS])
def test_twill_is_never_worse_than_triton_one_partition_or_sequential(name: str, arch: str) -> None:
    pytest.importorskip("triton")
    import time

    from twill.errors import InvalidProblemError
    from twill.triton import register_conflict
    from twill.triton.build import private_cache
    from twill.triton.peer import price_triton, solve_for_compile, twill_graph

    ks = _spec(name, arch)
    with private_cache():
        lp, ttgir = twill_graph(ks)
        if register_conflict(lp.graph, ks.num_warps) is not None:
            pytest.skip(f"{name} {arch}: no schedule at any I (register proof, refused)")
        r = solve_for_compile(lp.graph, LIMIT, time.monotonic() + LIMIT, ks.num_warps)
        try:
            peer = price_triton(ks, lp, ttgir, total_time_limit=LIMIT)
        except InvalidProblemError:  # a loop Triton's compile cannot take: no price
            peer = None
    parts = r.extra["union"]
    assert r.I is not None, (name, arch, parts)
    low = r.extra["union_lower_bound"]
    gap = f"{name} {arch}: I = {r.I}, union lower bound {low}, parts {parts}"
    for part in parts.values():  # at most each part (the one partition's I included)
        assert part["I"] is None or r.I <= part["I"], gap
    cycles = sum(max(1, i.cycles) for i in lp.graph.instructions)
    if parts["sequential"]["I"] is not None:  # at most the loop run op after op
        assert r.I <= parts["sequential"]["I"], gap
        assert r.I <= cycles + max((e.delay for e in lp.graph.edges), default=0), gap
    tri = peer.pinned.objective if peer is not None else None
    if tri is not None:  # Triton's schedule is a point of the union
        assert low <= tri, gap
        assert r.I <= tri or not r.optimal, f"{gap}; Triton's priced I = {tri}"
    assert r.optimal == (r.I <= low)
