"""The paper's node-level data sets in GFT's processed format, read from a user's folder (nothing is downloaded).

AutoGFM builds on GFT (Wang et al., NeurIPS 2024; github.com/Zehong-Wang/GFT), which takes OFA's text-attributed
graphs (github.com/LechengKong/OneForAll) with every node's text encoded by a Sentence-Transformer
(``multi-qa-distilbert-cos-v1``, 768 dimensions). GFT's ``dataset/process_datasets.py`` (``get_finetune_graph``)
reads one processed file per data set, written by OFA's ``OFAPygDataset.process`` under GFT's ``--data_path``
(GFT's preprocessed archive unpacks to the same layout)::

    <root>/Cora/processed/geometric_data_processed.pt
    <root>/Pubmed/processed/geometric_data_processed.pt
    <root>/wikics/processed/geometric_data_processed.pt
    <root>/arxiv/processed/geometric_data_processed.pt

Each is ``torch.save((data, slices))`` of one PyG ``Data`` (``slices`` is ``None`` for a single graph) holding
``node_text_feat`` (N, 768) (the encoded node texts: the features GFT and AutoGFM use), ``edge_index``, ``y`` and
the split masks GFT's ``get_node_data`` reads: Cora / PubMed ``train_masks`` / ``val_masks`` / ``test_masks``
(lists of 10 boolean masks, the 10 predefined splits), WikiCS ``train_mask`` / ``val_mask`` (N, 20) and
``test_mask`` (N,) (20 splits, one test set), Arxiv ``train_mask`` / ``val_mask`` / ``test_mask`` (N,) (OGB's
split). Files are read with ``torch.load(weights_only=True)`` allowing only PyG's data-container classes.

:func:`write_processed_graph` computes that file from OFA's raw single-graph file (``cora.pt`` / ``pubmed.pt``
with ``raw_texts``) with any encoder object that has sentence-transformers' ``encode`` method (duck-typed; the
real one is ``SentenceTransformer("multi-qa-distilbert-cos-v1")``, which is not a dependency here).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from icml25.papers.autogfm.model import TaskSpec, noi_subgraph
from icml25.papers.autogfm.suite import NOIDataset

__all__ = ["PAPER_DATASETS", "PROCESSED_FILE", "OFA_NODE_TEXT_PREFIX", "TextEncoder", "processed_path",
           "read_processed_graph", "graph_splits", "load_paper_graph", "paper_node_task", "load_paper_suite",
           "encode_texts", "write_processed_graph"]

PAPER_DATASETS: dict[str, str] = {"cora": "Cora", "pubmed": "Pubmed", "wikics": "wikics", "arxiv": "arxiv"}
"""GFT's fine-tuning name of each node-level data set -> its folder under GFT's data path (OFA's dataset name)."""
PROCESSED_FILE = "processed/geometric_data_processed.pt"
"""Path of a data set's processed file inside its folder (OFA's ``processed_file_names[0]``)."""
OFA_NODE_TEXT_PREFIX = "feature node. paper title and abstract: "
"""OFA's prefix of a Cora / PubMed node's text (``data/single_graph/{Cora,Pubmed}/gen_data.py``)."""

_LAYOUT = ("expected GFT's processed layout <root>/{Cora,Pubmed,wikics,arxiv}/" + PROCESSED_FILE
           + " (OFA's processed graphs with text-encoded node features; see docs/papers/autogfm.md)")


class TextEncoder(Protocol):
    """What :func:`encode_texts` needs of an encoder: sentence-transformers' ``encode`` (list of str -> (n, d))."""

    def encode(self, sentences: list[str], batch_size: int = ...) -> Any: ...  # noqa: ANN401


def processed_path(root: str | Path, name: str) -> Path:
    """``<root>/<folder>/processed/geometric_data_processed.pt`` of GFT's data set ``name`` (a key of
    :data:`PAPER_DATASETS`)."""
    if name not in PAPER_DATASETS:
        raise ValueError(f"unknown data set {name!r}; valid: {', '.join(PAPER_DATASETS)}")
    return Path(root).expanduser() / PAPER_DATASETS[name] / PROCESSED_FILE


def _safe_classes() -> list[type]:
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import EdgeStorage, GlobalStorage, NodeStorage

    return [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage, NodeStorage, EdgeStorage]


def read_processed_graph(path: str | Path, layout: str = _LAYOUT) -> Data:
    """The ``Data`` of one processed file (``(data, slices)`` as OFA saves it, or a bare ``Data``); ``layout`` is
    the expected layout the error messages name.

    Raises:
        FileNotFoundError: the file is missing (the message names it and the expected layout).
        ValueError: the file is not a PyG ``Data`` that ``torch.load(weights_only=True)`` can read.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"missing file {path}; {layout}")
    try:
        with torch.serialization.safe_globals(_safe_classes()):
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, or a truncated / foreign file
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path} is not a processed PyG graph readable with weights_only=True: {msg}") from None
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], Data):
        obj = obj[0]
    if not isinstance(obj, Data):
        raise ValueError(f"{path} holds {type(obj).__name__}, not (Data, slices) or Data; {layout}")
    return obj


def _masks(data: Data, stem: str, n: int) -> list[Tensor]:
    """The masks of one split part: ``<stem>_masks`` (a list) or ``<stem>_mask`` ((N,) or (N, k)), as (N,) bools."""
    many, one = data.get(f"{stem}_masks"), data.get(f"{stem}_mask")
    if many is not None:
        masks = [torch.as_tensor(m) for m in (many if isinstance(many, (list, tuple)) else many.unbind(0))]
    elif one is not None:
        one = torch.as_tensor(one)
        masks = [one] if one.dim() == 1 else list(one.T)
    else:
        raise ValueError(f"the graph has neither {stem}_masks nor {stem}_mask")
    out = []
    for m in masks:
        m = m.reshape(-1)
        if m.dtype != torch.bool:  # an index list instead of a mask
            m = torch.zeros(n, dtype=torch.bool).index_fill_(0, m.long(), True)
        if m.numel() != n:
            raise ValueError(f"a {stem} mask has {m.numel()} entries for {n} nodes")
        out.append(m)
    return out


def graph_splits(data: Data) -> list[dict[str, np.ndarray]]:
    """GFT's splits of a node-level graph (``get_node_data``): one dict of sorted node ids per predefined split.

    Parts with one mask (WikiCS's test mask, Arxiv's three) are shared by every split.
    """
    n = int(data.num_nodes)
    parts = {k: _masks(data, stem, n) for k, stem in (("train", "train"), ("val", "val"), ("test", "test"))}
    count = max(len(v) for v in parts.values())
    for k, v in parts.items():
        if len(v) not in (1, count):
            raise ValueError(f"{len(v)} {k} masks for {count} splits")
    return [{k: np.flatnonzero(v[i if len(v) > 1 else 0].numpy()) for k, v in parts.items()} for i in range(count)]


def load_paper_graph(root: str | Path, name: str) -> tuple[Data, list[dict[str, np.ndarray]]]:
    """Data set ``name`` from GFT's processed folder: ``Data(x, edge_index, y)`` and its predefined splits.

    ``x`` is the file's ``node_text_feat`` as float32 (the text encoder's node features), ``edge_index`` the file's
    edges made undirected (``to_undirected``: both directions, duplicates merged), ``y`` the labels as a (N,)
    long tensor. Splits as :func:`graph_splits`.

    Raises:
        FileNotFoundError: the processed file is missing (named in the message).
        ValueError: the file lacks ``node_text_feat``, ``edge_index``, ``y`` or the split masks, or they disagree.
    """
    path = processed_path(root, name)
    data = read_processed_graph(path)
    feat, ei, y = data.get("node_text_feat"), data.get("edge_index"), data.get("y")
    for key, val in (("node_text_feat", feat), ("edge_index", ei), ("y", y)):
        if not isinstance(val, Tensor):
            raise ValueError(f"{path} has no tensor {key!r} (GFT reads the encoded node texts from node_text_feat)")
    x = feat.float()
    y = y.reshape(-1).long()
    if x.dim() != 2 or x.size(0) != y.numel():
        raise ValueError(f"{path}: node_text_feat {tuple(x.shape)} does not match {y.numel()} labels")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{path}: node_text_feat contains NaN or inf")
    if ei.dim() != 2 or ei.size(0) != 2 or (ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= y.numel())):
        raise ValueError(f"{path}: edge_index must be (2, E) with node ids in [0, {y.numel()})")
    if y.numel() and int(y.min()) < 0:
        raise ValueError(f"{path}: negative labels")
    graph = Data(x=x, edge_index=to_undirected(ei.long(), num_nodes=y.numel()), y=y)
    graph.num_nodes = y.numel()
    try:
        splits = graph_splits(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return graph, splits


def _cap(idx: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(idx, size=cap, replace=False)) if idx.size > cap else idx


def paper_node_task(name: str, graph: Data, split: dict[str, np.ndarray], hops: int, max_train: int,
                    max_test: int, rng: np.random.Generator) -> NOIDataset:
    """Node classification on one predefined split as NOI-graph classification (one ``hops``-hop ego graph per
    node), as the stand-in's ``node_task`` but on the given split: train capped at ``max_train`` nodes and val /
    test at ``max_test`` each by a seeded subset (a part at or under its cap is kept whole). NOI graphs are built
    for the kept nodes only; ``splits`` index the dataset's ``graphs`` (train, then val, then test)."""
    keep = {"train": _cap(split["train"], max_train, rng), "val": _cap(split["val"], max_test, rng),
            "test": _cap(split["test"], max_test, rng)}
    if keep["train"].size < 2 or keep["test"].size < 1:
        raise ValueError(f"{name}: the split needs >= 2 training and >= 1 test nodes, got {keep['train'].size} and "
                         f"{keep['test'].size}")
    graphs, splits, start = [], {}, 0
    for part, nodes in keep.items():
        for v in nodes.tolist():  # data preparation, once per dataset
            g = noi_subgraph(graph, [v], hops)
            g.y = graph.y[v:v + 1]
            graphs.append(g)
        splits[part] = np.arange(start, start + nodes.size)
        start += nodes.size
    n_classes = int(graph.y.max()) + 1
    info = {"nodes": float(graph.num_nodes), "edges": float(graph.edge_index.size(1) // 2),
            "train": float(keep["train"].size), "test": float(keep["test"].size)}
    return NOIDataset(TaskSpec(name, "node", n_classes), graphs, splits, info)


def load_paper_suite(root: str | Path, names: Sequence[str], hops: int, max_train: int, max_test: int,
                     seed: int) -> list[NOIDataset]:
    """The data sets ``names`` from GFT's processed folder as NOI datasets, each on its predefined split number
    ``seed % (its number of splits)`` (Cora / PubMed: 10, WikiCS: 20, Arxiv: 1), subsets drawn from ``seed``.

    Every file is checked before any is read (a missing one raises ``FileNotFoundError`` naming it).
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"missing data folder {root}; {_LAYOUT}")
    for name in names:
        path = processed_path(root, name)
        if not path.is_file():
            raise FileNotFoundError(f"missing file {path}; {_LAYOUT}")
    rng = np.random.default_rng([seed, 11])
    out = []
    for name in names:
        graph, splits = load_paper_graph(root, name)
        out.append(paper_node_task(name, graph, splits[seed % len(splits)], hops, max_train, max_test, rng))
    dims = {d.graphs[0].x.size(1) for d in out}
    if len(dims) != 1:
        raise ValueError(f"the data sets' node_text_feat widths differ ({sorted(dims)}): encode them with one encoder")
    return out


def encode_texts(texts: Sequence[str], encoder: TextEncoder, batch_size: int = 32) -> Tensor:
    """``encoder.encode(list(texts), batch_size=batch_size)`` as a float32 CPU tensor (n, d).

    ``encoder`` is anything with sentence-transformers' ``encode`` (a numpy array or tensor back), e.g.
    ``SentenceTransformer("multi-qa-distilbert-cos-v1")`` as OFA / GFT use.
    """
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("texts must not be empty")
    out = encoder.encode(texts, batch_size=batch_size)
    out = out.detach().cpu() if isinstance(out, Tensor) else torch.as_tensor(np.asarray(out))
    if out.dim() != 2 or out.size(0) != len(texts):
        raise ValueError(f"the encoder returned shape {tuple(out.shape)} for {len(texts)} texts; expected (n, d)")
    return out.float()


def write_processed_graph(raw_file: str | Path, root: str | Path, name: str, encoder: TextEncoder,
                          prefix: str = OFA_NODE_TEXT_PREFIX, batch_size: int = 32) -> Path:
    """Write GFT's processed file of ``name`` under ``root`` from OFA's raw single-graph file.

    ``raw_file`` is a torch-saved PyG ``Data`` with ``raw_texts`` (one string per node), ``edge_index``, ``y`` and
    the split masks (OFA's ``data/single_graph/Cora/cora.pt`` and ``Pubmed/pubmed.pt``). Every node's text is
    ``prefix + raw_text`` (OFA's Cora / PubMed form) encoded by ``encoder``; the result is stored as
    ``node_text_feat`` and the graph saved as ``(data, None)`` to :func:`processed_path` (``root/<folder>/processed/
    geometric_data_processed.pt``), the file :func:`load_paper_graph` reads. Returns that path.
    """
    data = read_processed_graph(raw_file, "expected OFA's raw single-graph file (a torch-saved PyG Data with "
                                          "raw_texts, e.g. data/single_graph/Cora/cora.pt)")
    texts = data.get("raw_texts")
    if not isinstance(texts, (list, tuple)) or len(texts) != int(data.num_nodes):
        raise ValueError(f"{raw_file} has no raw_texts with one string per node")
    out = Data(**{k: v for k, v in data.to_dict().items()})
    out.node_text_feat = encode_texts([prefix + t for t in texts], encoder, batch_size)
    path = processed_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save((out, None), path)
    return path
