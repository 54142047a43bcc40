"""Pretrain-then-adapt pieces: an MLP with a replaceable head, transfer data sets, a checkpoint
zoo over pretraining hyperparameters, few-shot fine-tuning, and the checkpoint-selection study.

Data generated here or shipped with scikit-learn (nothing is downloaded):

* ``digits_transfer``: pretrain 7-way on digits 0-6, adapt 3-way to digits 7-9 (new classes,
  a far shift);
* ``teacher_transfer``: a random 2-layer teacher with a shared 16-d ReLU feature map; the
  pretraining labels come from one random readout, downstream tasks from fresh readouts of the
  same features (the paper's shared-backbone / new-head structure, a near shift).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats
from torch import nn
from torch.nn import functional as F

from icml25.papers.downstream_free_energy.free_energy import check_count, check_positive


class MLP(nn.Module):
    """ReLU MLP ``backbone`` (widths[0] -> ... -> widths[-1]) followed by a linear ``head``."""

    def __init__(self, widths: Sequence[int] = (64, 128, 128), n_classes: int = 7) -> None:
        super().__init__()
        widths = list(widths)
        if len(widths) < 2:
            raise ValueError(f"widths needs an input and at least one hidden width, got {widths}")
        for w in widths:
            check_count("every width", w)
        check_count("n_classes", n_classes)
        layers: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.backbone = nn.Sequential(*layers)
        self.head = nn.Linear(widths[-1], n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


@dataclass
class TransferData:
    """Pretraining set and a downstream pool (support sets and queries are drawn from the pool)."""

    x_pre: torch.Tensor
    y_pre: torch.Tensor
    x_down: torch.Tensor
    y_down: torch.Tensor
    n_pre_classes: int
    name: str = ""

    def to(self, device: str | torch.device) -> "TransferData":
        """The same data with every tensor on ``device`` (itself when nothing moves)."""
        return TransferData(self.x_pre.to(device), self.y_pre.to(device), self.x_down.to(device),
                            self.y_down.to(device), self.n_pre_classes, self.name)


def digits_transfer(pretrain_classes: Sequence[int] = tuple(range(7)),
                    downstream_classes: Sequence[int] = (7, 8, 9)) -> TransferData:
    """scikit-learn digits (8x8, pixel values / 16): pretrain on ``pretrain_classes``, adapt to the others."""
    from sklearn.datasets import load_digits

    for name, classes in (("pretrain_classes", pretrain_classes), ("downstream_classes", downstream_classes)):
        if len(classes) < 2 or len(set(classes)) != len(classes) or not all(c in range(10) for c in classes):
            raise ValueError(f"{name} must be at least 2 distinct digits in 0..9, got {tuple(classes)!r}")
    if set(pretrain_classes) & set(downstream_classes):
        raise ValueError("pretraining and downstream classes must be disjoint")
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    pre = np.isin(y, pretrain_classes)
    down = np.isin(y, downstream_classes)
    remap_pre = {c: i for i, c in enumerate(pretrain_classes)}
    remap_down = {c: i for i, c in enumerate(downstream_classes)}
    return TransferData(X[pre], torch.tensor([remap_pre[c] for c in y[pre]]),
                        X[down], torch.tensor([remap_down[c] for c in y[down]]),
                        len(pretrain_classes), "digits")


def teacher_transfer(n_pre: int = 1500, n_down: int = 600, in_dim: int = 32, feature_dim: int = 16,
                     n_pre_classes: int = 7, n_down_classes: int = 3, label_noise: float = 0.05,
                     seed: int = 0) -> TransferData:
    """Teacher-student transfer: x ~ N(0, I), h = relu(A x) (shared), labels argmax(V h) per task.

    The pretraining readout V0 (n_pre_classes x feature_dim) and the downstream readout V1 are
    independent Gaussian matrices; ``label_noise`` is the probability of replacing a label by a
    uniformly random class.
    """
    if not 0.0 <= label_noise <= 1.0:
        raise ValueError(f"label_noise is a probability and must lie in [0, 1], got {label_noise!r}")
    for name, v in (("n_pre", n_pre), ("n_down", n_down), ("in_dim", in_dim), ("feature_dim", feature_dim),
                    ("n_pre_classes", n_pre_classes), ("n_down_classes", n_down_classes)):
        check_count(name, v)
    g = torch.Generator().manual_seed(int(seed))
    A = torch.randn(feature_dim, in_dim, generator=g) / math.sqrt(in_dim)

    def task(n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        V = torch.randn(k, feature_dim, generator=g)
        x = torch.randn(n, in_dim, generator=g)
        y = (torch.relu(x @ A.T) @ V.T).argmax(1)
        flip = torch.rand(n, generator=g) < label_noise
        y[flip] = torch.randint(0, k, (int(flip.sum()),), generator=g)
        return x, y

    x_pre, y_pre = task(n_pre, n_pre_classes)
    x_down, y_down = task(n_down, n_down_classes)
    return TransferData(x_pre, y_pre, x_down, y_down, n_pre_classes, "teacher")


def pretrain(data: TransferData, widths: Sequence[int], lr: float, batch_size: int, momentum: float,
             epochs: int, weight_decay: float = 1e-4, seed: int = 0, target_loss: float = 0.0) -> MLP:
    """SGD with cross-entropy on the pretraining set.

    With ``target_loss = 0`` every run takes ``epochs`` epochs. With ``target_loss > 0`` training stops at the end of
    the first epoch whose full-batch training loss (mean cross-entropy, no weight-decay term) is at most
    ``target_loss``, and ``epochs`` is the cap: this puts checkpoints on one training-loss level set, the regime the
    paper's selection theory is stated for. The number of epochs run and whether the level was reached are stored as
    ``model.pretrain_epochs`` and ``model.reached_target``.

    The model is built on the device of ``data.x_pre`` (see :meth:`TransferData.to`).
    """
    lr = check_positive("lr", lr)
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    check_positive("weight_decay", weight_decay, allow_zero=True)
    check_positive("target_loss", target_loss, allow_zero=True)
    batch_size, epochs = check_count("batch_size", batch_size), check_count("epochs", epochs)
    torch.manual_seed(int(seed))
    model = MLP(widths, data.n_pre_classes).to(data.x_pre.device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(int(seed) + 1)
    n = data.x_pre.shape[0]
    reached, done = target_loss == 0.0, 0
    for done in range(1, epochs + 1):  # noqa: B007 - the epoch count reached is returned
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            opt.zero_grad()
            F.cross_entropy(model(data.x_pre[idx]), data.y_pre[idx]).backward()
            opt.step()
        if target_loss > 0.0:
            with torch.no_grad():
                loss = float(F.cross_entropy(model(data.x_pre), data.y_pre))
            reached = loss <= target_loss
            if reached or not math.isfinite(loss):
                break
    model.pretrain_epochs, model.reached_target = done, reached
    return model


@dataclass
class Checkpoint:
    """One pretrained model and the numbers measured on it."""

    hparams: dict
    model: MLP
    metrics: dict = field(default_factory=dict)


def pretrain_grid(lrs: Iterable[float], batch_sizes: Iterable[int], momenta: Iterable[float]) -> list[dict]:
    """Cartesian product of pretraining hyperparameters, as a list of dicts."""
    return [dict(lr=a, batch_size=b, momentum=m) for a, b, m in itertools.product(lrs, batch_sizes, momenta)]


def checkpoint_zoo(grid: Sequence[dict], data: TransferData, seed: int, widths: Sequence[int] = (64, 128, 128),
                   epochs: int = 30, weight_decay: float = 1e-4, target_loss: float = 0.0) -> list[Checkpoint]:
    """One pretraining run per grid point (same initialisation seed for all: only the optimiser differs).

    ``target_loss > 0`` trains each run to that training loss (at most ``epochs`` epochs, see :func:`pretrain`);
    each checkpoint's ``metrics`` then hold ``pretrain_epochs`` and ``reached_target``.
    """
    if not grid:
        raise ValueError("pretrain grid is empty")
    zoo = []
    for h in grid:
        model = pretrain(data, widths, h["lr"], h["batch_size"], h["momentum"], epochs, weight_decay, seed,
                         target_loss)
        zoo.append(Checkpoint(dict(h), model, {"pretrain_epochs": model.pretrain_epochs,
                                               "reached_target": model.reached_target}))
    return zoo


@dataclass
class FineTuner:
    """Few-shot full fine-tuning with a fresh head; returns the downstream test error.

    Each episode draws ``n_shot`` support images per class from the downstream pool, replaces the
    head by a new zero-initialised ``n_way`` head, runs ``steps`` full-batch SGD steps (head at
    ``head_lr``, backbone at ``backbone_lr_ratio * head_lr``) and measures the error on all pool
    images outside the support set.

    Attributes:
        n_shot: support examples per class.
        head_lr: learning rate of the new head (> 0).
        backbone_lr_ratio: backbone learning rate / head learning rate (>= 0; 0 = linear probe).
        steps: fine-tuning steps.
        n_episodes: random support sets averaged over.
    """

    n_shot: int = 5
    head_lr: float = 0.5
    backbone_lr_ratio: float = 0.1
    steps: int = 100
    n_episodes: int = 20

    def __post_init__(self) -> None:
        check_count("n_shot", self.n_shot)
        check_positive("head_lr", self.head_lr)
        check_positive("backbone_lr_ratio", self.backbone_lr_ratio, allow_zero=True)
        check_count("steps", self.steps)
        check_count("n_episodes", self.n_episodes)

    def episodes(self, y: torch.Tensor, seed: int) -> list[torch.Tensor]:
        """Support-set indices of every episode (the same for every checkpoint given the seed)."""
        rng = np.random.default_rng([int(seed), 99])
        out = []
        for _ in range(self.n_episodes):
            labels = y.cpu().numpy()
            idx = []
            for c in range(int(labels.max()) + 1):
                members = np.flatnonzero(labels == c)
                if members.size < self.n_shot:
                    raise ValueError(f"class {c} has {members.size} examples, fewer than n_shot={self.n_shot}")
                idx.append(rng.choice(members, self.n_shot, replace=False))
            out.append(torch.tensor(np.concatenate(idx)))
        return out

    def error(self, model: MLP, x: torch.Tensor, y: torch.Tensor, seed: int = 0) -> float:
        """Mean downstream test error over the episodes."""
        if x.shape[0] != y.shape[0] or y.ndim != 1 or y.numel() == 0:
            raise ValueError(f"x and y must have the same non-zero number of rows and y must be 1-D, got "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
        if y.is_floating_point() or bool((y < 0).any()):
            raise ValueError("y must hold non-negative integer class labels")
        n_way = int(y.max()) + 1
        errors = []
        for support in self.episodes(y, seed):
            m = copy.deepcopy(model)
            w = m.head.weight
            m.head = nn.Linear(m.head.in_features, n_way, device=w.device, dtype=w.dtype)
            nn.init.zeros_(m.head.weight)
            nn.init.zeros_(m.head.bias)
            opt = torch.optim.SGD([{"params": m.head.parameters(), "lr": self.head_lr},
                                   {"params": m.backbone.parameters(), "lr": self.head_lr * self.backbone_lr_ratio}])
            xs, ys = x[support], y[support]
            for _ in range(self.steps):
                opt.zero_grad()
                F.cross_entropy(m(xs), ys).backward()
                opt.step()
            query = torch.ones(len(y), dtype=torch.bool, device=y.device)
            query[support] = False
            with torch.no_grad():
                errors.append(float((m(x[query]).argmax(1) != y[query]).float().mean()))
        return float(np.mean(errors))


def selection_study(zoo: Sequence[Checkpoint], metrics: Sequence[str] = ("free_energy", "train_loss", "llc",
                                                                          "hessian_trace"),
                    target: str = "downstream_error") -> dict[str, dict[str, float]]:
    """Rank correlations of each pretraining metric with ``target`` over the zoo.

    Returns ``{metric: row}`` with, in each row: ``spearman``, ``kendall`` (and their p-values), ``pearson`` (the
    paper's statistic in Table 1; NaN for a constant column), and ``regret``: the
    target of the checkpoint the metric would pick (its lowest value) minus the best target in the zoo.
    Checkpoints with a non-finite metric are left out of that metric's row (``n`` says how many remain).
    """
    if len(zoo) < 3:
        raise ValueError(f"a rank correlation needs at least 3 checkpoints, got {len(zoo)}")
    for name in (*metrics, target):
        missing = [i for i, c in enumerate(zoo) if name not in c.metrics]
        if missing:
            have = sorted(zoo[missing[0]].metrics)
            raise ValueError(f"checkpoint {missing[0]} has no metric {name!r}; it has {have}")
    rows: dict[str, dict[str, float]] = {}
    t_all = np.array([c.metrics[target] for c in zoo], dtype=float)
    for name in metrics:
        v = np.array([c.metrics[name] for c in zoo], dtype=float)
        ok = np.isfinite(v) & np.isfinite(t_all)
        rho, p_rho = stats.spearmanr(v[ok], t_all[ok])
        tau, p_tau = stats.kendalltau(v[ok], t_all[ok])
        r = stats.pearsonr(v[ok], t_all[ok])[0] if np.ptp(v[ok]) > 0 and np.ptp(t_all[ok]) > 0 else np.nan
        regret = t_all[ok][np.argmin(v[ok])] - np.nanmin(t_all)
        rows[name] = dict(spearman=float(rho), spearman_p=float(p_rho), kendall=float(tau), kendall_p=float(p_tau),
                          pearson=float(r), regret=float(regret), n=int(ok.sum()))
    return rows
