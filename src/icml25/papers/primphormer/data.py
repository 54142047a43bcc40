"""The paper's node-classification benchmarks (PATTERN, CLUSTER) read from a user's folder; nothing is downloaded.

PATTERN and CLUSTER are the SBM node-classification sets of benchmarking-GNNs (Dwivedi et al., 2020), part of the
GraphGPS suite that Primphormer plugs into. The standard source a user gets them from is torch_geometric's
``GNNBenchmarkDataset(root, "PATTERN")`` (or ``"CLUSTER"``): it downloads ``PATTERN_v2.zip`` / ``CLUSTER_v2.zip``
from ``https://data.pyg.org/datasets/benchmarking-gnns`` and unpacks one file, ``<root>/<NAME>/raw/<NAME>_v2.pt``.
That file (``torch.save`` of the benchmarking-GNNs pickles, converted by PyG's author) holds three lists, the
official train / val / test splits (PATTERN 10,000 / 2,000 / 2,000 graphs, CLUSTER 10,000 / 1,000 / 1,000), of
one dict per graph with ``x`` (N, F) float one-hot node features (F = 3 for PATTERN, 7 for CLUSTER),
``edge_index`` (2, E) and ``y`` (N,) node labels; PyG builds ``Data(**dict)`` from each.

:func:`load_paper_dataset` reads that raw file directly (``torch.load(weights_only=True)``, no pickled code is run)
after checking that it exists, and returns the graphs in the form the ``pattern`` experiment consumes for its
generated graphs (:func:`icml25.common.graphs.planted_pattern_graphs`): ``Data(x float32, edge_index, y long)``
with ``edge_index`` holding both directions of every edge, coalesced, without self-loops. The processed files PyG
writes next to ``raw/`` are neither needed nor read, and nothing is written under ``root``.

The paper's other benchmarks are not read here: ZINC (graph regression), MNIST / CIFAR10 superpixels and the LRGB
sets (graph or superpixel-node tasks with edge features) would need experiments of their own.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch_geometric.data import Data
from torch_geometric.utils import remove_self_loops, to_undirected

__all__ = ["PAPER_DATASETS", "PAPER_DATASET_CLASSES", "PAPER_DATASET_LAYOUT", "SPLITS", "load_paper_dataset",
           "paper_dataset_file"]

PAPER_DATASETS: tuple[str, ...] = ("PATTERN", "CLUSTER")
"""The benchmarks :func:`load_paper_dataset` reads, by their torch_geometric names."""

PAPER_DATASET_CLASSES: dict[str, int] = {"PATTERN": 2, "CLUSTER": 6}
"""Node classes per benchmark (PATTERN: in the planted pattern or not; CLUSTER: six communities)."""

SPLITS: tuple[str, ...] = ("train", "val", "test")
"""The official splits, in the order the raw file stores them."""

PAPER_DATASET_LAYOUT = ("<root>/{PATTERN,CLUSTER}/raw/{PATTERN,CLUSTER}_v2.pt (what torch_geometric's "
                        "GNNBenchmarkDataset(root, name) unpacks from data.pyg.org/datasets/benchmarking-gnns/"
                        "<NAME>_v2.zip: three lists, train/val/test, of dicts with x, edge_index, y)")
"""The raw-file layout :func:`load_paper_dataset` reads under ``root``."""


def paper_dataset_file(root: str | Path, name: str) -> Path:
    """The raw file of benchmark ``name`` (one of :data:`PAPER_DATASETS`) under ``root``:
    ``<root>/<name>/raw/<name>_v2.pt``, the path torch_geometric's ``GNNBenchmarkDataset(root, name)`` reads."""
    if name not in PAPER_DATASETS:
        raise ValueError(f"unknown paper data set {name!r}; valid: {', '.join(PAPER_DATASETS)}")
    return Path(root) / name / "raw" / f"{name}_v2.pt"


def _graph(item, name: str, split: str, i: int, n_classes: int) -> Data:
    """One raw dict as a ``Data`` in the experiment's conventions; ValueError naming the graph when it is malformed."""
    where = f"{name} {split} graph {i}"
    if not isinstance(item, dict) or not {"x", "edge_index", "y"} <= set(item):
        keys = sorted(item) if isinstance(item, dict) else type(item).__name__
        raise ValueError(f"{where}: expected a dict with x, edge_index, y, got {keys}")
    x, edge_index, y = (torch.as_tensor(item[k]) for k in ("x", "edge_index", "y"))
    if x.dim() != 2 or x.size(0) == 0 or not x.is_floating_point():
        raise ValueError(f"{where}: x must be a non-empty (N, F) float tensor, got {x.dtype} {tuple(x.shape)}")
    n = x.size(0)
    if y.shape != (n,) or y.is_floating_point():
        raise ValueError(f"{where}: y must be ({n},) integer node labels, got {y.dtype} {tuple(y.shape)}")
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= n_classes):
        raise ValueError(f"{where}: labels must lie in [0, {n_classes}), got [{int(y.min())}, {int(y.max())}]")
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_index.is_floating_point():
        raise ValueError(f"{where}: edge_index must be a (2, E) integer tensor, got {tuple(edge_index.shape)}")
    edge_index = edge_index.to(torch.long)
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"{where}: edge_index has node ids outside [0, {n})")
    edge_index = to_undirected(remove_self_loops(edge_index)[0], num_nodes=n)
    return Data(x=x.to(torch.float32), edge_index=edge_index, y=y.to(torch.long))


def load_paper_dataset(name: str, root: str | Path,
                       splits: tuple[str, ...] | list[str] = SPLITS) -> dict[str, list[Data]]:
    """Benchmark ``name`` (``"PATTERN"`` or ``"CLUSTER"``) read from ``root``; nothing is downloaded.

    ``root`` is the folder given to torch_geometric's ``GNNBenchmarkDataset(root, name)``: it must hold
    ``<root>/<name>/raw/<name>_v2.pt`` (:data:`PAPER_DATASET_LAYOUT`), checked before anything is read. The file is
    read with ``torch.load(weights_only=True)`` (tensors and containers only); every graph is checked (a dict with
    ``x`` (N, F) float, ``edge_index`` (2, E) integer ids in [0, N), ``y`` (N,) integer labels in
    [0, ``PAPER_DATASET_CLASSES[name]``), the same F in every graph).

    Args:
        name: one of :data:`PAPER_DATASETS`.
        root: the folder holding ``<name>/raw/<name>_v2.pt``.
        splits: which of the official ``"train"``, ``"val"``, ``"test"`` splits to return (distinct).

    Returns:
        ``{split: graphs}`` for each requested split, the graphs in the file's order, each
        ``Data(x=(N, F) float32, edge_index=(2, E) long, y=(N,) long)`` with ``edge_index`` undirected (both
        directions), coalesced and without self-loops (the convention of ``icml25.common.graphs``).

    Raises:
        ValueError: an unknown name or split, or a malformed file (the message names the graph).
        FileNotFoundError: the raw file is missing (the message names it and the expected layout).
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"unknown paper data set {name!r}; valid: {', '.join(PAPER_DATASETS)}")
    splits = tuple(splits)
    if not splits or len(set(splits)) != len(splits) or not set(splits) <= set(SPLITS):
        raise ValueError(f"splits must be distinct names among {', '.join(SPLITS)}, got {splits!r}")
    path = paper_dataset_file(root, name)
    if not path.is_file():
        raise FileNotFoundError(f"{name}: missing raw file {path}; expected {PAPER_DATASET_LAYOUT}; nothing is "
                                f"downloaded, place the file there")
    raw = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(raw, (list, tuple)) or len(raw) != len(SPLITS):
        got = f"{type(raw).__name__} of length {len(raw)}" if isinstance(raw, (list, tuple)) else type(raw).__name__
        raise ValueError(f"{path}: expected the three splits (train, val, test) as lists of graph dicts, got {got}")
    n_classes = PAPER_DATASET_CLASSES[name]
    out: dict[str, list[Data]] = {}
    width = None
    for split in splits:
        items = raw[SPLITS.index(split)]
        if not isinstance(items, (list, tuple)) or not items:
            raise ValueError(f"{path}: the {split} split must be a non-empty list of graph dicts")
        graphs = [_graph(item, name, split, i, n_classes) for i, item in enumerate(items)]
        for i, g in enumerate(graphs):
            width = g.num_features if width is None else width
            if g.num_features != width:
                raise ValueError(f"{name} {split} graph {i}: {g.num_features} node features, other graphs {width}")
        out[split] = graphs
    return out
