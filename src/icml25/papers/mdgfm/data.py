"""Multi-domain graphs for MDGFM: generated CSBM domains, or the paper's six graphs read from a user's path.

The paper pre-trains on Cora, CiteSeer, PubMed (homophilic) and Chameleon, Squirrel, Cornell
(heterophilic), whose raw features are bag-of-words of different sizes. Nothing is downloaded
here. By default each domain is generated: the graph and labels come from the shared degree-corrected
contextual SBM (``icml25.common.graphs.contextual_sbm``), and the features are redrawn as sparse
Bernoulli word indicators with class-specific rates, of a dimension that differs per domain.
:func:`load_paper_graphs` reads the real six graphs from raw files the user already has, in the layout
that torch_geometric's ``Planetoid``, ``WebKB`` and ``WikipediaNetwork(geom_gcn_preprocess=True)`` write.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from icml25.common.graphs import contextual_sbm, edge_homophily


@dataclass(frozen=True)
class DomainSpec:
    """One synthetic domain: size, classes, edge homophily, bag-of-words size, and the real data set it stands in for.

    ``analogue`` names a key of :data:`OFFICIAL_TARGET_SETTINGS` (or is empty): when this domain is the held-out
    target, the reproduction uses that data set's official shots, learning rates and epochs.
    """

    name: str
    n_nodes: int
    n_classes: int
    homophily: float
    feature_dim: int
    analogue: str = ""

    @property
    def homophilic(self) -> bool:
        return self.homophily >= 0.5


@dataclass(frozen=True)
class TargetSettings:
    """The official per-target settings (README of wbkzwqtzw/MDGFM): few-shot size, learning rates, epochs, kNN size."""

    shots: int
    """Labelled nodes per class in the few-shot setting (the 1-shot setting uses 1 everywhere)."""
    pretrain_lr: float
    """Adam learning rate of pre-training on the five other data sets."""
    prompt_lr: float
    """Adam learning rate of downstream prompt tuning."""
    pretrain_epochs: int
    """Pre-training epochs."""
    k_down: int
    """Downstream graph learner's kNN size (30 homophilic, 15 heterophilic)."""


OFFICIAL_TARGET_SETTINGS: dict[str, TargetSettings] = {
    "Cora": TargetSettings(5, 7.5e-3, 1e-3, 60, 30),
    "Citeseer": TargetSettings(5, 1e-3, 1e-3, 60, 30),
    "Pubmed": TargetSettings(5, 1e-4, 1.4e-3, 60, 30),
    "Chameleon": TargetSettings(5, 2e-2, 2e-2, 100, 15),
    "Squirrel": TargetSettings(3, 1e-2, 3e-4, 100, 15),
    "Cornell": TargetSettings(3, 2e-2, 3e-4, 100, 15),
}
"""Per held-out target data set, the settings of the official README's few-shot commands (5-shot, 3-shot on
Cornell and Squirrel) and of MDGFM.py (downk)."""


SIX_DOMAINS: tuple[DomainSpec, ...] = (
    DomainSpec("homo85", 1000, 4, 0.85, 300, analogue="Cora"),
    DomainSpec("homo80", 800, 3, 0.80, 200, analogue="Pubmed"),
    DomainSpec("homo75", 1200, 5, 0.75, 400, analogue="Citeseer"),
    DomainSpec("hetero20", 700, 4, 0.20, 150, analogue="Chameleon"),
    DomainSpec("hetero15", 900, 5, 0.15, 250, analogue="Squirrel"),
    DomainSpec("hetero10", 600, 3, 0.10, 100, analogue="Cornell"),
)
"""The six domains of the quick reproduction (three homophilic, three heterophilic). Each stands in for the real
data set of closest homophily (Cora 0.81, Pubmed 0.80 with 3 classes, Citeseer 0.74; Chameleon 0.23, Squirrel
0.22, Cornell the lowest and smallest) and, as a target, takes that data set's official settings."""


def target_settings(spec: DomainSpec) -> TargetSettings:
    """The official settings of ``spec``'s analogue; raises ``ValueError`` when it has none."""
    if spec.analogue not in OFFICIAL_TARGET_SETTINGS:
        raise ValueError(f"domain {spec.name!r} has no official analogue (analogue={spec.analogue!r}; valid: "
                         f"{', '.join(OFFICIAL_TARGET_SETTINGS)})")
    return OFFICIAL_TARGET_SETTINGS[spec.analogue]


def bag_of_words_domain(spec: DomainSpec, base_rate: float = 0.02, topic_rate: float = 0.12,
                        topic_words: int | None = None, avg_degree: float = 8.0, seed: int = 0) -> Data:
    """A degree-corrected CSBM graph whose node features are sparse binary word indicators.

    Every word has background rate ``base_rate``; each class owns a random set of ``topic_words``
    words (default ``feature_dim // (2 n_classes)``) that appear at rate ``topic_rate`` in its nodes.

    Returns:
        ``Data(x=(N, feature_dim) float32 in {0, 1}, edge_index, y, homophily=float)``.
    """
    if not 0.0 <= base_rate <= topic_rate <= 1.0:
        raise ValueError(f"need 0 <= base_rate <= topic_rate <= 1, got {base_rate}, {topic_rate}")
    graph = contextual_sbm(spec.n_nodes, spec.n_classes, spec.homophily, feature_dim=1, feature_signal=0.0,
                           degree_corrected=True, avg_degree=avg_degree, seed=seed)
    rng = np.random.default_rng([seed, 1])
    n_topic = topic_words or max(1, spec.feature_dim // (2 * spec.n_classes))
    rates = np.full((spec.n_classes, spec.feature_dim), base_rate)
    for c in range(spec.n_classes):
        rates[c, rng.choice(spec.feature_dim, size=n_topic, replace=False)] = topic_rate
    y = graph.y.numpy()
    x = (rng.random((spec.n_nodes, spec.feature_dim)) < rates[y]).astype(np.float32)
    return Data(x=torch.as_tensor(x), edge_index=graph.edge_index, y=graph.y,
                homophily=edge_homophily(graph.edge_index, graph.y))


def make_domains(specs: tuple[DomainSpec, ...] = SIX_DOMAINS, seed: int = 0, **kwargs) -> list[Data]:
    """One :func:`bag_of_words_domain` per spec, each with its own derived seed."""
    return [bag_of_words_domain(s, seed=int(np.random.default_rng([seed, i]).integers(2**31)), **kwargs)
            for i, s in enumerate(specs)]


def inject_random_edges(edge_index: torch.Tensor, num_nodes: int, fraction: float, seed: int = 0) -> torch.Tensor:
    """Add ``fraction * (undirected edges)`` uniformly random node pairs (both directions).

    A random-noise proxy for the paper's adversarial attacks (Metattack etc.), which are stronger.
    """
    if fraction < 0:
        raise ValueError(f"fraction must be >= 0, got {fraction}")
    rng = np.random.default_rng(seed)
    m = int(round(fraction * edge_index.size(1) / 2))
    src, dst = rng.integers(0, num_nodes, m), rng.integers(0, num_nodes, m)
    keep = src != dst
    extra = torch.as_tensor(np.stack([src[keep], dst[keep]]), dtype=torch.long)
    both = torch.cat([edge_index, to_undirected(extra, num_nodes=num_nodes)], dim=1)
    return coalesce(both, num_nodes=num_nodes)


def few_shot_tasks(y: torch.Tensor, shots: int, n_tasks: int, seed: int = 0) -> list[torch.Tensor]:
    """``n_tasks`` support sets, each with ``shots`` random nodes of every class (sorted by class)."""
    rng = np.random.default_rng(seed)
    y_np = y.numpy()
    classes = np.unique(y_np)
    tasks = []
    for _ in range(n_tasks):
        idx = np.concatenate([rng.choice(np.flatnonzero(y_np == c), size=shots, replace=False) for c in classes])
        tasks.append(torch.as_tensor(idx, dtype=torch.long))
    return tasks


PAPER_GRAPHS: tuple[str, ...] = ("Cora", "CiteSeer", "PubMed", "Cornell", "Chameleon", "Squirrel")
"""The paper's six data sets, by their torch_geometric names: three homophilic, then three heterophilic."""

HOMOPHILIC_PAPER_GRAPHS: frozenset[str] = frozenset({"Cora", "CiteSeer", "PubMed"})
"""The paper's homophilic data sets; Cornell, Chameleon and Squirrel are its heterophilic ones."""

PAPER_TARGET_SETTINGS: dict[str, TargetSettings] = {
    name: OFFICIAL_TARGET_SETTINGS[key] for name, key in
    (("Cora", "Cora"), ("CiteSeer", "Citeseer"), ("PubMed", "Pubmed"), ("Cornell", "Cornell"),
     ("Chameleon", "Chameleon"), ("Squirrel", "Squirrel"))}
""":data:`OFFICIAL_TARGET_SETTINGS` keyed by the names of :data:`PAPER_GRAPHS` (the README spells Citeseer, Pubmed)."""

_PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
_GEOM_GCN_FILES = ("out1_node_feature_label.txt", "out1_graph_edges.txt")
PAPER_GRAPHS_LAYOUT = ("<root>/{Cora,CiteSeer,PubMed}/raw/ind.{cora,citeseer,pubmed}.{x,tx,allx,y,ty,ally,graph,"
                       "test.index} (torch_geometric Planetoid; folders Citeseer, Pubmed as the official code names "
                       "them are read too), <root>/cornell/raw/{out1_node_feature_label.txt,"
                       "out1_graph_edges.txt} (WebKB), <root>/{chameleon,squirrel}/geom_gcn/raw/"
                       "{out1_node_feature_label.txt,out1_graph_edges.txt} (WikipediaNetwork, geom_gcn_preprocess="
                       "True)")
"""The raw-file layout :func:`load_paper_graphs` reads (what torch_geometric's dataset classes write under ``root``)."""


_PLANETOID_FOLDERS = {"Cora": ("Cora", "cora"), "CiteSeer": ("CiteSeer", "Citeseer", "citeseer"),
                      "PubMed": ("PubMed", "Pubmed", "pubmed")}
"""Planetoid keeps the name it was given as its folder name: the official code's ``Planetoid(root='data',
name='Pubmed')`` writes ``data/Pubmed/raw``, PyG's documented spelling ``PubMed/raw``; either is read."""


def paper_graph_files(root: str | Path, name: str) -> list[Path]:
    """The raw files of paper data set ``name`` (one of :data:`PAPER_GRAPHS`) under ``root``, in PyG's layout.

    For Cora/CiteSeer/PubMed the first of the folder spellings ``_PLANETOID_FOLDERS[name]`` that exists under
    ``root`` is used (the canonical one when none does)."""
    root = Path(root)
    if name in _PLANETOID_FOLDERS:
        folder = next((f for f in _PLANETOID_FOLDERS[name] if (root / f).is_dir()), name)
        return [root / folder / "raw" / f"ind.{name.lower()}.{part}" for part in _PLANETOID_PARTS]
    if name == "Cornell":
        return [root / "cornell" / "raw" / f for f in _GEOM_GCN_FILES]
    if name in ("Chameleon", "Squirrel"):
        return [root / name.lower() / "geom_gcn" / "raw" / f for f in _GEOM_GCN_FILES]
    raise ValueError(f"unknown paper data set {name!r}; valid: {', '.join(PAPER_GRAPHS)}")


def _read_planetoid(files: list[Path], name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The Planetoid raw files (Yang et al. 2016; pickles of scipy/NumPy objects and a text index) read by
    torch_geometric's own ``read_planetoid_data`` (nodes = ``allx`` then ``tx`` rows, test rows put back at their
    ``test.index`` positions, CiteSeer's isolated test-range nodes as zero rows of class 0). PyG's reader also
    builds the public split's masks (140 training + 500 validation nodes on Cora), so it needs the real graphs'
    sizes: more than ``len(y) + 500`` nodes."""
    from torch_geometric.io import read_planetoid_data

    with warnings.catch_warnings():  # the original files pickle scipy.sparse.csr.csr_matrix, a deprecated path
        warnings.filterwarnings("ignore", ".*scipy.sparse.csr.*", DeprecationWarning)
        data = read_planetoid_data(str(files[0].parent), name.lower())
    return data.x.to(torch.float32), data.edge_index, data.y


def _read_geom_gcn(feature_file: Path, edge_file: Path) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The geom-gcn text format (as torch_geometric's WebKB / WikipediaNetwork parse it): a header line, then
    ``node_id<TAB>f1,f2,...<TAB>label`` per node and ``src<TAB>dst`` per edge."""
    rows = [line.split("\t") for line in feature_file.read_text().split("\n")[1:] if line.strip()]
    ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
    if len(rows) == 0 or not np.array_equal(np.sort(ids), np.arange(len(rows))):
        raise ValueError(f"{feature_file}: node ids must be 0..N-1 (one line each, after a header line)")
    order = np.argsort(ids)
    x = torch.tensor([[float(v) for v in rows[i][1].split(",")] for i in order], dtype=torch.float32)
    y = torch.tensor([int(rows[i][2]) for i in order], dtype=torch.long)
    edges = [[int(v) for v in line.split("\t")] for line in edge_file.read_text().split("\n")[1:] if line.strip()]
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).t().contiguous()
    return x, edge_index, y


def load_paper_graphs(root: str | Path, names: tuple[str, ...] | list[str] = PAPER_GRAPHS) -> list[Data]:
    """The paper's data sets ``names`` read from raw files under ``root``; nothing is downloaded.

    ``root`` holds the raw files in torch_geometric's layout (:data:`PAPER_GRAPHS_LAYOUT`): what
    ``Planetoid(root, "Cora")``, ``WebKB(root, "Cornell")`` and
    ``WikipediaNetwork(root, "chameleon", geom_gcn_preprocess=True)`` leave in their ``raw`` folders. Every
    file is checked before any is read. The Planetoid files are read by torch_geometric's ``read_planetoid_data``
    (they are pickles: read only files you trust); the geom-gcn text files are parsed as PyG's classes parse them.
    Splits (the geom-gcn ``*_split_*.npz`` files, Planetoid's masks) are not used.

    Returns:
        One ``Data`` per name, in the order of ``names``: ``x`` (N, d) float32, ``edge_index`` undirected
        (both directions, coalesced, self-loops removed), ``y`` (N,) long, ``name`` (str), ``homophilic``
        (bool: Cora/CiteSeer/PubMed) and ``homophily`` (float, edge homophily of the loaded graph). The
        official per-target settings are ``PAPER_TARGET_SETTINGS[name]``.

    Raises:
        ValueError: an unknown or repeated name, or an empty ``names``.
        FileNotFoundError: ``root`` is not a directory, or a raw file is missing (the message names the
            first missing file and the layout expected).
    """
    names = tuple(names)
    if not names or len(set(names)) != len(names) or not set(names) <= set(PAPER_GRAPHS):
        raise ValueError(f"names must be distinct names among {', '.join(PAPER_GRAPHS)}, got {names!r}")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"paper data root {str(root)!r} is not a directory; expected {PAPER_GRAPHS_LAYOUT}")
    for name in names:
        for path in paper_graph_files(root, name):
            if not path.is_file():
                raise FileNotFoundError(f"{name}: missing raw file {path}; expected {PAPER_GRAPHS_LAYOUT}; "
                                        f"nothing is downloaded, place the files there")
    graphs = []
    for name in names:
        files = paper_graph_files(root, name)
        if name in HOMOPHILIC_PAPER_GRAPHS:
            x, edge_index, y = _read_planetoid(files, name)
        else:
            x, edge_index, y = _read_geom_gcn(*files)
        n = x.size(0)
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
            raise ValueError(f"{name}: edge list has node ids outside [0, {n})")
        edge_index = to_undirected(remove_self_loops(edge_index)[0], num_nodes=n)
        graphs.append(Data(x=x, edge_index=edge_index, y=y, name=name, homophilic=name in HOMOPHILIC_PAPER_GRAPHS,
                           homophily=edge_homophily(edge_index, y)))
    return graphs
