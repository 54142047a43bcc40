"""MDGFM on the paper's real graphs from a user path: ``load_paper_graphs`` and the ``paper_data`` experiment
(``PaperTransferConfig.data_root``).

Tiny graphs are written in each raw format (Planetoid pickles for Cora/CiteSeer/PubMed, geom-gcn text files for
Cornell (WebKB) and Chameleon/Squirrel (WikipediaNetwork)) into ``tmp_path``, in torch_geometric's folder layout, by
the writers in ``tests/paper_files/mdgfm.py``; the loader must give back exactly what was written (features, labels,
the undirected edge set, names, homophily flags), agree with torch_geometric's own dataset classes on the same
folder, never touch the network, and name a missing file in a one-line error. The ``paper_data`` experiment then
runs its smoke preset on such a folder, and is skipped (with its claims not run) without one; the generated-domain
``transfer`` experiment has no data setting.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch_geometric.data.download
from torch_geometric.utils import is_undirected

from icml25.common.checks import ConfigError
from icml25.core.experiment import parse_value
from icml25.papers.mdgfm import PAPER_GRAPHS, PAPER_TARGET_SETTINGS, load_paper_graphs
from icml25.papers.mdgfm.data import OFFICIAL_TARGET_SETTINGS, paper_graph_files
from icml25.papers.mdgfm.repro import CLAIMS, EXPERIMENTS, PaperTransferConfig, TransferConfig
from paper_files.mdgfm import SIZES, write_paper_graphs

EXP = next(e for e in EXPERIMENTS if e.name == "paper_data")
STANDIN = next(e for e in EXPERIMENTS if e.name == "transfer")


@pytest.fixture(autouse=True)
def _no_network_one_thread(no_network, monkeypatch):
    """Every test: any attempt to reach the network raises; torch on one thread."""
    monkeypatch.setattr(torch_geometric.data.download, "download_url", no_network)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def paper_root(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("pyg")
    return root, write_paper_graphs(root)


# --------------------------------------------------------------------------- the loader

def test_load_paper_graphs_gives_back_what_was_written(paper_root):
    root, expected = paper_root
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the old scipy module path in the pickles must not leak a warning
        graphs = load_paper_graphs(root)
    assert [g.name for g in graphs] == list(PAPER_GRAPHS)
    assert [g.homophilic for g in graphs] == [True, True, True, False, False, False]
    for g in graphs:
        exp = expected[g.name]
        assert g.x.dtype == torch.float32 and g.y.dtype == torch.long and g.edge_index.dtype == torch.long
        np.testing.assert_array_equal(g.x.numpy(), exp["x"].astype(np.float32), err_msg=g.name)
        np.testing.assert_array_equal(g.y.numpy(), exp["y"], err_msg=g.name)
        pairs = [tuple(e) for e in g.edge_index.t().tolist()]
        assert len(pairs) == len(set(pairs)), g.name            # coalesced: no duplicate
        assert set(pairs) == exp["edges"], g.name               # both directions, self-loops dropped
        assert is_undirected(g.edge_index, num_nodes=g.num_nodes)
        assert g.num_nodes == len(exp["y"])
        same = np.mean([exp["y"][a] == exp["y"][b] for a, b in pairs])
        assert g.homophily == pytest.approx(same)


def test_citeseer_gap_node_is_zero_and_class_zero(paper_root):
    root, _ = paper_root
    (g,) = load_paper_graphs(root, names=("CiteSeer",))
    n, _, _ = SIZES["CiteSeer"]
    gap = n - n // 3 + (n // 3) // 2
    assert float(g.x[gap].abs().sum()) == 0.0 and int(g.y[gap]) == 0


def test_names_subset_and_order(paper_root):
    root, _ = paper_root
    graphs = load_paper_graphs(root, names=["Squirrel", "Cora"])
    assert [(g.name, g.homophilic) for g in graphs] == [("Squirrel", False), ("Cora", True)]
    with pytest.raises(ValueError, match="names must be distinct names among Cora"):
        load_paper_graphs(root, names=("Cora", "cora"))
    with pytest.raises(ValueError, match="names must be distinct"):
        load_paper_graphs(root, names=("Cora", "Cora"))


def test_settings_keyed_by_real_names():
    assert set(PAPER_TARGET_SETTINGS) == set(PAPER_GRAPHS)
    assert PAPER_TARGET_SETTINGS["CiteSeer"] == OFFICIAL_TARGET_SETTINGS["Citeseer"]
    assert PAPER_TARGET_SETTINGS["PubMed"] == OFFICIAL_TARGET_SETTINGS["Pubmed"]
    for name in ("Cora", "Cornell", "Chameleon", "Squirrel"):
        assert PAPER_TARGET_SETTINGS[name] == OFFICIAL_TARGET_SETTINGS[name]
    assert {n: s.shots for n, s in PAPER_TARGET_SETTINGS.items()} == {
        "Cora": 5, "CiteSeer": 5, "PubMed": 5, "Cornell": 3, "Chameleon": 5, "Squirrel": 3}


@pytest.mark.parametrize("name, rel", [
    ("Chameleon", "chameleon/geom_gcn/raw/out1_graph_edges.txt"),
    ("Cora", "Cora/raw/ind.cora.test.index"),
    ("Cornell", "cornell/raw/out1_node_feature_label.txt"),
])
def test_missing_file_is_named_in_one_line(tmp_path, name, rel):
    write_paper_graphs(tmp_path)
    (tmp_path / rel).unlink()
    with pytest.raises(FileNotFoundError) as err:
        load_paper_graphs(tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{name}: missing raw file {tmp_path / rel}")
    assert "<root>/{Cora,CiteSeer,PubMed}/raw/ind." in msg and "geom_gcn/raw" in msg
    assert not (tmp_path / rel).exists()      # nothing was fetched in its place
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        load_paper_graphs(tmp_path / "nowhere")


def test_layout_is_the_one_torch_geometric_writes():
    root = Path("/r")
    assert paper_graph_files(root, "PubMed")[0] == root / "PubMed/raw/ind.pubmed.x"
    assert paper_graph_files(root, "Cornell")[1] == root / "cornell/raw/out1_graph_edges.txt"
    assert paper_graph_files(root, "Squirrel")[0] == root / "squirrel/geom_gcn/raw/out1_node_feature_label.txt"


def test_official_codes_planetoid_folder_names_are_read(tmp_path, paper_root):
    """The official code calls ``Planetoid(root='data', name='Pubmed')`` / ``'Citeseer'``: those folders work."""
    import shutil
    root, expected = paper_root
    for name, folder in (("PubMed", "Pubmed"), ("CiteSeer", "citeseer")):
        shutil.copytree(root / name, tmp_path / folder)
    assert paper_graph_files(tmp_path, "PubMed")[0] == tmp_path / "Pubmed/raw/ind.pubmed.x"
    assert paper_graph_files(tmp_path, "Cora")[0] == tmp_path / "Cora/raw/ind.cora.x"  # none there: canonical
    for g in load_paper_graphs(tmp_path, names=("PubMed", "CiteSeer")):
        np.testing.assert_array_equal(g.y.numpy(), expected[g.name]["y"])


def test_agrees_with_torch_geometric_classes_on_the_same_folder(tmp_path):
    """torch_geometric's Planetoid / WebKB / WikipediaNetwork, pointed at the same raw folders (network refused,
    so they only process what is there), load the same x and y and, made undirected, the same edges."""
    from torch_geometric.datasets import Planetoid, WebKB, WikipediaNetwork
    from torch_geometric.utils import to_undirected

    write_paper_graphs(tmp_path, pyg_splits=True)
    ours = {g.name: g for g in load_paper_graphs(tmp_path, names=("Cora", "Cornell", "Squirrel"))}
    pyg = {"Cora": Planetoid(str(tmp_path), "Cora")[0], "Cornell": WebKB(str(tmp_path), "Cornell")[0],
           "Squirrel": WikipediaNetwork(str(tmp_path), "squirrel", geom_gcn_preprocess=True)[0]}
    for name, ref in pyg.items():
        torch.testing.assert_close(ours[name].x, ref.x, rtol=0, atol=0)
        assert torch.equal(ours[name].y, ref.y)
        ref_ei = to_undirected(ref.edge_index[:, ref.edge_index[0] != ref.edge_index[1]], num_nodes=ref.num_nodes)
        assert torch.equal(ours[name].edge_index, ref_ei), name


# --------------------------------------------------------------------------- the paper_data experiment

def test_paper_data_smoke_on_the_paper_layout(paper_root):
    root, _ = paper_root
    cfg = EXP.make_config("smoke", {"data_root": str(root)})
    assert cfg.targets == ("Cora", "Cornell")
    metrics = EXP.run(cfg, seed=0)
    for tag, name in (("homo", "Cora"), ("hetero", "Cornell")):
        assert metrics[f"{tag}_shots"] == PAPER_TARGET_SETTINGS[name].shots
        assert f"{tag}_mdgfm_minus_gcnproto" in metrics
    assert all(math.isfinite(v) for v in metrics.values()), metrics
    for claim in CLAIMS:  # every claim of the experiment is measured at smoke
        if claim.experiment == "paper_data":
            assert claim.metric in metrics, claim.id
    assert metrics == EXP.run(cfg, seed=0)  # seeded
    one = EXP.run(EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cornell",)}), seed=0)
    assert {k: v for k, v in metrics.items() if "hetero" in k} == one  # each target on its own: the same numbers


def test_paper_data_runs_the_official_settings():
    """quick and full keep the official model (hidden 256, 400 prompt steps, per-target README learning rates and
    epochs); quick cuts only the number of few-shot tasks."""
    quick, full = EXP.make_config("quick"), EXP.make_config("full")
    assert quick.model == full.model == PaperTransferConfig().model
    assert (full.model.hidden, full.model.prompt_steps, full.model.pretrain_lr, full.model.prompt_lr,
            full.model.pretrain_epochs, full.shots) == (256, 400, None, None, None, None)
    assert (quick.n_tasks, full.n_tasks) == (3, 50) and quick.targets == full.targets == ("Cora", "Chameleon")
    assert EXP.fidelity_of("quick").level == EXP.fidelity_of("full").level == "reduced"
    assert EXP.fidelity_of("smoke").level == "mechanism"
    assert EXP.seeds == STANDIN.seeds


def test_paper_data_claims_twin_the_stand_in_claims():
    """Every paper claim of ``transfer`` and its gate has a ``paper_data_`` twin with the same statistic."""
    by_id = {c.id: c for c in CLAIMS}
    twins = [c for c in CLAIMS if c.experiment == "paper_data"]
    assert len(twins) == 7
    for twin in twins:
        orig = by_id[twin.id.removeprefix("paper_data_")]
        assert orig.experiment == "transfer"
        for key in ("kind", "metric", "op", "threshold", "aggregate", "resolution", "source", "paper_value",
                    "fair_at"):
            assert getattr(twin, key) == getattr(orig, key), (twin.id, key)
        assert twin.requires == tuple(f"paper_data_{r}" for r in orig.requires)
        assert "the paper's" in twin.statement
    assert {by_id[c.id.removeprefix("paper_data_")].id for c in twins} == {
        c.id for c in CLAIMS if c.experiment == "transfer"}


def test_figures_have_one_file_per_experiment(tmp_path):
    pytest.importorskip("matplotlib")
    from icml25.papers.mdgfm.repro import METHODS

    per_seed = [{f"acc_{m}_{tag}_{c}": 50.0 + s for m in METHODS for tag in ("homo", "hetero")
                 for c in ("clean", "noisy")} for s in range(2)]
    paths = EXP.figures(per_seed, EXP.make_config("smoke", {"data_root": str(tmp_path)}), tmp_path)
    assert [p.name for p in paths] == ["mdgfm_paper_data.png"] and paths[0].is_file()
    paths = STANDIN.figures(per_seed, STANDIN.make_config("quick"), tmp_path)
    assert [p.name for p in paths] == ["mdgfm_transfer.png"]
    assert PaperTransferConfig(targets=("PubMed", "Squirrel")).figure_title("hetero") == \
        "target Squirrel (the paper's graph)"


def test_config_data_root_and_targets(tmp_path, paper_root):
    root, _ = paper_root
    assert PaperTransferConfig().data_root == "" and PaperTransferConfig().targets == ("Cora", "Chameleon")
    assert not hasattr(TransferConfig(), "data_root")  # the generated-domain experiment reads no user path
    assert parse_value(PaperTransferConfig, "targets", "Cora,Chameleon") == ("Cora", "Chameleon")
    with pytest.raises(ConfigError, match=r"PaperTransferConfig\.data_root must be an existing directory"):
        EXP.make_config("smoke", {"data_root": str(tmp_path / "missing")})
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"PaperTransferConfig\.data_root must be an existing directory"):
        EXP.make_config("smoke", {"data_root": str(tmp_path / "file")})
    with pytest.raises(ConfigError, match=r"PaperTransferConfig\.targets must be among Cora, CiteSeer.*'hetero10'"):
        EXP.make_config("smoke", {"data_root": str(root), "targets": ("hetero10",)})  # a generated domain
    with pytest.raises(ConfigError, match=r"PaperTransferConfig\.targets may hold at most one homophilic data set"):
        EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cora", "PubMed")})
    with pytest.raises(ConfigError, match=r"PaperTransferConfig\.targets may hold at most one heterophilic data set"):
        EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cornell", "Cora", "Squirrel")})
    with pytest.raises(ConfigError, match=r"TransferConfig\.targets must be among homo85.*paper_data.*'Cora'"):
        STANDIN.make_config("smoke", {"targets": ("Cora",)})
    # validation checks only that data_root is a directory: an empty one passes, the run names the first file
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = EXP.make_config("smoke", {"data_root": str(empty), "targets": ("Cora",)})
    with pytest.raises(FileNotFoundError, match="Cora: missing raw file"):
        EXP.run(cfg, seed=0)
