"""autogfm: GFT's processed data folder (``<data_root>/{Cora,Pubmed,wikics,arxiv}/processed/
geometric_data_processed.pt``, each ``torch.save((Data, None))`` as OFA's ``OFAPygDataset.process`` writes a single
graph) with ``node_text_feat`` (the encoded node texts; 24 columns here, 768 in the real files), ``edge_index`` (one
direction per edge, as OFA's networkx edge list), ``y``, ``raw_texts`` and each data set's own split masks: Cora /
PubMed ``train_masks`` / ``val_masks`` / ``test_masks`` (lists of 10 masks), WikiCS ``train_mask`` / ``val_mask``
(N, 20) and ``test_mask`` (N,), Arxiv ``train_mask`` / ``val_mask`` / ``test_mask`` (N,) with ``y`` (N, 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

DIM = 24
SHAPES = {"cora": (40, 4, 10), "pubmed": (30, 3, 10), "wikics": (36, 5, 20), "arxiv": (32, 4, 1)}
"""name -> (nodes, classes, number of predefined splits)."""
FOLDERS = {"cora": "Cora", "pubmed": "Pubmed", "wikics": "wikics", "arxiv": "arxiv"}


def _graph(name: str, seed: int) -> tuple[Data, list[dict[str, np.ndarray]]]:
    """One data set and its splits as node-id arrays (train 2 per class, val 1 per class, test the rest)."""
    n, c, k = SHAPES[name]
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    centres = rng.standard_normal((c, DIM))
    x = (2.0 * centres[y] + rng.standard_normal((n, DIM))).astype(np.float32)
    edges = set()
    while len(edges) < 2 * n:
        u, v = sorted(rng.choice(n, size=2, replace=False).tolist())
        if y[u] == y[v] or rng.random() < 0.2:
            edges.add((u, v))
    ei = torch.tensor(sorted(edges), dtype=torch.long).T  # one direction per edge
    splits = []
    for _ in range(k):
        train, val = [], []
        for cls in range(c):
            members = rng.permutation(np.flatnonzero(y == cls))
            train += members[:2].tolist()
            val += members[2:3].tolist()
        test = np.setdiff1d(np.arange(n), train + val)
        splits.append({"train": np.sort(train), "val": np.sort(val), "test": test})
    # x: OFA's raw bag-of-words features, which the loader ignores (it reads node_text_feat); drawn from rng too
    data = Data(x=torch.from_numpy(rng.random((n, 7), dtype=np.float32)), edge_index=ei, y=torch.as_tensor(y),
                raw_texts=[f"{name} paper {i}. a title and an abstract" for i in range(n)],
                node_text_feat=torch.from_numpy(x))
    return data, splits


def _mask(idx: np.ndarray, n: int) -> torch.Tensor:
    m = torch.zeros(n, dtype=torch.bool)
    m[torch.as_tensor(idx)] = True
    return m


def graph_with_masks(name: str, seed: int = 0) -> tuple[Data, list[dict[str, np.ndarray]]]:
    """The Data as written (masks in the data set's own GFT form) and the splits it encodes."""
    data, splits = _graph(name, seed)
    n = data.num_nodes
    if name in ("cora", "pubmed"):
        for part, key in (("train", "train_masks"), ("val", "val_masks"), ("test", "test_masks")):
            data[key] = [_mask(s[part], n) for s in splits]
    elif name == "wikics":
        test = splits[0]["test"]
        splits = [dict(s, test=test) for s in splits]  # WikiCS: one test mask for its 20 splits
        data.train_mask = torch.stack([_mask(s["train"], n) for s in splits], 1)
        data.val_mask = torch.stack([_mask(s["val"], n) for s in splits], 1)
        data.test_mask = _mask(test, n)
    else:  # arxiv: OGB's one split, y (N, 1)
        data.train_mask, data.val_mask, data.test_mask = (_mask(splits[0][p], n) for p in ("train", "val", "test"))
        data.y = data.y.view(-1, 1)
    return data, splits


def write_gft_folder(folder: Path, names=tuple(SHAPES)) -> dict[str, tuple[Data, list[dict[str, np.ndarray]]]]:
    """Write the processed files of ``names``; returns each data set's Data as written and its splits."""
    written = {}
    for i, name in enumerate(names):
        data, splits = graph_with_masks(name, seed=i)
        path = Path(folder) / FOLDERS[name] / "processed" / "geometric_data_processed.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save((data, None), path)
        written[name] = (data, splits)
    return written


def _paper_data(folder: Path) -> dict[str, str]:
    write_gft_folder(folder)
    return {"data_root": str(folder)}


FILES = {"paper_data": _paper_data}
