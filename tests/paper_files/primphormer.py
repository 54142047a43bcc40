"""primphormer: benchmarking-GNNs' PATTERN / CLUSTER in the raw format torch_geometric's ``GNNBenchmarkDataset``
reads (``<root>/<NAME>/raw/<NAME>_v2.pt``: ``torch.save`` of three lists, train / val / test, of dicts with ``x``
(N, F) one-hot float32, ``edge_index`` (2, E) long and ``y`` (N,) long).

In the files a node's label is a function of its one-hot symbol in the first ``n_train`` training graphs and the
first ``n_test`` test graphs and a different function (every label shifted to the next class) everywhere else, so
a run that reads the right splits and graphs with the right number of classes can reach exactly 100% weighted
accuracy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.utils import coalesce

from icml25.papers.primphormer.data import PAPER_DATASET_CLASSES, PAPER_DATASETS

WIDTH = {"PATTERN": 3, "CLUSTER": 7}
"""One-hot node-feature width of each benchmark (torch_geometric's GNNBenchmarkDataset statistics)."""
N_TRAIN, N_TEST = 12, 4
"""The default number of graphs with the learnable labels: the first 12 training and first 4 test graphs."""


def label(name: str, symbols: np.ndarray, shifted: bool) -> np.ndarray:
    """The fixture's labels: PATTERN 1 for symbol 0 (else 0), CLUSTER symbol mod 6; ``shifted`` moves every label
    to the next class, a different function of the same features."""
    c = PAPER_DATASET_CLASSES[name]
    y = (symbols == 0).astype(np.int64) if name == "PATTERN" else symbols % c
    return (y + 1) % c if shifted else y


def graph(rng: np.random.Generator, name: str, shifted: bool = False, messy: bool = False) -> dict:
    """One graph as the raw file stores it: ``x`` (N, F) float32 one-hot, ``edge_index`` both directions,
    coalesced, ``y`` (N,) long. ``messy``: add a self-loop and an edge in one direction only (to be cleaned)."""
    n = int(rng.integers(10, 20))
    symbols = rng.integers(0, WIDTH[name], n)
    a, b = rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n)
    pairs = np.stack([a[a != b], b[a != b]])
    edge_index = coalesce(torch.as_tensor(np.concatenate([pairs, pairs[::-1]], axis=1)), num_nodes=n)
    if messy:
        edge_index = torch.cat([edge_index, torch.tensor([[0, 0], [0, 1]])], dim=1)
    return {"x": torch.as_tensor(np.eye(WIDTH[name], dtype=np.float32)[symbols]), "edge_index": edge_index,
            "y": torch.as_tensor(label(name, symbols, shifted))}


def write_benchmark(root: Path, name: str, seed: int = 0, n_train: int = N_TRAIN,
                    n_test: int = N_TEST) -> list[list[dict]]:
    """``<root>/<name>/raw/<name>_v2.pt`` with train ``n_train`` + 4, val 3, test ``n_test`` + 2 graphs. The first
    ``n_train`` training and first ``n_test`` test graphs carry the learnable labels; the last training and test
    graphs and every val graph carry the shifted ones. The first training graph has a self-loop and a one-way edge.
    Returns the splits as written."""
    rng = np.random.default_rng(seed)
    train = [graph(rng, name, messy=i == 0) for i in range(n_train)] + [graph(rng, name, True) for _ in range(4)]
    val = [graph(rng, name, True) for _ in range(3)]
    test = [graph(rng, name) for _ in range(n_test)] + [graph(rng, name, True) for _ in range(2)]
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    torch.save([train, val, test], raw / f"{name}_v2.pt")
    return [train, val, test]


def _paper_data(folder: Path) -> dict[str, str]:
    """Both benchmarks, with the 24 / 8 learnable graphs the paper_data smoke preset reads."""
    for i, name in enumerate(PAPER_DATASETS):
        write_benchmark(folder, name, seed=i, n_train=24, n_test=8)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
