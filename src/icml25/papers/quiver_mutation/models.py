"""DirGINE: a direction-aware GIN with edge features for classifying quivers by mutation type.

A quiver becomes a PyG ``Data``: one directed edge ``i -> j`` per pair with ``b_ij > 0``, edge
feature ``b_ij`` (the arrow multiplicity), constant node features. Each DirGINE layer runs two
GINE convolutions (Hu et al. 2020), one over incoming arrows and one over outgoing arrows
(Dir-GNN, Rossi et al. 2023), and mixes them:

    h_in  = MLP_in ((1 + eps) h_v + sum_{u -> v} ReLU(h_u + W_in  b_uv))
    h_out = MLP_out((1 + eps) h_v + sum_{v -> w} ReLU(h_w + W_out b_vw))
    h_v'  = ReLU(Lin([h_in ; h_out]))

The graph embedding is the concatenation over layers of the sum of node states (GIN readout; the paper
says only "global pooling"), followed by an MLP head; trained with cross-entropy. The paper uses 4 layers of
width 32 (the defaults here). ``directed=False`` drops the direction
(one GINE over both directions of every arrow): the undirected-GIN baseline. The feature baselines
(degree/3-cycle counts, sorted spectrum) are NumPy functions in :mod:`.features`, re-exported here.

Also here: the explainers of PyG's ``torch_geometric.explain``: PGExplainer (:func:`explain_pgexplainer`, the
paper's choice: an MLP over node embeddings, trained on many quivers, gives each arrow a mask) and GNNExplainer
(:func:`explain`, one optimisation per quiver); pooled hidden states of one layer or of all
(:func:`graph_embeddings`; the paper's latent study reads the 3rd layer) and k-means on them (:func:`cluster_hidden`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GINEConv, global_add_pool

from icml25.common.checks import check_fields
from icml25.papers.quiver_mutation.features import count_features, spectrum_features  # noqa: F401 (re-exported)
from icml25.papers.quiver_mutation.quivers import check_exchange_matrix


@dataclass(frozen=True)
class DirGINEConfig:
    """The classifier's settings: its architecture (:class:`DirGINE`) and training recipe (:func:`train_classifier`).

    The defaults are the experiments' quick preset: the paper's 4 layers of width 32; Adam at lr 1e-3, batch 64
    and 20 epochs are inferred (the paper's optimiser and epochs were not found). The undirected-GINE baseline
    is built and trained with the same settings. ``DirGINE(cfg.hidden, cfg.layers)`` and
    ``train_classifier(model, data, cfg.epochs, cfg.lr, cfg.batch_size)`` use them.
    """

    hidden: int = 32
    """Width of the node states (the paper: 32), in [1, 10^4]."""
    layers: int = 4
    """Number of DirGINE (message-passing) layers (the paper: 4), in [1, 10^3]."""
    epochs: int = 20
    """Training epochs, in [1, 10^5] (the last epoch is scored)."""
    lr: float = 1e-3
    """Adam learning rate, > 0."""
    batch_size: int = 64
    """Graphs per mini-batch, in [1, 10^6]."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("hidden", "layers", "epochs", "batch_size"), finite=("lr",),
                     positive=("hidden", "layers", "epochs", "lr", "batch_size"),
                     at_most={"hidden": 10**4, "layers": 10**3, "epochs": 10**5, "batch_size": 10**6})


# ----------------------------------------------------------------------------- data
def quiver_to_data(B: np.ndarray, y: int | None = None) -> Data:
    """PyG ``Data`` of a quiver: ``x`` ones ``(n, 1)``, ``edge_index`` the arrows ``i -> j`` (b_ij > 0),
    ``edge_attr`` ``(E, 1)`` their multiplicities, ``y`` the label if given, ``B`` kept as ``(1, n, n)``."""
    B = check_exchange_matrix(B)
    src, dst = np.nonzero(B > 0)
    data = Data(x=torch.ones(B.shape[0], 1),
                edge_index=torch.as_tensor(np.stack([src, dst]), dtype=torch.long).reshape(2, -1),
                edge_attr=torch.as_tensor(B[src, dst], dtype=torch.float32).reshape(-1, 1),
                num_nodes=B.shape[0])
    if y is not None:
        data.y = torch.tensor([int(y)])
    return data


def _check_inputs(x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor, in_dim: int,
                  batch: torch.Tensor | None = None) -> None:
    """Types and shapes of a quiver graph; index ranges and finiteness too, except on the meta device (no data)."""
    for name, value in (("x", x), ("edge_index", edge_index), ("edge_attr", edge_attr), ("batch", batch)):
        if value is not None and not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__} (see quiver_to_data)")
        if name in ("x", "edge_attr") and value is not None and not value.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {value.dtype}")
        if name in ("edge_index", "batch") and value is not None and (value.is_floating_point() or value.is_complex()
                                                                       or value.dtype == torch.bool):
            raise TypeError(f"{name} must hold integer indices (torch.long), got {value.dtype}")
    if edge_index is None or edge_attr is None:
        raise TypeError("edge_index and edge_attr are required, or pass a PyG Data / Batch (quiver_to_data) as x")
    if x.dim() != 2 or x.size(0) == 0:
        raise ValueError(f"x must be a non-empty (num_nodes, {in_dim}) tensor, got shape {tuple(x.shape)}")
    if x.size(1) != in_dim:
        raise ValueError(f"x has {x.size(1)} features per node but the model expects {in_dim}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_attr.dim() != 2 or edge_attr.size(0) != edge_index.size(1) or edge_attr.size(1) != 1:
        raise ValueError(f"edge_attr must have shape (E, 1) = ({edge_index.size(1)}, 1), got {tuple(edge_attr.shape)}")
    if batch is not None and batch.shape != (x.size(0),):
        raise ValueError(f"batch must have shape ({x.size(0)},), got {tuple(batch.shape)}")
    if x.is_meta:
        return
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= x.size(0)):
        raise ValueError(f"edge_index has node ids outside [0, {x.size(0)})")
    if not (bool(torch.isfinite(x).all()) and bool(torch.isfinite(edge_attr).all())):
        raise ValueError("x and edge_attr must be finite (no NaN or inf)")
    if batch is not None and batch.numel() and int(batch.min()) < 0:
        raise ValueError("batch has negative graph ids")


def _unpack(x, edge_index, edge_attr, batch):
    """``(x, edge_index, edge_attr, batch, num_graphs)`` from tensors or from a PyG ``Data`` / ``Batch`` in ``x``.

    ``num_graphs`` is known without reading the batch vector only for a ``Batch`` (else ``None``).
    """
    num_graphs = None
    if not isinstance(x, torch.Tensor) and hasattr(x, "keys") and hasattr(x, "edge_index"):
        data = x
        x = data.x
        edge_index = data.edge_index if edge_index is None else edge_index
        edge_attr = getattr(data, "edge_attr", None) if edge_attr is None else edge_attr
        if batch is None and getattr(data, "batch", None) is not None:
            batch, num_graphs = data.batch, int(data.num_graphs)
    return x, edge_index, edge_attr, batch, num_graphs


# ----------------------------------------------------------------------------- model
def _mlp(d_in: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU(), nn.Linear(d_out, d_out))


class DirGINELayer(nn.Module):
    """One layer: GINE over in-arrows and GINE over out-arrows, concatenated and mixed.

    ``forward(h, edge_index, edge_attr) -> (num_nodes, hidden)``; ``h`` may also be a PyG ``Data`` / ``Batch``
    whose ``x`` has ``hidden`` features. Input checking is left to :class:`DirGINE` (this is its inner block).
    """

    def __init__(self, hidden: int, directed: bool = True):
        super().__init__()
        self.directed = directed
        self.conv_in = GINEConv(_mlp(hidden, hidden), train_eps=True, edge_dim=1)
        self.conv_out = GINEConv(_mlp(hidden, hidden), train_eps=True, edge_dim=1) if directed else None
        self.mix = nn.Linear(2 * hidden if directed else hidden, hidden)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor | None = None,
                edge_attr: torch.Tensor | None = None) -> torch.Tensor:
        h, edge_index, edge_attr, _, _ = _unpack(h, edge_index, edge_attr, None)
        if not self.directed:  # both directions, same multiplicity: direction is dropped
            ei = torch.cat([edge_index, edge_index.flip(0)], dim=1)
            return torch.relu(self.mix(self.conv_in(h, ei, torch.cat([edge_attr, edge_attr]))))
        h_in = self.conv_in(h, edge_index, edge_attr)  # messages u -> v along the arrows
        h_out = self.conv_out(h, edge_index.flip(0), edge_attr)  # messages w -> v against the arrows
        return torch.relu(self.mix(torch.cat([h_in, h_out], dim=-1)))


class DirGINE(nn.Module):
    """Direction-aware GIN with edge features (graph classification of quivers).

    Args:
        hidden: width of node states (the paper: 32).
        layers: number of DirGINE layers (the paper: 4).
        n_classes: number of output classes.
        in_dim: node feature width (1 for constant features).
        directed: ``False`` gives the undirected GINE baseline (arrow directions dropped).

    ``forward(x, edge_index, edge_attr, batch) -> logits (num_graphs, n_classes)`` (``batch=None``: one
    graph); ``x`` may also be a PyG ``Data`` / ``Batch`` (:func:`quiver_to_data`, ``Batch.from_data_list``).
    ``node_embeddings(...)`` returns the concatenated per-layer node states ``(num_nodes, layers * hidden)``.
    """

    def __init__(self, hidden: int = 32, layers: int = 4, n_classes: int = 6, in_dim: int = 1, directed: bool = True):
        super().__init__()
        if hidden < 1 or layers < 1 or n_classes < 2 or in_dim < 1:
            raise ValueError("hidden, layers, in_dim must be >= 1 and n_classes >= 2")
        self.in_dim = in_dim
        self.encoder = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList([DirGINELayer(hidden, directed) for _ in range(layers)])
        self.head = nn.Sequential(nn.Linear(layers * hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def node_embeddings(self, x, edge_index=None, edge_attr=None) -> torch.Tensor:
        x, edge_index, edge_attr, _, _ = _unpack(x, edge_index, edge_attr, None)
        _check_inputs(x, edge_index, edge_attr, self.in_dim)
        h = self.encoder(x)
        states = []
        for layer in self.layers:
            h = layer(h, edge_index, edge_attr)
            states.append(h)
        return torch.cat(states, dim=-1)

    def forward(self, x, edge_index=None, edge_attr=None, batch: torch.Tensor | None = None) -> torch.Tensor:
        x, edge_index, edge_attr, batch, size = _unpack(x, edge_index, edge_attr, batch)
        _check_inputs(x, edge_index, edge_attr, self.in_dim, batch)
        if batch is None:  # one graph
            batch, size = torch.zeros(x.size(0), dtype=torch.long, device=x.device), 1
        h = self.node_embeddings(x, edge_index, edge_attr)
        return self.head(global_add_pool(h, batch, size=size))  # sum readout


class UndirectedGINE(DirGINE):
    """Baseline: the same network with arrow directions dropped (``DirGINE(directed=False)``)."""

    def __init__(self, hidden: int = 32, layers: int = 4, n_classes: int = 6, in_dim: int = 1):
        super().__init__(hidden, layers, n_classes, in_dim, directed=False)


def train_classifier(model: nn.Module, data: list[Data], epochs: int = 30, lr: float = 1e-3, batch_size: int = 64,
                     seed: int = 0, device: str = "cpu", on_epoch: Callable[[int], None] | None = None) -> list[float]:
    """Adam + cross-entropy on shuffled mini-batches; returns the mean training loss per epoch.

    ``on_epoch(epoch)`` (0-based), if given, is called after each epoch (e.g. to record test accuracy per epoch,
    as the paper reports its best epoch); the model is put back in training mode afterwards.
    """
    from torch_geometric.loader import DataLoader

    if not data:
        raise ValueError("training data is empty")
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(data, batch_size=batch_size, shuffle=True, generator=gen)
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        total, count = 0.0, 0
        for b in loader:
            b = b.to(device)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(b.x, b.edge_index, b.edge_attr, b.batch), b.y)
            loss.backward()
            opt.step()
            total += loss.item() * b.num_graphs
            count += b.num_graphs
        losses.append(total / count)
        if on_epoch is not None:
            on_epoch(len(losses) - 1)
            model.train()
    return losses


@torch.no_grad()
def predict(model: nn.Module, data: list[Data], batch_size: int = 512, device: str = "cpu") -> np.ndarray:
    """Predicted class of every graph."""
    from torch_geometric.loader import DataLoader

    if not data:
        raise ValueError("data is empty: nothing to predict")
    model.to(device).eval()
    out = [model(b.x, b.edge_index, b.edge_attr, b.batch).argmax(-1).cpu()
           for b in (bb.to(device) for bb in DataLoader(data, batch_size=batch_size))]
    return torch.cat(out).numpy()


# ----------------------------------------------------------------------------- explainability
def explain(model: DirGINE, B: np.ndarray, target: int | None = None, epochs: int = 100, seed: int = 0) -> dict:
    """GNNExplainer (PyG ``torch_geometric.explain``) edge importances for one quiver.

    Returns:
        ``{(i, j): importance in [0, 1]}`` for every arrow ``i -> j``; explains the model's own
        prediction (``target=None``) or the logit of class ``target``.
    """
    from torch_geometric.explain import Explainer, GNNExplainer

    data = quiver_to_data(B)
    if data.edge_index.size(1) == 0:
        raise ValueError("the quiver has no arrows: nothing to explain")
    data = data.to(_device_of(model))
    torch.manual_seed(seed)
    model.eval()
    explainer = Explainer(model=model, algorithm=GNNExplainer(epochs=epochs), explanation_type="model"
                          if target is None else "phenomenon", edge_mask_type="object", node_mask_type=None,
                          model_config=dict(mode="multiclass_classification", task_level="graph", return_type="raw"))
    kwargs = {} if target is None else {"target": torch.tensor([int(target)])}
    exp = explainer(data.x, data.edge_index, edge_attr=data.edge_attr, **kwargs)
    mask = exp.edge_mask.detach().cpu().numpy()
    return {(int(i), int(j)): float(m) for (i, j), m in zip(data.edge_index.t().tolist(), mask)}


def explain_pgexplainer(model: DirGINE, quivers: list[np.ndarray], target: int | None = None, epochs: int = 30,
                        lr: float = 0.003, seed: int = 0, train_quivers: list[np.ndarray] | None = None) -> list[dict]:
    """PGExplainer (Luo et al. 2020; PyG ``torch_geometric.explain``) edge masks, the paper's explainer.

    PGExplainer trains one small MLP that maps the embeddings of an arrow's two end vertices (the states of
    the model's last message-passing call) to the arrow's mask, over a set of quivers, then explains each
    quiver with one forward pass.

    Args:
        model: a trained :class:`DirGINE` (left unchanged).
        quivers: the quivers to explain; each needs at least one arrow.
        target: the class whose logit is explained; ``None``: each quiver's predicted class.
        epochs: passes over the training quivers (PyG's default 30).
        lr: Adam learning rate of the explainer MLP (PyG's default 0.003).
        seed: seed of the explainer's initialisation and sampling.
        train_quivers: quivers the explainer is trained on (default: ``quivers``).

    Returns:
        One ``{(i, j): mask in [0, 1]}`` per quiver, over its arrows ``i -> j``.
    """
    from torch_geometric.explain import Explainer, PGExplainer

    for name, value in (("epochs", epochs),):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    train_quivers = quivers if train_quivers is None else train_quivers
    if not quivers or not train_quivers:
        raise ValueError("quivers (and train_quivers) must be non-empty")
    device = _device_of(model)
    data = [quiver_to_data(B).to(device) for B in quivers]
    train = data if train_quivers is quivers else [quiver_to_data(B).to(device) for B in train_quivers]
    if any(d.edge_index.size(1) == 0 for d in data + train):
        raise ValueError("a quiver has no arrows: nothing to explain")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        with torch.no_grad():
            def targets(ds):
                if target is not None:
                    return [torch.tensor([int(target)], device=device)] * len(ds)
                return [model(d.x, d.edge_index, d.edge_attr).argmax(-1) for d in ds]
            train_t, data_t = targets(train), targets(data)
        torch.manual_seed(seed)
        explainer = Explainer(model=model, algorithm=PGExplainer(epochs=epochs, lr=lr).to(device),
                              explanation_type="phenomenon", edge_mask_type="object",
                              model_config=dict(mode="multiclass_classification", task_level="graph",
                                                return_type="raw"))
        with warnings.catch_warnings():  # PyG converts its loss to float without detaching it
            warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True")
            for epoch in range(epochs):
                for d, t in zip(train, train_t):
                    explainer.algorithm.train(epoch, model, d.x, d.edge_index, target=t, edge_attr=d.edge_attr)
        out = []
        for d, t in zip(data, data_t):
            mask = explainer(d.x, d.edge_index, target=t, edge_attr=d.edge_attr).edge_mask.detach().cpu().numpy()
            out.append({(int(i), int(j)): float(m) for (i, j), m in zip(d.edge_index.t().tolist(), mask)})
    finally:
        for p in model.parameters():
            p.requires_grad_(True)
    return out


@torch.no_grad()
def graph_embeddings(model: DirGINE, quivers: list[np.ndarray], layer: int | None = None) -> np.ndarray:
    """Sum-pooled hidden node states of each quiver.

    Args:
        model: a :class:`DirGINE`.
        quivers: exchange matrices.
        layer: 1-based index of the layer whose states are pooled, ``(len(quivers), hidden)`` (the paper's
            latent study uses the 3rd layer's 32-dimensional states); ``None``: the concatenation over all
            layers, ``(len(quivers), layers * hidden)`` (the readout input).
    """
    n_layers = len(model.layers)
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, (int, np.integer))
                              or not 1 <= layer <= n_layers):
        raise ValueError(f"layer must be None or an integer in [1, {n_layers}] (1-based), got {layer!r}")
    if not quivers:
        raise ValueError("quivers is empty: nothing to embed")
    model.eval()
    b = Batch.from_data_list([quiver_to_data(B) for B in quivers]).to(_device_of(model))
    h = model.node_embeddings(b.x, b.edge_index, b.edge_attr)
    if layer is not None:
        width = h.size(1) // n_layers
        h = h[:, (layer - 1) * width:layer * width]
    return global_add_pool(h, b.batch).cpu().numpy()


def _device_of(model: nn.Module) -> torch.device:
    """Where the model's parameters live (inputs are moved there)."""
    return next(model.parameters()).device


def cluster_hidden(model: DirGINE, quivers: list[np.ndarray], k: int = 4, seed: int = 0,
                   layer: int | None = 3) -> np.ndarray:
    """k-means cluster label of each quiver's pooled hidden representation of ``layer`` (see
    :func:`graph_embeddings`; default the 3rd layer, as in the paper's type-D study; ``None``: all layers)."""
    from sklearn.cluster import KMeans

    if k < 1 or k > len(quivers):
        raise ValueError(f"k must be in [1, {len(quivers)}], got {k}")
    if layer is not None and len(model.layers) < layer:
        layer = len(model.layers)  # a shallower network: its last layer
    return KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(graph_embeddings(model, quivers, layer))
