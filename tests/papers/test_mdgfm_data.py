"""MDGFM on the paper's real graphs from a user path: ``load_paper_graphs`` and ``TransferConfig.data_root``.

Tiny graphs are written in each raw format (Planetoid pickles for Cora/CiteSeer/PubMed, geom-gcn text files for
Cornell (WebKB) and Chameleon/Squirrel (WikipediaNetwork)) into ``tmp_path``, in torch_geometric's folder layout;
the loader must give back exactly what was written (features, labels, the undirected edge set, names, homophily
flags), agree with torch_geometric's own dataset classes on the same folder, never touch the network, and name a
missing file in a one-line error. The ``transfer`` experiment then runs its smoke preset on such a folder.
"""

from __future__ import annotations

import math
import pickle
import socket
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch_geometric.data.download
from torch_geometric.utils import is_undirected

from icml25.common.checks import ConfigError
from icml25.core.experiment import parse_value
from icml25.papers.mdgfm import PAPER_GRAPHS, PAPER_TARGET_SETTINGS, load_paper_graphs
from icml25.papers.mdgfm.data import OFFICIAL_TARGET_SETTINGS, paper_graph_files
from icml25.papers.mdgfm.repro import EXPERIMENTS, TransferConfig

EXP = next(e for e in EXPERIMENTS if e.name == "transfer")


@pytest.fixture(autouse=True)
def _no_network_one_thread(monkeypatch):
    """Every test: any attempt to reach the network raises; torch on one thread."""
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(torch_geometric.data.download, "download_url", refuse)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------- fixture writers (the raw formats)

def _graph(n: int, d: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Features (small integers, exact in float32), labels and a directed edge list with a self-loop, a
    duplicate and a reversed duplicate: what the loader must clean up."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(n, d)).astype(np.float64)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    edges = [(int(a), int(b)) for a, b in zip(rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n), strict=True)]
    edges += [(0, 0), (0, 1), (0, 1), (1, 0)]
    return x, y, edges


def _undirected_pairs(edges, n_nodes: int | None = None) -> set[tuple[int, int]]:
    return {(a, b) for a, b in edges if a != b} | {(b, a) for a, b in edges if a != b}


def write_planetoid(root: Path, name: str, x: np.ndarray, y: np.ndarray, edges, n_test: int, gap: bool = False,
                    seed: int = 0) -> dict:
    """Planetoid raw files (``ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index}``) under ``root/<Name>/raw``.

    The last ``n_test`` nodes are test nodes, listed in ``test.index`` in a shuffled order with ``tx``/``ty`` rows
    in that order. ``gap``: (CiteSeer's quirk) one node inside the test range has no ``tx`` row and is not in
    ``test.index``; its features and labels must come back as zeros / class 0. Returns the expected x, y.
    """
    n, n_classes = len(y), int(y.max()) + 1
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    onehot = np.eye(n_classes)[y]
    n_all = n - n_test
    test_nodes = np.arange(n_all, n)
    x_exp, y_exp = x.copy(), y.copy()
    if gap:
        missing = test_nodes[len(test_nodes) // 2]
        test_nodes = test_nodes[test_nodes != missing]
        x_exp[missing], y_exp[missing] = 0.0, 0
    order = np.random.default_rng(seed).permutation(test_nodes)
    prefix = raw / f"ind.{name.lower()}"
    objs = {"x": sp.csr_matrix(x[:5]), "y": onehot[:5], "allx": sp.csr_matrix(x[:n_all]), "ally": onehot[:n_all],
            "tx": sp.csr_matrix(x[order]), "ty": onehot[order]}
    graph: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in edges:
        graph[a].append(b)
    objs["graph"] = graph
    for part, obj in objs.items():
        blob = pickle.dumps(obj, protocol=2)
        if part in ("x", "tx", "allx"):  # as in the original files: the old scipy.sparse.csr module path
            old = blob
            blob = blob.replace(b"cscipy.sparse._csr\ncsr_matrix", b"cscipy.sparse.csr\ncsr_matrix")
            assert blob != old
        Path(f"{prefix}.{part}").write_bytes(blob)
    Path(f"{prefix}.test.index").write_text("".join(f"{i}\n" for i in order))
    return {"x": x_exp, "y": y_exp}


def write_geom_gcn(raw: Path, x: np.ndarray, y: np.ndarray, edges, splits_of: str | None = None) -> None:
    """geom-gcn raw files (``out1_node_feature_label.txt``, ``out1_graph_edges.txt``) in ``raw``; with
    ``splits_of``, also the ten ``<name>_split_0.6_0.2_<i>.npz`` files torch_geometric's classes require."""
    raw.mkdir(parents=True)
    lines = ["node_id\tfeature\tlabel"]
    lines += [f"{i}\t{','.join(str(int(v)) for v in row)}\t{int(c)}"
              for i, (row, c) in enumerate(zip(x, y, strict=True))]
    (raw / "out1_node_feature_label.txt").write_text("\n".join(lines) + "\n")
    (raw / "out1_graph_edges.txt").write_text("node_id\tnode_id\n" + "".join(f"{a}\t{b}\n" for a, b in edges))
    if splits_of:
        n = len(y)
        for i in range(10):
            m = np.zeros(n, dtype=bool)
            np.savez(raw / f"{splits_of}_split_0.6_0.2_{i}.npz", train_mask=m, val_mask=m, test_mask=m)


SIZES = {"Cora": (520, 57, 3), "CiteSeer": (524, 52, 4), "PubMed": (515, 61, 3),
         "Cornell": (58, 53, 3), "Chameleon": (62, 66, 4), "Squirrel": (57, 50, 3)}
"""(nodes, features, classes) per data set: at least 50 nodes and 50 features (MDGFM's PCA to 50 columns); the
Planetoid sets have more than 5 + 500 nodes, because torch_geometric's ``read_planetoid_data`` (which the loader
calls) builds the public split's 500-node validation mask after the labelled rows."""


def write_paper_graphs(root: Path, sizes: dict = SIZES, pyg_splits: bool = False) -> dict[str, dict]:
    """All six data sets in torch_geometric's raw layout under ``root``; returns what each should load as."""
    expected = {}
    for i, name in enumerate(PAPER_GRAPHS):
        n, d, c = sizes[name]
        x, y, edges = _graph(n, d, c, seed=i)
        if name in ("Cora", "CiteSeer", "PubMed"):
            exp = write_planetoid(root, name, x, y, edges, n_test=n // 3, gap=name == "CiteSeer", seed=i)
        else:
            folder = root / name.lower() / ("raw" if name == "Cornell" else "geom_gcn/raw")
            write_geom_gcn(folder, x, y, edges, splits_of=name.lower() if pyg_splits else None)
            exp = {"x": x, "y": y}
        expected[name] = {**exp, "edges": _undirected_pairs(edges),
                          "homophilic": name in ("Cora", "CiteSeer", "PubMed")}
    return expected


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


# --------------------------------------------------------------------------- the experiment with data_root

def test_transfer_smoke_on_the_paper_layout(paper_root):
    root, _ = paper_root
    cfg = EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cora", "Cornell")})
    metrics = EXP.run(cfg, seed=0)
    for tag, name in (("homo", "Cora"), ("hetero", "Cornell")):
        assert metrics[f"{tag}_shots"] == PAPER_TARGET_SETTINGS[name].shots
        assert f"{tag}_mdgfm_minus_gcnproto" in metrics
    assert all(math.isfinite(v) for v in metrics.values()), metrics
    assert metrics == EXP.run(cfg, seed=0)  # seeded


def test_config_data_root_and_targets(tmp_path, paper_root):
    root, _ = paper_root
    assert TransferConfig().data_root == ""
    assert parse_value(TransferConfig, "targets", "Cora,Chameleon") == ("Cora", "Chameleon")
    with pytest.raises(ConfigError, match=r"TransferConfig\.data_root must be an existing directory"):
        EXP.make_config("smoke", {"data_root": str(tmp_path / "missing"), "targets": ("Cora",)})
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"TransferConfig\.data_root must be an existing directory"):
        EXP.make_config("smoke", {"data_root": str(tmp_path / "file"), "targets": ("Cora",)})
    with pytest.raises(ConfigError, match=r"TransferConfig\.targets must be among Cora, CiteSeer.*'hetero10'"):
        EXP.make_config("smoke", {"data_root": str(root)})  # the smoke preset's generated target
    with pytest.raises(ConfigError, match=r"TransferConfig\.targets may hold at most one homophilic data set"):
        EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cora", "PubMed")})
    with pytest.raises(ConfigError, match=r"TransferConfig\.targets may hold at most one heterophilic data set"):
        EXP.make_config("smoke", {"data_root": str(root), "targets": ("Cornell", "Cora", "Squirrel")})
    with pytest.raises(ConfigError, match=r"TransferConfig\.targets must be among homo85.*'Cora'"):
        EXP.make_config("smoke", {"targets": ("Cora",)})
    # validation checks only that data_root is a directory: an empty one passes, the run names the first file
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = EXP.make_config("smoke", {"data_root": str(empty), "targets": ("Cora",)})
    with pytest.raises(FileNotFoundError, match="Cora: missing raw file"):
        EXP.run(cfg, seed=0)
