"""mdgfm: the paper's six graphs as raw files in torch_geometric's layout (``data.PAPER_GRAPHS_LAYOUT``): Planetoid
pickles for Cora/CiteSeer/PubMed, geom-gcn text files for Cornell (WebKB) and Chameleon/Squirrel
(WikipediaNetwork, ``geom_gcn_preprocess=True``)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from icml25.papers.mdgfm.data import PAPER_GRAPHS


def graph(n: int, d: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Features (small integers, exact in float32), labels and a directed edge list with a self-loop, a
    duplicate and a reversed duplicate: what the loader must clean up."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(n, d)).astype(np.float64)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    edges = [(int(a), int(b)) for a, b in zip(rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n), strict=True)]
    edges += [(0, 0), (0, 1), (0, 1), (1, 0)]
    return x, y, edges


def undirected_pairs(edges) -> set[tuple[int, int]]:
    """The undirected edge set (both directions, self-loops dropped) of a directed edge list."""
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
    adjacency: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in edges:
        adjacency[a].append(b)
    objs["graph"] = adjacency
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
        x, y, edges = graph(n, d, c, seed=i)
        if name in ("Cora", "CiteSeer", "PubMed"):
            exp = write_planetoid(root, name, x, y, edges, n_test=n // 3, gap=name == "CiteSeer", seed=i)
        else:
            folder = root / name.lower() / ("raw" if name == "Cornell" else "geom_gcn/raw")
            write_geom_gcn(folder, x, y, edges, splits_of=name.lower() if pyg_splits else None)
            exp = {"x": x, "y": y}
        expected[name] = {**exp, "edges": undirected_pairs(edges),
                          "homophilic": name in ("Cora", "CiteSeer", "PubMed")}
    return expected


def _paper_data(folder: Path) -> dict[str, str]:
    write_paper_graphs(folder)
    return {"data_root": str(folder)}


FILES = {"paper_data": _paper_data}
