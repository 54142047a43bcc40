"""Primphormer on the paper's PATTERN / CLUSTER from a user path: ``load_paper_dataset`` and the ``paper_data``
experiment (``PaperPatternConfig.data_dir``).

Tiny benchmarks are written in the raw format torch_geometric's ``GNNBenchmarkDataset`` reads
(``<root>/<NAME>/raw/<NAME>_v2.pt``: ``torch.save`` of three lists, train / val / test, of dicts with ``x``,
``edge_index``, ``y``) into ``tmp_path`` by ``tests/paper_files/primphormer.py``. The loader must give back exactly
what was written (features, labels, the undirected edge set, split sizes and order), agree with
``GNNBenchmarkDataset`` on the same folder, never touch the network nor write under the folder, and name a missing
file in a one-line error. The ``paper_data`` experiment then runs on such a folder: in the fixture a node's label is
a function of its one-hot symbol in the first ``n_train`` training graphs and the first ``n_test`` test graphs and a
different function everywhere else, so a run that reads the right splits and graphs with the right number of
classes reaches exactly 100% weighted accuracy, and its gap to chance is exactly 100 - 100 / C.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import torch_geometric.data.download
import torch_geometric.datasets.gnn_benchmark_dataset as gnn_benchmark_module
from torch_geometric.utils import coalesce, is_undirected

from icml25.common.checks import ConfigError
from icml25.common.graphs import random_walk_pe
from icml25.core.experiment import parse_value
from icml25.papers.primphormer import PAPER_DATASETS, Primphormer, load_paper_dataset, predict_nodes
from icml25.papers.primphormer.data import PAPER_DATASET_CLASSES, SPLITS, paper_dataset_file
from icml25.papers.primphormer.model import train_node_classifier
from icml25.papers.primphormer.repro import CLAIMS, EXPERIMENTS, PaperPatternConfig, PatternConfig, weighted_accuracy
from paper_files.primphormer import N_TEST, N_TRAIN, WIDTH, write_benchmark
from paper_files.primphormer import graph as _graph

EXP = next(e for e in EXPERIMENTS if e.name == "paper_data")
STANDIN = next(e for e in EXPERIMENTS if e.name == "pattern")


@pytest.fixture(autouse=True)
def _no_network_one_thread(no_network, monkeypatch):
    """Every test: any attempt to reach the network raises; torch on one thread."""
    monkeypatch.setattr(torch_geometric.data.download, "download_url", no_network)
    monkeypatch.setattr(gnn_benchmark_module, "download_url", no_network)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _pairs(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return {(a, b) for a, b in edge_index.t().tolist()}


def _expected_pairs(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    """Both directions of every edge written, self-loops dropped."""
    return {(a, b) for a, b in _pairs(edge_index) if a != b} | {(b, a) for a, b in _pairs(edge_index) if a != b}


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture(scope="module")
def bench_root(tmp_path_factory) -> tuple[Path, dict[str, list[list[dict]]]]:
    root = tmp_path_factory.mktemp("gnn_benchmark")
    return root, {name: write_benchmark(root, name, seed=i) for i, name in enumerate(PAPER_DATASETS)}


# --------------------------------------------------------------------------- the loader

@pytest.mark.parametrize("name", PAPER_DATASETS)
def test_load_gives_back_what_was_written(bench_root, name):
    root, written = bench_root
    before = _files(root)
    data = load_paper_dataset(name, root)
    assert _files(root) == before                                # nothing written under root
    assert list(data) == list(SPLITS)
    assert [len(data[s]) for s in SPLITS] == [N_TRAIN + 4, 3, N_TEST + 2]
    for split, raw in zip(SPLITS, written[name], strict=True):
        for i, (g, item) in enumerate(zip(data[split], raw, strict=True)):
            where = f"{name} {split} {i}"
            assert g.x.dtype == torch.float32 and g.y.dtype == torch.long and g.edge_index.dtype == torch.long
            assert g.x.shape == (item["x"].size(0), WIDTH[name]), where
            assert torch.equal(g.x, item["x"]), where
            assert torch.equal(g.y, item["y"]), where
            assert set(g.keys()) == {"x", "edge_index", "y"}, where
            pairs = [tuple(e) for e in g.edge_index.t().tolist()]
            assert len(pairs) == len(set(pairs)), where            # coalesced: no duplicate
            assert set(pairs) == _expected_pairs(item["edge_index"]), where
            assert torch.equal(g.edge_index, coalesce(g.edge_index, num_nodes=g.num_nodes)), where  # sorted
            assert is_undirected(g.edge_index, num_nodes=g.num_nodes), where
    messy = written[name][0][0]["edge_index"]
    assert (0, 0) in _pairs(messy) and (1, 0) not in _pairs(messy)  # the fixture has what must be cleaned
    assert (0, 0) not in _pairs(data["train"][0].edge_index) and (1, 0) in _pairs(data["train"][0].edge_index)


def test_splits_subset_and_order(bench_root):
    root, written = bench_root
    data = load_paper_dataset("CLUSTER", root, splits=["test", "train"])
    assert list(data) == ["test", "train"]
    assert torch.equal(data["test"][0].y, written["CLUSTER"][2][0]["y"])
    assert torch.equal(data["train"][-1].x, written["CLUSTER"][0][-1]["x"])
    for bad in ((), ("train", "train"), ("training",)):
        with pytest.raises(ValueError, match="splits must be distinct names among train, val, test"):
            load_paper_dataset("CLUSTER", root, splits=bad)
    with pytest.raises(ValueError, match="unknown paper data set 'ZINC'; valid: PATTERN, CLUSTER"):
        load_paper_dataset("ZINC", root)


def test_layout_is_the_one_torch_geometric_reads(tmp_path):
    from torch_geometric.datasets import GNNBenchmarkDataset

    for name in PAPER_DATASETS:
        assert paper_dataset_file("/r", name) == Path(f"/r/{name}/raw/{name}_v2.pt")
        ds = GNNBenchmarkDataset.__new__(GNNBenchmarkDataset)  # its file names, without touching any disk
        ds.name, ds.root = name, str(tmp_path)
        assert Path(ds.raw_dir) / ds.raw_file_names[0] == paper_dataset_file(tmp_path, name)
    assert PAPER_DATASET_CLASSES == {"PATTERN": 2, "CLUSTER": 6}


@pytest.mark.parametrize("name", PAPER_DATASETS)
def test_agrees_with_gnn_benchmark_dataset_on_the_same_folder(tmp_path, bench_root, name):
    """torch_geometric's GNNBenchmarkDataset, pointed at a copy of the folder (network refused, so it only
    processes what is there), loads the same x and y and, made undirected without self-loops, the same edges."""
    import shutil

    from torch_geometric.datasets import GNNBenchmarkDataset
    from torch_geometric.utils import remove_self_loops, to_undirected

    root, _ = bench_root
    shutil.copytree(root / name, tmp_path / name)
    ours = load_paper_dataset(name, tmp_path)
    for split in SPLITS:
        ref = GNNBenchmarkDataset(str(tmp_path), name, split=split)
        assert len(ref) == len(ours[split])
        for g, r in zip(ours[split], ref, strict=True):
            assert torch.equal(g.x, r.x) and torch.equal(g.y, r.y)
            ref_ei = to_undirected(remove_self_loops(r.edge_index)[0], num_nodes=r.num_nodes)
            assert torch.equal(g.edge_index, ref_ei)


@pytest.mark.parametrize("name", PAPER_DATASETS)
def test_missing_file_is_named_in_one_line(tmp_path, name):
    path = tmp_path / name / "raw" / f"{name}_v2.pt"
    (tmp_path / name / "raw").mkdir(parents=True)
    with pytest.raises(FileNotFoundError) as err:
        load_paper_dataset(name, tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{name}: missing raw file {path}; expected <root>/{{PATTERN,CLUSTER}}/raw/")
    assert "nothing is downloaded" in msg
    assert not path.exists() and _files(tmp_path) == [name, f"{name}/raw"]  # nothing fetched in its place


def test_malformed_files_are_refused(tmp_path):
    def write(splits) -> None:
        raw = tmp_path / "CLUSTER" / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        torch.save(splits, raw / "CLUSTER_v2.pt")

    good = _graph(np.random.default_rng(0), "CLUSTER")
    write([[good], [good]])
    with pytest.raises(ValueError, match=r"expected the three splits \(train, val, test\).*list of length 2"):
        load_paper_dataset("CLUSTER", tmp_path)
    for bad, match in (
        ({**good, "y": good["y"] + 6}, r"CLUSTER train graph 1: labels must lie in \[0, 6\)"),
        ({**good, "x": good["x"].long()}, "CLUSTER train graph 1: x must be a non-empty \\(N, F\\) float tensor"),
        ({**good, "edge_index": good["edge_index"] + 100}, "CLUSTER train graph 1: edge_index has node ids outside"),
        ({"x": good["x"], "y": good["y"]}, "CLUSTER train graph 1: expected a dict with x, edge_index, y"),
        ({**good, "x": good["x"][:, :5]}, "CLUSTER train graph 1: 5 node features, other graphs 7"),
    ):
        write([[good, bad], [good], [good]])
        with pytest.raises(ValueError, match=match):
            load_paper_dataset("CLUSTER", tmp_path)
    write([[good], [good], [good, {**good, "y": good["y"][:-1]}]])
    assert len(load_paper_dataset("CLUSTER", tmp_path, splits=("train",))["train"]) == 1  # only what is asked
    with pytest.raises(ValueError, match=r"CLUSTER test graph 1: y must be \(\d+,\) integer node labels"):
        load_paper_dataset("CLUSTER", tmp_path)


class _Payload:
    """Not a tensor or container: a pickled object of this class would run code on load."""


def test_pickled_objects_are_not_loaded(tmp_path):
    """The file is read with torch.load(weights_only=True): an arbitrary pickled object is refused, not run."""
    raw = tmp_path / "PATTERN" / "raw"
    raw.mkdir(parents=True)
    torch.save([[_Payload()], [], []], raw / "PATTERN_v2.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_paper_dataset("PATTERN", tmp_path)


# --------------------------------------------------------------------------- the paper_data experiment

def _run_cfg(root: Path, name: str, **extra):
    return EXP.make_config("smoke", {"data_dir": str(root), "paper_dataset": name, "n_train": N_TRAIN,
                                     "n_test": N_TEST, "model.epochs": 80, **extra})


@pytest.mark.parametrize("name", PAPER_DATASETS)
def test_pattern_experiment_on_the_paper_layout(bench_root, name):
    """The smoke models (Primphormer and the MPNN, 1 layer of width 16) trained 80 epochs on the first 12 training
    graphs learn the fixture's symbol -> label map and score exactly 100% on the first 4 test graphs. Reading the
    val split, the shifted graphs at the end of either split, or too few output classes would score less."""
    root, _ = bench_root
    cfg = _run_cfg(root, name)
    metrics = EXP.run(cfg, seed=0)
    c = PAPER_DATASET_CLASSES[name]
    assert metrics["acc_primphormer"] == 100.0 and metrics["acc_mpnn"] == 100.0
    assert metrics["primphormer_minus_mpnn"] == 0.0
    assert metrics["primphormer_minus_chance"] == pytest.approx(100.0 - 100.0 / c, abs=1e-12)
    assert math.isfinite(metrics["ksvd_loss_final"]) and metrics["ksvd_loss_final"] >= 0.0
    assert metrics == EXP.run(cfg, seed=0)  # seeded


def test_pattern_experiment_re_derived_with_the_public_api(bench_root):
    """One epoch on CLUSTER (accuracy not yet saturated): the experiment's Primphormer accuracy and KSVD loss are
    re-derived from the loader, RWSE and the public model / training functions on the first n_train / n_test
    graphs, with 6 output classes."""
    root, _ = bench_root
    cfg = _run_cfg(root, "CLUSTER", **{"model.epochs": 1})
    metrics = EXP.run(cfg, seed=3)
    data = load_paper_dataset("CLUSTER", root, splits=("train", "test"))
    train, test = data["train"][:N_TRAIN], data["test"][:N_TEST]
    for g in train + test:
        g.pe = random_walk_pe(g.edge_index, g.num_nodes, cfg.rwse_dim)
    m = cfg.model
    torch.manual_seed(3)
    model = Primphormer(in_dim=7, hidden=m.hidden, n_layers=m.n_layers, out_dim=6, task="node", pe_dim=cfg.rwse_dim,
                        heads=m.heads, rank=m.rank, n_s=m.n_s or None)
    ksvd = train_node_classifier(model, train, m, seed=3)
    acc = weighted_accuracy(*predict_nodes(model, test), n_classes=6)
    assert acc < 100.0
    assert metrics["acc_primphormer"] == acc and metrics["ksvd_loss_final"] == ksvd
    assert metrics["primphormer_minus_chance"] == acc - 100.0 / 6


def test_too_many_graphs_requested_is_named(bench_root):
    root, _ = bench_root
    with pytest.raises(ValueError, match=r"PaperPatternConfig\.n_test=7 exceeds the 6 graphs of PATTERN's test "):
        EXP.run(_run_cfg(root, "PATTERN", n_test=7, **{"model.epochs": 1}), seed=0)
    with pytest.raises(ValueError, match=r"PaperPatternConfig\.n_train=17 exceeds the 16 graphs of CLUSTER's "):
        EXP.run(_run_cfg(root, "CLUSTER", n_train=17, **{"model.epochs": 1}), seed=0)


def test_config_data_dir_and_paper_dataset(tmp_path, bench_root):
    root, _ = bench_root
    assert PaperPatternConfig().data_dir == "" and PaperPatternConfig().paper_dataset == "PATTERN"
    assert EXP.data_setting == "data_dir" and not STANDIN.data_setting
    for preset in ("smoke", "quick", "full"):
        assert EXP.make_config(preset).data_dir == ""
        assert EXP.missing_data(EXP.make_config(preset))
        assert not hasattr(STANDIN.make_config(preset), "data_dir")  # the generated-graph experiment reads no path
    assert not hasattr(PatternConfig(), "paper_dataset")
    assert not EXP.missing_data(EXP.make_config("smoke", {"data_dir": str(root)}))
    assert parse_value(PaperPatternConfig, "paper_dataset", "CLUSTER") == "CLUSTER"
    assert parse_value(PaperPatternConfig, "data_dir", str(root)) == str(root)
    with pytest.raises(ConfigError, match=r"PaperPatternConfig\.data_dir must be an existing folder with "
                                          r"<paper_dataset>/raw/<paper_dataset>_v2\.pt \(empty: the experiment"):
        EXP.make_config("smoke", {"data_dir": str(tmp_path / "missing")})
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"PaperPatternConfig\.data_dir must be an existing folder"):
        EXP.make_config("smoke", {"data_dir": str(tmp_path / "file")})
    with pytest.raises(ConfigError, match="has no setting 'data_dir'"):
        STANDIN.make_config("smoke", {"data_dir": str(root)})
    with pytest.raises(ConfigError, match=r"PaperPatternConfig\.paper_dataset must be one of 'PATTERN', 'CLUSTER', "
                                          r"got 'ZINC'"):
        EXP.make_config("smoke", {"data_dir": str(root), "paper_dataset": "ZINC"})
    # validation checks only that data_dir is a directory: an empty one passes, the run names the missing file
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = EXP.make_config("smoke", {"data_dir": str(empty), "paper_dataset": "CLUSTER"})
    with pytest.raises(FileNotFoundError, match=f"CLUSTER: missing raw file {empty / 'CLUSTER/raw/CLUSTER_v2.pt'}"):
        EXP.run(cfg, seed=0)
    assert _files(empty) == []


def test_paper_data_presets_and_claims():
    """The paper_data presets keep the full recipe's model and budget at quick (fewer graphs only), and its claims
    repeat the stand-in's paper claim and gate with the same statistic, threshold and resolution."""
    quick, full = EXP.make_config("quick"), EXP.make_config("full")
    assert quick.model == full.model and (full.model.hidden, full.model.n_layers, full.model.epochs) == (64, 6, 100)
    assert (quick.n_train, full.n_train) == (500, 10000) and set(quick.methods) == {"primphormer", "multihead"}
    assert full.methods == PatternConfig().methods
    assert [EXP.fidelity_of(p).level for p in ("smoke", "quick", "full")] == ["mechanism", "reduced", "reduced"]
    by_id = {c.id: c for c in CLAIMS}
    for twin, standin in (("paper_data_acc_vs_full_attention", "acc_vs_full_attention"),
                          ("paper_data_learned_above_chance", "learned_above_chance")):
        a, b = by_id[twin], by_id[standin]
        assert (a.experiment, b.experiment) == ("paper_data", "pattern")
        assert (a.kind, a.metric, a.op, a.threshold, a.aggregate, a.resolution) == \
            (b.kind, b.metric, b.op, b.threshold, b.aggregate, b.resolution)
        assert a.resolution_reason.endswith(f"(as {standin})")
    assert by_id["paper_data_acc_vs_full_attention"].requires == ("paper_data_learned_above_chance",)
    assert by_id["paper_data_acc_vs_full_attention"].fair_at == "reduced"
    assert "16.67% on CLUSTER" in by_id["paper_data_learned_above_chance"].statement


def test_figures_have_their_own_files(tmp_path):
    pytest.importorskip("matplotlib")
    per_seed = [{"acc_primphormer": 90.0, "acc_mpnn": 80.0, "acc_multihead": 85.0}]
    paper = EXP.figures(per_seed, EXP.make_config("smoke", {"paper_dataset": "CLUSTER"}), tmp_path)
    standin = STANDIN.figures(per_seed, STANDIN.make_config("smoke"), tmp_path)
    assert [p.name for p in paper] == ["paper_data_accuracy.png"] and [p.name for p in standin] == \
        ["pattern_accuracy.png"]
