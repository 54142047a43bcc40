"""ReT-FHD: federated heterogeneous logit distillation with temperature control and a Z-score guard.

Qi, Shi, Xu, Li and Xu, "Rethinking the Temperature for Federated Heterogeneous Distillation",
ICML 2025 (OpenReview f9xsNQ8oSd). Read top to bottom:

1. every client owns a multi-exit model (:class:`MultiExitMLP`); architectures may differ;
2. after local training it uploads its class-conditional mean logits of the last exit,
   ``Z_k[c] = mean_{x in D_k, y=c} z_k(x)`` (C x C floats, independent of model size) and counts;
3. validators run the Z-score guard (:func:`zscore_guard`) on the uploads; a miner writes the
   accepted uploads and the new global logits to a hash-chained ledger (:class:`HashChainLedger`);
4. the global logits ``Z_g[c]`` are the count-weighted mean of the accepted uploads;
5. each client distils every exit ``l`` towards ``Z_g[y]`` with a temperature ``T[l, y]``:
   category-aware (:func:`category_temperature`, paper Eq. 4) times multi-level elastic
   (:func:`elastic_temperature`, paper Eq. 3); local objective (:func:`distillation_loss`, Eq. 6).

Equations 3, 4 and 6 were not retrievable; the forms here are reconstructions (see the doc).

Settings: the client and server training settings are one :class:`ReTFHDConfig`, passed whole:
``ReTFHD(clients, ReTFHDConfig(rounds=20, lr=3e-3), seed=0)``; the keyword form ``ReTFHD(clients, rounds=20)``
builds the same config. The baselines take the same config and switch off what they lack.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from icml25.common.checks import ConfigError, check_fields, check_ranges

ROLES = ("worker", "validator", "miner")
ATTACKS = ("label_flip", "model_poison")


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------
class MultiExitMLP(nn.Module):
    """MLP with an exit (linear classifier head) after every hidden layer.

    Args:
        in_dim: input features.
        hidden: widths of the hidden layers (at least one); exit ``l`` reads hidden layer ``l``.
        n_classes: number of classes.

    ``forward(x)`` returns a list of ``len(hidden)`` logit tensors of shape (B, n_classes);
    the last one is the model's prediction.
    """

    def __init__(self, in_dim: int, hidden: Sequence[int], n_classes: int):
        super().__init__()
        hidden = list(hidden)
        if in_dim < 1 or n_classes < 2 or not hidden or any(int(h) < 1 for h in hidden):
            raise ValueError(f"MultiExitMLP needs in_dim >= 1, n_classes >= 2 and positive hidden widths; got "
                             f"in_dim={in_dim}, hidden={hidden}, n_classes={n_classes}")
        dims = [in_dim, *hidden]
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(a, b), nn.ReLU()) for a, b in zip(dims[:-1], dims[1:]))
        self.exits = nn.ModuleList(nn.Linear(h, n_classes) for h in hidden)
        self.in_dim, self.n_classes = in_dim, n_classes

    @property
    def n_exits(self) -> int:
        """Number of exits L."""
        return len(self.exits)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Logits of every exit, shallowest first; ``x`` is (..., in_dim)."""
        if x.ndim < 1 or x.shape[-1] != self.in_dim:
            raise ValueError(f"x must have shape (..., {self.in_dim}), got {tuple(x.shape)}")
        out = []
        for block, head in zip(self.blocks, self.exits):
            x = block(x)
            out.append(head(x))
        return out


def n_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (what FedAvg would upload per round)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ----------------------------------------------------------------------------------------------
# Knowledge carrier and temperatures
# ----------------------------------------------------------------------------------------------
def _as_batches(loader) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    if isinstance(loader, tuple) and len(loader) == 2 and isinstance(loader[0], torch.Tensor):
        return [loader]
    return loader


@torch.no_grad()
def class_mean_logits(model: MultiExitMLP, loader, n_classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Class-conditional mean logits of every exit on a client's data.

    Args:
        model: a multi-exit model.
        loader: an ``(X, y)`` tuple of tensors or an iterable of ``(x, y)`` batches.
        n_classes: C.

    Returns:
        ``Z`` of shape (L, C, C) with ``Z[l, c] = mean_{y=c} z^l(x)`` (zeros for absent classes)
        and ``counts`` of shape (C,).
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    sums = counts = None
    was_training = model.training
    model.eval()
    for x, y in _as_batches(loader):
        y = torch.as_tensor(y)
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise TypeError(f"labels must be integer class ids, got dtype {y.dtype}")
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or len(x) != len(y) or y.ndim != 1:
            raise ValueError(f"a batch must be x (B, in_dim) and y (B,), got shapes "
                             f"{tuple(getattr(x, 'shape', ()))} and {tuple(y.shape)}")
        y = y.to(device=x.device, dtype=torch.long)
        if y.numel() and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"labels must lie in [0, {n_classes - 1}], got range [{int(y.min())}, {int(y.max())}]")
        z = torch.stack(model(x))  # (L, B, C)
        if sums is None:
            sums = z.new_zeros(z.shape[0], n_classes, z.shape[2])
            counts = z.new_zeros(n_classes)
        sums.index_add_(1, y, z)
        counts += torch.bincount(y, minlength=n_classes).to(counts.dtype)
    model.train(was_training)
    if sums is None:
        raise ValueError("class_mean_logits got an empty loader")
    return sums / counts.clamp_min(1)[None, :, None], counts


def check_temperatures(where: str, T0: float, a: float, bounds: tuple[float, float]) -> None:
    """One-line :class:`ConfigError` unless ``T0 > 0``, ``a >= 0`` and ``0 < bounds[0] <= bounds[1] < inf``."""
    check_ranges(where, {"T0": T0, "a": a, "bounds": bounds}, finite=True, positive=("T0", "bounds"),
                 nonnegative=("a",))
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2 or bounds[0] > bounds[1]:
        raise ConfigError(f"{where}.bounds must be (T_min, T_max) with T_min <= T_max, got {bounds!r}")


def _check_square(Z: torch.Tensor, name: str) -> None:
    if Z.ndim != 2 or Z.shape[0] != Z.shape[1]:
        raise ValueError(f"{name} must have shape (C, C), got {tuple(Z.shape)}")


def category_temperature(Z_g: torch.Tensor, T0: float = 4.0, a: float = 1.0,
                         bounds: tuple[float, float] = (1.0, 10.0)) -> torch.Tensor:
    """Category-aware global temperature (reconstruction of paper Eq. 4).

    ``kappa_c = max softmax(Z_g[c])`` is the confidence of the global knowledge of class c;
    ``T_c = clip(T0 (kappa_c / mean_c kappa)^a, bounds)``: confident classes are softened more.
    ``a = 0`` gives the constant ``T0`` (clipped).

    Args:
        Z_g: global class-mean logits, shape (C, C).
        T0: base temperature (> 0).
        a: exponent (>= 0).
        bounds: ``(T_min, T_max)`` with ``0 < T_min <= T_max``.

    Returns:
        T of shape (C,).
    """
    _check_square(Z_g, "Z_g")
    check_temperatures("category_temperature", T0, a, bounds)
    if not bool(torch.isfinite(Z_g).all()):
        raise ValueError("Z_g must be finite")
    kappa = Z_g.softmax(-1).max(-1).values
    return (T0 * (kappa / kappa.mean()) ** a).clamp(bounds[0], bounds[1])


def elastic_temperature(Z_g: torch.Tensor, Z_k: torch.Tensor, T_c: torch.Tensor, eta: float = 0.5,
                        bounds: tuple[float, float] = (1.0, 10.0), present: torch.Tensor | None = None
                        ) -> torch.Tensor:
    """Multi-level elastic temperature (reconstruction of paper Eq. 3).

    ``T[l, c] = clip(T_c (1 + eta KL(softmax(Z_g[c]) || softmax(Z_k[l, c]))), bounds)``: an exit whose
    class-c logits disagree more with the global knowledge gets a softer target.
    ``eta = 0`` gives ``T[l, c] = T_c`` for every level.

    Args:
        Z_g: global class-mean logits, (C, C).
        Z_k: the client's class-mean logits of each exit, (L, C, C).
        T_c: category temperatures, (C,).
        eta: elasticity (>= 0).
        bounds: clip range.
        present: optional bool (C,) of classes the client holds; absent classes get ``T_c``.

    Returns:
        T of shape (L, C).
    """
    _check_square(Z_g, "Z_g")
    if Z_k.ndim != 3 or Z_k.shape[1:] != Z_g.shape:
        raise ValueError(f"Z_k must have shape (L, {Z_g.shape[0]}, {Z_g.shape[1]}), got {tuple(Z_k.shape)}")
    check_ranges("elastic_temperature", {"eta": eta}, finite=True, nonnegative=True)
    C = Z_g.shape[0]
    if T_c.shape != (C,):
        raise ValueError(f"T_c must have shape ({C},), got {tuple(T_c.shape)}")
    if present is not None and present.shape != (C,):
        raise ValueError(f"present must have shape ({C},), got {tuple(present.shape)}")
    p_g = Z_g.log_softmax(-1)
    kl = (p_g.exp() * (p_g - Z_k.log_softmax(-1))).sum(-1)  # (L, C)
    if present is not None:
        kl = kl * present.float()[None]
    return (T_c[None] * (1 + eta * kl)).clamp(bounds[0], bounds[1])


def distillation_loss(exit_logits: Sequence[torch.Tensor], y: torch.Tensor, Z_g: torch.Tensor, T: torch.Tensor,
                      level_weights: Sequence[float] | None = None, mask: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """Temperature-scaled distillation towards the global class logits (KD term of paper Eq. 6).

    ``sum_l lam_l mean_i T[l,y_i]^2 KL(softmax(Z_g[y_i] / T[l,y_i]) || softmax(z^l(x_i) / T[l,y_i]))``;
    the ``T^2`` factor keeps gradient magnitudes independent of T (Hinton et al., 2015).

    Args:
        exit_logits: L tensors (B, C); the last ``T.shape[0]`` exits are distilled.
        y: labels (B,).
        Z_g: global class-mean logits (C, C).
        T: temperatures (L', C) with L' <= L (L' = 1 distils only the last exit).
        level_weights: lam_l, default ``1/L'``.
        mask: optional bool (C,) of classes with global knowledge; other samples are skipped.

    Returns:
        Scalar loss (averaged over the batch, masked samples count as zero).

    Raises:
        ValueError: more levels in ``T`` than exits, ``level_weights`` of another length, logits,
            labels or ``mask`` of mismatched shapes, labels outside [0, C), or non-positive temperatures.
        TypeError: non-integer labels.
    """
    _check_square(Z_g, "Z_g")
    C = Z_g.shape[0]
    if T.ndim != 2 or T.shape[1] != C:
        raise ValueError(f"T must have shape (L', {C}), got {tuple(T.shape)}")
    if T.shape[0] > len(exit_logits) or T.shape[0] < 1:
        raise ValueError(f"T has {T.shape[0]} levels but the model has {len(exit_logits)} exits")
    if level_weights is not None and len(level_weights) != T.shape[0]:
        raise ValueError(f"level_weights has {len(level_weights)} entries for {T.shape[0]} levels")
    if y.is_floating_point() or y.dtype == torch.bool or y.ndim != 1:
        raise TypeError(f"y must be a 1-D tensor of integer labels, got dtype {y.dtype}, shape {tuple(y.shape)}")
    if any(z.shape != (len(y), C) for z in exit_logits):
        raise ValueError(f"every exit's logits must have shape (B, C) = ({len(y)}, {C}), "
                         f"got {[tuple(z.shape) for z in exit_logits]}")
    if y.numel() and (y.min() < 0 or y.max() >= C):
        raise ValueError(f"labels must lie in [0, {C - 1}], got range [{int(y.min())}, {int(y.max())}]")
    if not bool((T > 0).all()):
        raise ValueError("temperatures T must be > 0")
    if mask is not None and mask.shape != (C,):
        raise ValueError(f"mask must have shape ({C},), got {tuple(mask.shape)}")
    return _distillation_loss(exit_logits, y, Z_g, T, level_weights, mask)


def _distillation_loss(exit_logits: Sequence[torch.Tensor], y: torch.Tensor, Z_g: torch.Tensor, T: torch.Tensor,
                       level_weights: Sequence[float] | None = None, mask: torch.Tensor | None = None
                       ) -> torch.Tensor:
    """:func:`distillation_loss` on checked arguments (the local training loop)."""
    Lp = T.shape[0]
    lam = [1.0 / Lp] * Lp if level_weights is None else list(level_weights)
    teacher = Z_g[y]  # (B, C)
    keep = torch.ones_like(y, dtype=torch.float) if mask is None else mask[y].float()
    loss = teacher.new_zeros(())
    for w, z, t in zip(lam, exit_logits[-Lp:], T):
        ty = t[y][:, None]
        log_pt = (teacher / ty).log_softmax(-1)
        kl = (log_pt.exp() * (log_pt - (z / ty).log_softmax(-1))).sum(-1)
        loss = loss + w * (keep * ty[:, 0] ** 2 * kl).mean()
    return loss


# ----------------------------------------------------------------------------------------------
# Z-score guard and ledger
# ----------------------------------------------------------------------------------------------
def zscore_guard(uploads: Sequence[torch.Tensor | np.ndarray], thresh: float = 2.0,
                 counts: Sequence[torch.Tensor | np.ndarray] | None = None, robust: bool = True,
                 standardize: bool = True, rel_floor: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """Z-score guard run by the validators (reconstruction of the paper's Z-Score Guard).

    1. With ``standardize``, every uploaded row is z-normalised, ``(Z_k[c] - mean) / std`` over its
       entries, so heterogeneous models with different logit scales are comparable.
    2. Reference ``M[c]`` = coordinate-wise median of the rows of the clients holding class c.
    3. Deviation of client k: ``D_k = sum_c n_kc ||Z_k[c] - M[c]|| / sum_c n_kc`` (count-weighted,
       so classes a client barely holds weigh little).
    4. ``z_k = (D_k - center) / scale``: median and ``1.4826 MAD`` with ``robust`` (modified z-score;
       the classical mean/std z-score of K values can never exceed ``(K-1)/sqrt(K)`` and is swamped
       by 30% attackers), else mean and standard deviation. The scale is floored at ``rel_floor``
       times the median row norm, so near-identical uploads are never rejected.
    5. Reject ``z_k > thresh``.

    Args:
        uploads: K arrays of shape (C, D) (class-mean logits: D = C).
        thresh: z threshold (> 0).
        counts: optional K arrays (C,) of class counts (default: all ones).
        robust: median/MAD (True) or mean/std (False).
        standardize: z-normalise each row first.
        rel_floor: relative floor on the scale.

    Returns:
        ``accepted`` bool array (K,) and the scores ``z`` (K,).
    """
    if len(uploads) < 3:
        raise ValueError(f"zscore_guard needs at least 3 uploads, got {len(uploads)}")
    check_ranges("zscore_guard", {"thresh": thresh}, finite=True, positive=True)
    U = np.stack([np.asarray(u, dtype=float) for u in uploads])  # (K, C, D)
    if U.ndim != 3 or not np.all(np.isfinite(U)):
        raise ValueError(f"uploads must be finite arrays of one shape (C, D); stacked shape {U.shape}")
    K, C, _ = U.shape
    n = np.ones((K, C)) if counts is None else np.stack([np.asarray(c, dtype=float) for c in counts])
    if n.shape != (K, C) or np.any(n < 0):
        raise ValueError(f"counts must be K={K} non-negative arrays of length C={C}, got shape {n.shape}")
    if standardize:
        U = (U - U.mean(-1, keepdims=True)) / (U.std(-1, keepdims=True) + 1e-8)
    held = n > 0
    with np.errstate(all="ignore"):
        M = np.nan_to_num(np.nanmedian(np.where(held[..., None], U, np.nan), axis=0))
    d = np.linalg.norm(U - M[None], axis=-1)  # (K, C)
    D = (n * d).sum(1) / np.maximum(n.sum(1), 1e-12)
    if robust:
        center = np.median(D)
        scale = 1.4826 * np.median(np.abs(D - center))
    else:
        center, scale = D.mean(), D.std()
    floor = rel_floor * max(float(np.median(np.linalg.norm(U, axis=-1))), 1e-12)
    z = (D - center) / max(float(scale), floor)
    return z <= thresh, z


class HashChainLedger:
    """Append-only hash chain of blocks, the simulated blockchain of ReT-FHD.

    Each block stores its payload (named arrays) and metadata; its hash covers the previous hash,
    the metadata and the payload bytes, so editing any stored upload breaks :meth:`verify`.
    """

    def __init__(self) -> None:
        self.blocks: list[dict] = []

    @staticmethod
    def _digest(prev: str, meta: dict, payload: dict[str, np.ndarray]) -> str:
        h = hashlib.sha256(prev.encode())
        h.update(json.dumps(meta, sort_keys=True).encode())
        for k in sorted(payload):
            h.update(k.encode())
            h.update(np.ascontiguousarray(payload[k], dtype=np.float64).tobytes())
        return h.hexdigest()

    def append(self, meta: dict, payload: dict[str, np.ndarray]) -> str:
        """Add a block; returns its hash."""
        prev = self.blocks[-1]["hash"] if self.blocks else "genesis"
        payload = {k: np.array(v, dtype=np.float64, copy=True) for k, v in payload.items()}
        block = {"meta": dict(meta), "payload": payload, "prev": prev, "hash": self._digest(prev, meta, payload)}
        self.blocks.append(block)
        return block["hash"]

    def verify(self) -> bool:
        """Whether every block's hash matches its contents and links to its predecessor."""
        prev = "genesis"
        for b in self.blocks:
            if b["prev"] != prev or b["hash"] != self._digest(prev, b["meta"], b["payload"]):
                return False
            prev = b["hash"]
        return True


# ----------------------------------------------------------------------------------------------
# Federated runner
# ----------------------------------------------------------------------------------------------
@dataclass
class Client:
    """One federated participant: its model, private data and (optionally) an attack.

    ``attack`` is ``None`` (honest), ``"label_flip"`` (uploads its class means under flipped
    labels, ``Z[c] <- Z[C-1-c]``) or ``"model_poison"`` (uploads random logits scaled to
    ``attack_scale`` times its honest logit spread).
    """

    model: MultiExitMLP
    X: torch.Tensor
    y: torch.Tensor
    attack: str | None = None
    attack_scale: float = 3.0

    def __post_init__(self) -> None:
        if self.attack is not None and self.attack not in ATTACKS:
            raise ValueError(f"attack must be None or one of {ATTACKS}, got {self.attack!r}")
        if len(self.X) != len(self.y) or len(self.y) == 0:
            raise ValueError(f"client needs matching non-empty X and y, got {len(self.X)} and {len(self.y)}")


@dataclass
class History:
    """What :meth:`ReTFHD.run` returns."""

    accuracy: list[float] = field(default_factory=list)
    """Mean test accuracy of the honest clients' last exits after each round."""
    client_accuracy: list[list[float]] = field(default_factory=list)
    """Per-client test accuracy after each round."""
    bytes_per_round: list[int] = field(default_factory=list)
    """Bytes uploaded by all clients in each round (float32)."""
    flagged: list[list[int]] = field(default_factory=list)
    """Ids of uploads rejected (or ignored as blacklisted) in each round."""
    roles: list[list[str]] = field(default_factory=list)
    """Role of every client in each round."""
    blacklist: list[int] = field(default_factory=list)
    """Clients blacklisted by the end."""


@dataclass(frozen=True)
class ReTFHDConfig:
    """Client and server training settings of :class:`ReTFHD` (and of its baselines :func:`FDFixedT`,
    :func:`LocalOnly`, :class:`FedAvg`, which override the switches they turn off)."""

    rounds: int = 20
    """Communication rounds."""
    local_epochs: int = 2
    """Local epochs per round."""
    batch_size: int = 32
    """Local mini-batch size."""
    lr: float = 1e-3
    """Adam learning rate of every client."""
    distill: bool = True
    """Distil towards the global class logits; False gives local training only."""
    kd_weight: float = 1.0
    """Weight of the distillation term of the local objective (Eq. 6)."""
    multi_level: bool = True
    """Distil every exit (else only the last one)."""
    T0: float = 4.0
    """Base temperature of the category-aware scaling (Eq. 4)."""
    a: float = 1.0
    """Exponent of the category-aware scaling (Eq. 4)."""
    category: bool = True
    """Category-aware temperatures; False gives the constant T0 (a = 0)."""
    eta: float = 0.5
    """Elasticity of the multi-level temperature (Eq. 3)."""
    elastic: bool = True
    """Multi-level elastic temperatures; False sets eta = 0."""
    bounds: tuple[float, float] = (1.0, 10.0)
    """Clip range (T_min, T_max) of every temperature."""
    guard: bool = True
    """Run the Z-score guard on the uploads (else every upload is accepted)."""
    guard_thresh: float = 2.0
    """Z threshold of the guard."""
    blacklist_after: int = 3
    """Rejections after which a client is blacklisted."""
    role_probs: tuple[float, float, float] = (0.7, 0.2, 0.1)
    """Probabilities of worker / validator / miner (every client also trains and uploads, Algorithm 1 line 3)."""

    def __post_init__(self) -> None:
        for name in ("bounds", "role_probs"):  # a stored (JSON) config gives lists
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        ints = ("rounds", "local_epochs", "batch_size", "blacklist_after")
        check_fields(self, integer=ints, positive=ints,
                     at_most={"rounds": 10**6, "local_epochs": 10**4, "batch_size": 10**6, "blacklist_after": 10**6},
                     choices={b: (True, False) for b in ("distill", "multi_level", "category", "elastic", "guard")})
        check_fields(self, finite=("lr", "kd_weight", "eta", "guard_thresh", "role_probs"),
                     positive=("lr", "guard_thresh"), nonnegative=("kd_weight", "eta", "role_probs"))
        check_temperatures("ReTFHDConfig", self.T0, self.a, self.bounds)
        probs = self.role_probs
        if not isinstance(probs, tuple) or len(probs) != 3 or not np.isclose(sum(probs), 1):
            raise ConfigError(f"ReTFHDConfig.role_probs must be 3 non-negative numbers summing to 1, "
                              f"got {self.role_probs!r}")


def training_settings(owner: str, cfg: ReTFHDConfig | None, settings: dict) -> ReTFHDConfig:
    """``cfg`` (default ``ReTFHDConfig()``) with the keyword ``settings`` applied; the copy validates itself.

    Raises:
        TypeError: ``cfg`` that is not a :class:`ReTFHDConfig` (e.g. a round count given by position), or a
            setting that is not one of its fields.
    """
    if cfg is not None and not isinstance(cfg, ReTFHDConfig):
        raise TypeError(f"{owner}: cfg must be a ReTFHDConfig, got {type(cfg).__name__} {cfg!r}; give single "
                        f"settings by keyword (rounds=...)")
    return replace(cfg or ReTFHDConfig(), **settings)


class ReTFHD:
    """ReT-FHD federated training loop (simulated blockchain roles, guard, temperatures).

    Args:
        clients: the participants (models may differ in depth and width); at least 3.
        cfg: the training settings, :class:`ReTFHDConfig` (default ``ReTFHDConfig()``).
        seed: seed of role draws and mini-batch order.
        eval_data: ``(X_test, y_test)`` for the accuracy history.
        **settings: fields of ``cfg`` by keyword (``ReTFHD(clients, rounds=3, guard=False)``).

    Attributes:
        cfg: the settings in force; ledger: the hash chain of accepted uploads; global_logits_: Z_g after
        :meth:`run`.
    """

    def __init__(self, clients: Sequence[Client], cfg: ReTFHDConfig | None = None, *, seed: int = 0,
                 eval_data: tuple[torch.Tensor, torch.Tensor] | None = None, **settings):
        self.cfg = training_settings("ReTFHD", cfg, settings)
        if len(clients) < 3:
            raise ValueError(f"need at least 3 clients, got {len(clients)}")
        C = {c.model.n_classes for c in clients}
        if len(C) != 1:
            raise ValueError(f"all client models must have the same n_classes, got {sorted(C)}")
        self.clients, self.seed, self.eval_data = list(clients), seed, eval_data
        self.role_probs = np.asarray(self.cfg.role_probs, float)
        self.n_classes = C.pop()
        self.ledger = HashChainLedger()

    # -- one client's pieces --------------------------------------------------------------------
    def _temperatures(self, Z_g: torch.Tensor, Z_k: torch.Tensor, present: torch.Tensor, L: int) -> torch.Tensor:
        cfg = self.cfg
        T_c = category_temperature(Z_g, cfg.T0, cfg.a if cfg.category else 0.0, cfg.bounds)
        if not cfg.multi_level:
            return T_c[None]
        return elastic_temperature(Z_g, Z_k, T_c, cfg.eta if cfg.elastic else 0.0, cfg.bounds, present)[-L:]

    def _local_update(self, client: Client, opt: torch.optim.Optimizer, Z_g: torch.Tensor | None,
                      g_mask: torch.Tensor | None, Z_k: torch.Tensor, present: torch.Tensor, gen: torch.Generator):
        model, n = client.model, len(client.y)
        cfg = self.cfg
        T = None if Z_g is None or not cfg.distill else self._temperatures(Z_g, Z_k, present, model.n_exits)
        model.train()
        for _ in range(cfg.local_epochs):
            perm = torch.randperm(n, generator=gen).to(client.X.device)  # CPU generator: same order on any device
            for i in range(0, n, cfg.batch_size):
                idx = perm[i:i + cfg.batch_size]
                x, y = client.X[idx], client.y[idx]
                outs = model(x)
                loss = F.cross_entropy(outs[-1], y)  # Eq. 6: CE on the last exit ...
                if T is not None:  # ... + temperature-scaled distillation of every exit
                    loss = loss + cfg.kd_weight * _distillation_loss(outs, y, Z_g, T, mask=g_mask)
                opt.zero_grad()
                loss.backward()
                opt.step()

    def _upload(self, client: Client, Z_last: torch.Tensor, counts: torch.Tensor, gen: torch.Generator):
        if client.attack == "label_flip":
            return Z_last.flip(0), counts.flip(0)
        if client.attack == "model_poison":
            spread = Z_last[counts > 0].std() * client.attack_scale
            noise = torch.randn(Z_last.shape, generator=gen, dtype=Z_last.dtype)  # drawn on the CPU generator
            return noise.to(Z_last.device) * spread, counts
        return Z_last, counts

    @torch.no_grad()
    def _accuracy(self) -> list[float]:
        X, y = self.eval_data
        return [float((c.model(X)[-1].argmax(-1) == y).float().mean()) for c in self.clients]

    # -- the loop (Algorithm 1) -----------------------------------------------------------------
    def run(self) -> History:
        """Train for ``rounds`` rounds; returns the :class:`History`."""
        rng = np.random.default_rng([self.seed, 17])
        gen = torch.Generator().manual_seed(self.seed)
        K, C = len(self.clients), self.n_classes
        cfg = self.cfg
        opts = [torch.optim.Adam(c.model.parameters(), lr=cfg.lr) for c in self.clients]
        honest = [k for k, c in enumerate(self.clients) if c.attack is None]
        hist = History()
        Z_g = g_mask = None
        rejections, blacklist = np.zeros(K, int), set()
        knowledge = [class_mean_logits(c.model, (c.X, c.y), C) for c in self.clients]
        for t in range(cfg.rounds):
            roles = rng.choice(3, size=K, p=self.role_probs)
            for r in (1, 2):  # at least one validator and one miner
                if not np.any(roles == r):
                    roles[rng.choice(np.flatnonzero(roles == 0) if np.any(roles == 0) else K)] = r
            hist.roles.append([ROLES[r] for r in roles])
            # workers: download Z_g^{t-1}, local update (Eq. 6), compute the knowledge to upload
            uploads = []
            for k, c in enumerate(self.clients):
                Zk, cnt = knowledge[k]
                self._local_update(c, opts[k], Z_g, g_mask, Zk, cnt > 0, gen)
                knowledge[k] = class_mean_logits(c.model, (c.X, c.y), C)
                uploads.append(self._upload(c, knowledge[k][0][-1], knowledge[k][1], gen))
            hist.bytes_per_round.append(K * 4 * (C * C + C) if cfg.distill else 0)
            if not cfg.distill:
                hist.flagged.append([])
            else:
                # validators: Z-score guard; blacklisted clients are ignored
                if cfg.guard:
                    accepted, _ = zscore_guard([u[0] for u in uploads], cfg.guard_thresh, [u[1] for u in uploads])
                    rejections += ~accepted
                    blacklist |= set(np.flatnonzero(rejections >= cfg.blacklist_after).tolist())
                    accepted &= ~np.isin(np.arange(K), list(blacklist))
                else:
                    accepted = np.ones(K, bool)
                hist.flagged.append(np.flatnonzero(~accepted).tolist())
                # aggregation: count-weighted mean of accepted class logits
                Zs = torch.stack([u[0] for u, ok in zip(uploads, accepted) if ok])
                ns = torch.stack([u[1] for u, ok in zip(uploads, accepted) if ok])
                tot = ns.sum(0)
                Z_g = (ns[..., None] * Zs).sum(0) / tot.clamp_min(1)[:, None]
                g_mask = tot > 0
                # miner: write the block
                miner = int(np.flatnonzero(roles == 2)[0])
                self.ledger.append({"round": t, "miner": miner, "accepted": np.flatnonzero(accepted).tolist()},
                                   {"Z_g": Z_g.cpu().numpy(),
                                    **{f"Z_{k}": u[0].cpu().numpy() for k, u in enumerate(uploads)}})
            if self.eval_data is not None:
                accs = self._accuracy()
                hist.client_accuracy.append(accs)
                hist.accuracy.append(float(np.mean([accs[k] for k in honest])))
        hist.blacklist = sorted(blacklist)
        self.global_logits_ = Z_g
        return hist


def FDFixedT(clients: Sequence[Client], cfg: ReTFHDConfig | None = None, *, T: float = 1.0, seed: int = 0,
             eval_data: tuple[torch.Tensor, torch.Tensor] | None = None, **settings) -> ReTFHD:
    """Federated distillation baseline (Jeong et al., 2018): class-mean logits of the last exit, fixed T, no guard.

    It is :class:`ReTFHD` on ``cfg`` (with ``**settings``) with ``category=False, elastic=False,
    multi_level=False, guard=False, T0=T`` and the temperature bounds widened to hold T.
    """
    cfg = training_settings("FDFixedT", cfg, settings)
    fd = replace(cfg, guard=False, T0=T, bounds=(min(1.0, T), max(10.0, T)), category=False, elastic=False,
                 multi_level=False)
    return ReTFHD(clients, fd, seed=seed, eval_data=eval_data)


def LocalOnly(clients: Sequence[Client], cfg: ReTFHDConfig | None = None, *, seed: int = 0,
              eval_data: tuple[torch.Tensor, torch.Tensor] | None = None, **settings) -> ReTFHD:
    """Local training only (no communication), the lower baseline: :class:`ReTFHD` with ``distill=False``."""
    cfg = training_settings("LocalOnly", cfg, settings)
    return ReTFHD(clients, replace(cfg, guard=False, distill=False), seed=seed, eval_data=eval_data)


class FedAvg:
    """FedAvg (McMahan et al., 2017) for homogeneous clients: sample-size-weighted parameter averaging.

    Args: as :class:`ReTFHD` (``clients`` must share one architecture); of ``cfg`` it uses ``rounds``,
    ``local_epochs``, ``batch_size`` and ``lr``.
    """

    def __init__(self, clients: Sequence[Client], cfg: ReTFHDConfig | None = None, *, seed: int = 0,
                 eval_data: tuple[torch.Tensor, torch.Tensor] | None = None, **settings):
        shapes = {tuple((k, tuple(v.shape)) for k, v in c.model.state_dict().items()) for c in clients}
        if len(shapes) != 1:
            raise ValueError("FedAvg needs every client to have the same architecture")
        self.inner = LocalOnly(clients, cfg, seed=seed, eval_data=eval_data, **settings)
        self.clients = list(clients)

    @torch.no_grad()
    def aggregate(self) -> None:
        """Replace every client's parameters by the sample-size-weighted average."""
        states = [c.model.state_dict() for c in self.clients]
        ref = next(iter(states[0].values()))
        w = torch.tensor([float(len(c.y)) for c in self.clients], dtype=ref.dtype, device=ref.device)
        w = w / w.sum()
        avg = {k: sum(wi * s[k] for wi, s in zip(w, states)) for k in states[0]}
        for c in self.clients:
            c.model.load_state_dict(avg)

    def run(self) -> History:
        """Local epochs then averaging, each round; bytes are the parameters uploaded."""
        inner, hist = self.inner, History()
        gen = torch.Generator().manual_seed(inner.seed)
        opts = [torch.optim.Adam(c.model.parameters(), lr=inner.cfg.lr) for c in self.clients]
        self.aggregate()
        for _ in range(inner.cfg.rounds):
            for c, opt in zip(self.clients, opts):
                inner._local_update(c, opt, None, None, None, None, gen)
            self.aggregate()
            hist.bytes_per_round.append(4 * sum(n_parameters(c.model) for c in self.clients))
            if inner.eval_data is not None:
                accs = inner._accuracy()
                hist.client_accuracy.append(accs)
                hist.accuracy.append(float(np.mean(accs)))
        return hist
