"""The batch evaluation of ``map-eval --dataset`` (issue 52, item 1): every shipped DOSA row
gets exactly the numbers of the scalar model, the column reader reads what the per-row reader
reads (and refuses what it refuses), and the batch's validity is the verifier's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twill.errors import InvalidProblemError
from twill.io.timeloop import read_dosa_columns, read_dosa_dataset
from twill.mapping.arch import gemmini_arch
from twill.mapping.cost.analytical import (
    ArchArrays,
    LayerArrays,
    MappingBatch,
    evaluate,
    evaluate_many,
)
from twill.mapping.cost.dataset import columns_from_rows, evaluate_columns, evaluate_rows
from twill.mapping.mapping import to_dosa_string, verify_mapping
from twill.mapping.search.random import sample_batch
from twill.mapping.workload import Layer


@pytest.fixture(scope="module")
def sample(benchmark_data: Path) -> Path:
    return benchmark_data / "dosa" / "timeloop_sample.csv"


def test_every_shipped_row_has_the_scalar_models_numbers(sample):
    rows, errors = evaluate_columns(read_dosa_columns(sample))
    data = read_dosa_dataset(sample)
    assert len(rows) == len(data) == 2000 and errors["valid"] == 2000
    for got, r in zip(rows, data, strict=True):
        rep = evaluate(r.layer, r.arch, r.mapping)
        want = (rep.cycles, rep.energy_uj, rep.edp, rep.utilisation, r.layer.key)
        assert (got["cycles"], got["energy_uJ"], got["edp"], got["utilisation"], got["layer"]) == (
            want
        ), r.index
        assert got["valid"] is (not verify_mapping(r.layer, r.arch, r.mapping))
        assert (got["target_cycles"], got["target_energy_uJ"]) == (
            r.target_cycles,
            r.target_energy_uj,
        )


def test_the_column_reader_reads_what_the_row_reader_reads(sample):
    fast, slow = read_dosa_columns(sample), columns_from_rows(read_dosa_dataset(sample))
    assert [ly.key for ly in fast.layers] == [ly.key for ly in slow.layers]
    assert fast.archs == slow.archs
    for name in ("index", "layer_of", "arch_of", "target_cycles", "target_edp"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    for name in ("temporal", "spatial", "order", "group_temporal", "group_spatial", "keeps"):
        assert np.array_equal(getattr(fast.mappings, name), getattr(slow.mappings, name)), name
    assert fast.error == slow.error and fast.mapping_text == slow.mapping_text


def _edited(sample: Path, tmp_path: Path, edit: dict[int, str], newline: str = "\n") -> Path:
    """The first five rows of the sample with the mapping of some rows replaced."""
    lines = sample.read_text().splitlines()[:6]
    col = lines[0].split(",").index("mapping.mapping")
    for i, text in edit.items():
        fields = lines[i + 1].split(",")
        fields[col] = text
        lines[i + 1] = ",".join(fields)
    out = tmp_path / "rows.csv"
    out.write_bytes((newline.join(lines) + newline).encode())
    return out


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_odd_spellings_and_bad_mappings_read_as_row_by_row(sample, tmp_path, newline):
    path = _edited(
        sample,
        tmp_path,
        {
            1: "L3[WIO] Z9",  # not a mapping: the row keeps the parser's message
            2: "L3[WIO]  K8 Q28 S3 C2 P2 R3 - L2[WI] n1 k16x - L1[O] K2 C4 P14 - L0[W] N1",
            3: "L3[WIO] K4 K2 - L2[WI] N1 - L1[O] C2 - L0[W] P2",  # a loop twice
        },
        newline,
    )
    fast, slow = read_dosa_columns(path), columns_from_rows(read_dosa_dataset(path))
    assert fast.error == slow.error and "Z9" in fast.error[1] and "two temporal" in fast.error[3]
    assert fast.error[2] is None
    for name in ("temporal", "spatial", "order", "keeps"):
        assert np.array_equal(getattr(fast.mappings, name), getattr(slow.mappings, name)), name
    assert evaluate_columns(fast) == evaluate_rows(read_dosa_dataset(path))


def test_a_bad_value_is_refused_as_the_row_reader_refuses_it(sample, tmp_path):
    lines = sample.read_text().splitlines()[:4]
    col = lines[0].split(",").index("arch.meshX")
    fields = lines[2].split(",")
    fields[col] = "-3"
    lines[2] = ",".join(fields)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidProblemError) as fast:
        read_dosa_columns(path)
    with pytest.raises(InvalidProblemError) as slow:
        read_dosa_dataset(path)
    assert str(fast.value) == str(slow.value) and "row 3" in str(fast.value)


def test_validity_of_random_mappings_is_the_verifiers(sample, tmp_path):
    """Random factorisations (most overflow a buffer or the array) written as DOSA strings:
    the batch's verdict and the violations are those of verify_mapping, row by row."""
    layer = Layer("l", {"P": 28, "Q": 28, "C": 64, "K": 96, "R": 3, "S": 3})
    arch = gemmini_arch(16, 64, 16)
    batch = sample_batch(layer, arch, 60, seed=3)
    texts = [to_dosa_string(batch.mapping(b), arch) for b in range(len(batch))]
    lines = sample.read_text().splitlines()
    head = lines[0].split(",")
    values = dict(zip(head, lines[1].split(","), strict=True))
    values.update({"prob.P": "28", "prob.Q": "28", "prob.C": "64", "prob.K": "96", "prob.R": "3",
                   "prob.S": "3", "prob.Wstride": "1", "prob.Hstride": "1",
                   "arch.meshX": "16", "arch.mem1_depth": "256", "arch.mem1_instances": "16",
                   "arch.mem2_entries": "65536"})  # fmt: skip
    body = [",".join(values[h] if h != "mapping.mapping" else t for h in head) for t in texts]
    path = tmp_path / "random.csv"
    path.write_text("\n".join([lines[0], *body]) + "\n")
    rows, errors = evaluate_columns(read_dosa_columns(path))
    data = read_dosa_dataset(path)
    assert 0 < errors["valid"] < len(rows)
    for got, r in zip(rows, data, strict=True):
        viol = [str(v) for v in verify_mapping(r.layer, r.arch, r.mapping)]
        assert (got["valid"], got["violations"]) == (not viol, viol)
        assert got["cycles"] == evaluate(r.layer, r.arch, r.mapping).cycles


def test_evaluate_many_matches_one_layer_and_architecture_at_a_time():
    """Rows of different layers (a grouped one among them) on different Gemmini sizes, in one
    call, against evaluate_batch of each pair: the same numbers, bit for bit."""
    from twill.mapping.cost.analytical import evaluate_batch

    pairs = [
        (Layer("a", {"P": 14, "Q": 14, "C": 32, "K": 64, "R": 3, "S": 3}, 2, 2), gemmini_arch(8)),
        (Layer("b", {"P": 7, "C": 48, "K": 16}, groups=4), gemmini_arch(16, 256, 64)),
        (Layer.gemm(64, 128, 96), gemmini_arch(32, 512, 128)),
    ]
    parts = [sample_batch(ly, arch, 200, seed=i) for i, (ly, arch) in enumerate(pairs)]
    placed = []
    for (ly, _), p in zip(pairs, parts, strict=True):
        gt, gs = np.ones((200, 4), dtype=np.int64), np.ones((200, 4), dtype=np.int64)
        gt[:, -1] = ly.groups
        placed.append((p.temporal, p.spatial, p.order,
                       gt if p.group_temporal is None else p.group_temporal,
                       gs if p.group_spatial is None else p.group_spatial))  # fmt: skip
    batch = MappingBatch(*(np.concatenate(a) for a in zip(*placed, strict=True)))
    which = np.repeat(np.arange(len(pairs)), 200)
    got = evaluate_many(
        LayerArrays.of([ly for ly, _ in pairs]).take(which),
        ArchArrays.of([a for _, a in pairs]).take(which),
        batch,
    )
    for i, ((ly, arch), part) in enumerate(zip(pairs, parts, strict=True)):
        want = evaluate_batch(ly, arch, part)
        rows = which == i
        for name in ("cycles", "energy_pj", "utilisation", "valid", "fills", "reads"):
            assert np.array_equal(getattr(got, name)[rows], getattr(want, name)), (i, name)
