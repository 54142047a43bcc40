"""IBFS (Kang, ICML 2025): rank few-shot architectures at initialisation by a Jacobian spectral entropy.

The paper's score (Eqs. 9-10, as read by second-hand notes; no public paper text or
code was found): for an unlabelled batch x_1..x_B, let s_i be the sum of the
network's outputs for sample i and J the B x P Jacobian of (s_1..s_B) with respect to
all trainable parameters at the current (initial) weights. With lambda_k the
eigenvalues of J J^T (zero ones dropped) and p_k = lambda_k / sum_j lambda_j,

    S(A) = -sum_k p_k log p_k          (natural log; higher is better),

see :func:`jacobian_entropy_score`. :class:`IBFSSearch` ranks by it by default.

Named baseline ``score="kernel_ib"`` (our earlier reconstruction from the abstract,
not the paper's score): the globally pooled output T_l of every stage, optionally after
one first-order MAML step, scored as

    s(A) = mean_episodes  (1/L) sum_l [ c(K_l, K_Y) - beta * c(K_l, K_X) ],

with Gaussian kernels K_l, K_X (median bandwidth), K_Y = Y Y^T on one-hot labels and
normalised HSIC (CKA) c(A, B) = tr(HAHB) / sqrt(tr(HAHA) tr(HBHB)), H = I - 11^T/n
(:func:`ib_expressivity`).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from icml25.common.checks import check_fields

OPS: tuple[str, ...] = ("conv3x3", "conv5x5", "dwsep3x3", "pool_conv1x1", "identity")
"""Candidate operations of one stage."""
WIDTHS: tuple[int, ...] = (8, 16, 24)
"""Candidate channel widths of one stage."""

Arch = tuple[tuple[str, int], ...]
"""An architecture: one (operation, width) pair per stage."""
SCORES: tuple[str, ...] = ("jacobian_entropy", "kernel_ib")
"""Scores :class:`IBFSSearch` can rank by: the paper's (default) and our kernel-IB baseline."""


class TaskSampler(Protocol):
    """Anything with ``n_way`` and ``sample(rng) -> (x_support, y_support, x_query, y_query)``."""

    n_way: int

    def sample(self, rng: np.random.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]: ...


# ----------------------------------------------------------------------------- kernels and CKA
def gaussian_kernel(T: Tensor, sigma: float | None = None) -> Tensor:
    """Gaussian kernel exp(-||t_i - t_j||^2 / (2 sigma^2)) of the rows of ``T`` (n, ...), flattened.

    ``sigma=None`` uses the median pairwise distance (1.0 if all rows coincide).
    """
    T = T.reshape(T.shape[0], -1).double()
    if T.shape[0] < 2:
        raise ValueError(f"need at least 2 rows to build a kernel, got {T.shape[0]}")
    d2 = torch.cdist(T, T).pow(2)
    if sigma is None:
        off = d2[~torch.eye(T.shape[0], dtype=torch.bool, device=T.device)]
        med = off.median().sqrt()
        sigma = float(med) if med > 0 else 1.0
    elif not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    return torch.exp(-d2 / (2 * sigma**2))


def linear_kernel(T: Tensor) -> Tensor:
    """Linear kernel T T^T of the flattened rows of ``T``."""
    T = T.reshape(T.shape[0], -1).double()
    return T @ T.T


def cka(K1: Tensor, K2: Tensor) -> float:
    """Normalised HSIC tr(H K1 H K2) / sqrt(tr(H K1 H K1) tr(H K2 H K2)); 0.0 if a kernel is constant."""
    if K1.ndim != 2 or K1.shape[0] != K1.shape[1] or K1.shape != K2.shape:
        raise ValueError(f"cka needs two square kernels of the same shape, got {tuple(K1.shape)}, {tuple(K2.shape)}")
    n = K1.shape[0]
    H = torch.eye(n, dtype=torch.float64, device=K1.device) - 1.0 / n
    A, B = H @ K1.double() @ H, H @ K2.double() @ H
    denom = torch.sqrt((A * A).sum() * (B * B).sum())
    return float((A * B).sum() / denom) if denom > 1e-12 else 0.0


# ----------------------------------------------------------------------------- the IB expressivity score
def _pooled_features(model: nn.Module, x: Tensor, layers: Sequence[str], params=None) -> list[Tensor]:
    """Outputs of the named submodules on ``x``, globally average-pooled to (n, channels)."""
    modules = dict(model.named_modules())
    missing = [name for name in layers if name not in modules]
    if missing:
        raise ValueError(f"unknown layer {missing[0]!r}; the model has {sorted(k for k in modules if k)[:8]}...")
    feats: dict[str, Tensor] = {}
    hooks = [modules[name].register_forward_hook(lambda m, i, o, name=name: feats.__setitem__(name, o))
             for name in layers]
    try:
        with torch.no_grad():
            functional_call(model, params, (x,)) if params is not None else model(x)
    finally:
        for h in hooks:
            h.remove()
    return [feats[n].mean(dim=(2, 3)) if feats[n].ndim == 4 else feats[n].reshape(x.shape[0], -1) for n in layers]


def first_order_step(model: nn.Module, x: Tensor, y: Tensor, inner_lr: float) -> dict[str, Tensor]:
    """theta_1 = theta_0 - inner_lr * grad L_S(theta_0), returned as a new parameter dict (model untouched)."""
    params = dict(model.named_parameters())
    loss = F.cross_entropy(functional_call(model, params, (x,)), y)
    grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    return {k: (p - inner_lr * g if g is not None else p).detach() for (k, p), g in zip(params.items(), grads)}


def ib_expressivity(model: nn.Module, x: Tensor, y: Tensor, *, beta: float = 0.5, adapt_steps: int = 0,
                    inner_lr: float = 0.01, layers: list[str] | None = None) -> float:
    """IB expressivity of ``model`` on one labelled support set (higher is better).

    Args:
        model: network mapping x to class logits (needed only when ``adapt_steps=1``).
        x: support inputs (n, ...), n >= 2.
        y: integer labels (n,).
        beta: weight of the compression term c(K_l, K_X); 0 gives pure label alignment.
        adapt_steps: 0 scores theta_0; 1 scores after one first-order inner step (FOMAML).
        inner_lr: step size of that inner step.
        layers: names of the submodules whose pooled outputs are T_l; default ``model.ib_layers``.

    Returns:
        (1/L) sum_l [c(K_l, K_Y) - beta c(K_l, K_X)] with Gaussian K_l, K_X and K_Y = Y Y^T.
    """
    if x.shape[0] != y.shape[0] or y.ndim != 1:
        raise ValueError(f"x and y must have the same number of rows and y must be 1-D, got {tuple(x.shape)}, "
                         f"{tuple(y.shape)}")
    if x.shape[0] < 2:
        raise ValueError(f"need at least 2 support examples, got {x.shape[0]}")
    if y.is_floating_point() or y.is_complex():
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    if bool((y < 0).any()):
        raise ValueError("y must hold non-negative class labels")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (found NaN or inf)")
    if not math.isfinite(beta):
        raise ValueError(f"beta must be a finite number, got {beta!r}")
    if adapt_steps not in (0, 1):
        raise ValueError(f"adapt_steps must be 0 or 1, got {adapt_steps!r}")
    layers = list(layers if layers is not None else getattr(model, "ib_layers", []))
    if not layers:
        raise ValueError("no layers to score: pass layers=[...] or give the model an `ib_layers` attribute")
    params = first_order_step(model, x, y, inner_lr) if adapt_steps == 1 else None
    Y = F.one_hot(y.long()).double()
    K_Y, K_X = linear_kernel(Y), gaussian_kernel(x)
    feats = _pooled_features(model, x, layers, params)
    return float(np.mean([cka(K := gaussian_kernel(T), K_Y) - beta * cka(K, K_X) for T in feats]))


# ----------------------------------------------------------------------------- the paper's score
def sample_output_jacobian(model: nn.Module, x: Tensor) -> Tensor:
    """The B x P Jacobian of (s_1..s_B), s_i = sum of the outputs for sample i, w.r.t. all trainable parameters.

    Computed at the current weights with one forward pass on the whole batch (so
    batch-norm statistics couple the samples exactly as in training) and one backward
    pass per sample; the model and its ``.grad`` fields are untouched.
    """
    if x.ndim < 2 or x.shape[0] < 1:
        raise ValueError(f"x must be a batch (B, ...) with B >= 1, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (found NaN or inf)")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    out = model(x)
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"the model must return one output row per sample, got {tuple(out.shape)} for B={x.shape[0]}")
    s = out.reshape(out.shape[0], -1).sum(1)
    rows = []
    for i in range(s.shape[0]):
        grads = torch.autograd.grad(s[i], params, retain_graph=i < s.shape[0] - 1, allow_unused=True)
        rows.append(torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1)
                               for p, g in zip(params, grads)]))
    return torch.stack(rows).detach()


def spectral_entropy(G: Tensor) -> float:
    """Shannon entropy (natural log) of the eigenvalues of the PSD matrix ``G`` normalised to sum to one.

    Eigenvalues at or below ``n * eps * lambda_max`` (numerical zeros, float64) are dropped;
    an all-zero matrix has no spectrum and scores 0.0.
    """
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"G must be a square matrix, got shape {tuple(G.shape)}")
    G = G.double()
    lam = torch.linalg.eigvalsh((G + G.T) / 2)
    top = float(lam.max()) if lam.numel() else 0.0
    if not top > 0:
        return 0.0
    lam = lam[lam > G.shape[0] * torch.finfo(torch.float64).eps * top]
    p = lam / lam.sum()
    return float(-(p * p.log()).sum())


def jacobian_entropy_score(model: nn.Module, x: Tensor) -> float:
    """IBFS score (Eqs. 9-10): entropy of the normalised eigenvalues of J J^T on the unlabelled batch ``x``.

    J is :func:`sample_output_jacobian` (B x P); the Gram J J^T is formed in float64. Higher is
    better; the value lies in [0, log rank(J)]. No labels and no training step are used.
    """
    J = sample_output_jacobian(model, x).double()
    return spectral_entropy(J @ J.T)


# ----------------------------------------------------------------------------- zero-cost baselines
def naswot_score(model: nn.Module, x: Tensor) -> float:
    """NASWOT (Mellor et al. 2021): log|det K_H|, K_H[i,j] = #ReLUs where i and j share the on/off pattern.

    A model without ``nn.ReLU`` modules has no activation codes (K_H = 0) and scores ``-inf``.
    """
    codes: list[Tensor] = []
    hooks = [m.register_forward_hook(lambda m, i, o: codes.append((o > 0).reshape(o.shape[0], -1).double()))
             for m in model.modules() if isinstance(m, nn.ReLU)]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    if not codes:
        return float("-inf")
    C = torch.cat(codes, 1)
    K = C @ C.T + (1 - C) @ (1 - C).T
    return float(torch.linalg.slogdet(K)[1])


def _without_batchnorm(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model)
    for parent in clone.modules():
        for name, child in parent.named_children():
            if isinstance(child, nn.modules.batchnorm._BatchNorm):
                setattr(parent, name, nn.Identity())
    return clone


def synflow_score(model: nn.Module, input_shape: Sequence[int]) -> float:
    """SynFlow (Tanaka et al. 2020, as a proxy in Abdelfattah et al. 2021): sum |theta * dR/dtheta|.

    R = sum of the output of the network with |theta| on an all-ones input, in float64,
    batch-norm removed; computed on a copy, the model is untouched.
    """
    input_shape = tuple(input_shape)
    if not input_shape or any(int(d) != d or d < 1 for d in input_shape):
        raise ValueError(f"input_shape must be a non-empty tuple of positive sizes, got {input_shape!r}")
    net = _without_batchnorm(model).double()
    params = {k: p.detach().abs().requires_grad_(True) for k, p in net.named_parameters()}
    device = next(iter(params.values())).device if params else torch.device("cpu")
    out = functional_call(net, params, (torch.ones(1, *input_shape, dtype=torch.float64, device=device),))
    grads = torch.autograd.grad(out.sum(), list(params.values()), allow_unused=True)
    return float(sum(float((p.detach() * g).abs().sum()) for p, g in zip(params.values(), grads) if g is not None))


def grad_norm_score(model: nn.Module, x: Tensor, y: Tensor) -> float:
    """grad-norm (Abdelfattah et al. 2021): sum over parameter tensors of ||dL_CE/dtheta||_2."""
    params = dict(model.named_parameters())
    loss = F.cross_entropy(functional_call(model, params, (x,)), y)
    grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    return float(sum(g.norm() for g in grads if g is not None))


def param_count(model: nn.Module) -> float:
    """Number of trainable parameters."""
    return float(sum(p.numel() for p in model.parameters() if p.requires_grad))


# ----------------------------------------------------------------------------- search space
class _Pad(nn.Module):
    """Parameter-free identity that zero-pads or truncates channels to ``c_out``."""

    def __init__(self, c_out: int):
        super().__init__()
        self.c_out = c_out

    def forward(self, x: Tensor) -> Tensor:
        c = x.shape[1]
        return x[:, : self.c_out] if c >= self.c_out else F.pad(x, (0, 0, 0, 0, 0, self.c_out - c))


def _op(name: str, c_in: int, c_out: int) -> nn.Module:
    if name == "identity":
        return _Pad(c_out)
    if name == "conv3x3":
        core = nn.Conv2d(c_in, c_out, 3, padding=1)
    elif name == "conv5x5":
        core = nn.Conv2d(c_in, c_out, 5, padding=2)
    elif name == "dwsep3x3":
        core = nn.Sequential(nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in), nn.Conv2d(c_in, c_out, 1))
    elif name == "pool_conv1x1":
        core = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(c_in, c_out, 1))
    else:
        raise ValueError(f"unknown operation {name!r}; choose from {OPS}")
    return nn.Sequential(core, nn.BatchNorm2d(c_out, track_running_stats=False), nn.ReLU())


class StageNet(nn.Module):
    """A chain of stages (op + BN + ReLU), 2x max-pooling after all but the last, GAP and a linear head.

    ``ib_layers`` names the stage outputs that :func:`ib_expressivity` scores.
    """

    def __init__(self, arch: Arch, n_way: int, in_channels: int = 1):
        super().__init__()
        if not arch:
            raise ValueError("arch must have at least one (operation, width) stage")
        for name, value in (("n_way", n_way), ("in_channels", in_channels), *((f"width of stage {i}", w)
                                                                                for i, (_, w) in enumerate(arch))):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        stages, c = [], in_channels
        for i, (op, width) in enumerate(arch):
            stages.append(nn.Sequential(_op(op, c, width), nn.MaxPool2d(2) if i < len(arch) - 1 else nn.Identity()))
            c = width
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(c, n_way)
        self.ib_layers = [f"stages.{i}" for i in range(len(arch))]

    def features(self, x: Tensor) -> Tensor:
        """The globally pooled output of the last stage (the embedding the head reads)."""
        return self.stages(x).mean(dim=(2, 3))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class SearchSpace:
    """Chain-structured space: ``n_stages`` stages, each an op from ``ops`` with a width from ``widths``."""

    def __init__(self, n_stages: int = 4, ops: Sequence[str] = OPS, widths: Sequence[int] = WIDTHS,
                 in_channels: int = 1):
        if n_stages < 1:
            raise ValueError(f"n_stages must be >= 1, got {n_stages!r}")
        bad = [o for o in ops if o not in OPS]
        if bad or not ops:
            raise ValueError(f"unknown operation {bad[0] if bad else None!r}; choose from {OPS}")
        if not widths or any(int(w) < 1 for w in widths):
            raise ValueError(f"widths must be positive integers, got {widths!r}")
        self.n_stages, self.ops, self.widths, self.in_channels = n_stages, tuple(ops), tuple(widths), in_channels

    @property
    def size(self) -> int:
        """Number of architectures in the space."""
        return (len(self.ops) * len(self.widths)) ** self.n_stages

    def enumerate(self):
        """Iterate over every architecture (beware: ``size`` can be large)."""
        choices = list(itertools.product(self.ops, self.widths))
        return itertools.product(choices, repeat=self.n_stages)

    def sample(self, n: int, rng: np.random.Generator) -> list[Arch]:
        """``n`` distinct architectures drawn uniformly without replacement."""
        if not 1 <= n <= self.size:
            raise ValueError(f"n must be in [1, {self.size}], got {n!r}")
        seen: dict[Arch, None] = {}
        while len(seen) < n:
            seen[tuple((self.ops[rng.integers(len(self.ops))], self.widths[rng.integers(len(self.widths))])
                       for _ in range(self.n_stages))] = None
        return list(seen)

    def build(self, arch: Arch, n_way: int) -> StageNet:
        """The torch model of ``arch`` with an ``n_way`` linear head."""
        if len(arch) != self.n_stages:
            raise ValueError(f"arch must have {self.n_stages} stages, got {len(arch)}")
        return StageNet(arch, n_way, self.in_channels)


# ----------------------------------------------------------------------------- the search
@dataclass(frozen=True)
class IBFSConfig:
    """The training-free search's settings: what of the new task :class:`IBFSSearch` sees (``n_episodes`` support
    batches of ``shots`` images per class) to score each candidate by the Jacobian spectral entropy (Eqs. 9-10).

    The defaults are the reproduction's quick settings (ours: the paper's batch size was not found).
    """

    n_episodes: int = 3
    """Support batches of the new task the score is averaged over (:class:`IBFSSearch`'s ``n_episodes``)."""
    shots: int = 5
    """Images per class in each scored batch (the scored episodes' ``k_shot``; only the images are used)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("n_episodes", "shots"), positive=("n_episodes", "shots"))
        # bounds: a job beyond these would need > ~100 GB or days (a B x B Jacobian Gram per batch)
        check_fields(self, at_most={"n_episodes": 10**4, "shots": 10**4})


class IBFSSearch:
    """Rank architectures of ``space`` at initialisation on a few batches of the new task, no training.

    ``score="jacobian_entropy"`` (default, the paper's score) scores each candidate by
    :func:`jacobian_entropy_score` on the unlabelled support images of each episode;
    ``score="kernel_ib"`` is our earlier kernel-IB reconstruction (:func:`ib_expressivity`,
    uses ``beta``, ``adapt_steps`` and ``inner_lr``; a baseline, not the paper's). Every
    candidate is initialised from the same seed and scored on the same ``n_episodes``
    batches; the score is the mean over episodes.
    """

    def __init__(self, space: SearchSpace, beta: float = 0.5, n_episodes: int = 3, adapt_steps: int = 0,
                 seed: int = 0, inner_lr: float = 0.01, n_candidates: int | None = None, *,
                 score: str = "jacobian_entropy"):
        if n_episodes < 1:
            raise ValueError(f"n_episodes must be >= 1, got {n_episodes!r}")
        if adapt_steps not in (0, 1):
            raise ValueError(f"adapt_steps must be 0 or 1, got {adapt_steps!r}")
        if not math.isfinite(beta):
            raise ValueError(f"beta must be a finite number, got {beta!r}")
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        if score == "jacobian_entropy" and adapt_steps != 0:
            raise ValueError("adapt_steps=1 applies to score='kernel_ib' only; the paper's score uses the initial "
                             "weights")
        self.space, self.beta, self.n_episodes, self.adapt_steps = space, beta, n_episodes, adapt_steps
        self.seed, self.inner_lr, self.n_candidates, self.score_name = seed, inner_lr, n_candidates, score

    def episodes(self, task_sampler: TaskSampler) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The search's ``n_episodes`` (support images, labels) batches of the task, drawn from the search's seed:
        every call gives the same batches, so scores of different architectures (and of searches sharing a seed)
        see the same data."""
        rng = np.random.default_rng([self.seed, 3])
        return [task_sampler.sample(rng)[:2] for _ in range(self.n_episodes)]

    def score(self, arch: Arch, task_sampler: TaskSampler, episodes=None) -> float:
        """The search's score of one architecture, averaged over the search's episodes (on their device)."""
        episodes = episodes if episodes is not None else self.episodes(task_sampler)
        torch.manual_seed(self.seed)
        model = self.space.build(arch, task_sampler.n_way).to(episodes[0][0].device)
        if self.score_name == "jacobian_entropy":
            return float(np.mean([jacobian_entropy_score(model, xs) for xs, _ in episodes]))
        return float(np.mean([ib_expressivity(model, xs, ys, beta=self.beta, adapt_steps=self.adapt_steps,
                                              inner_lr=self.inner_lr) for xs, ys in episodes]))

    def rank(self, task_sampler: TaskSampler, archs: Sequence[Arch] | None = None) -> list[tuple[Arch, float]]:
        """(arch, score) pairs, best first; ``archs`` defaults to ``n_candidates`` samples (or the whole space)."""
        if archs is None:
            rng = np.random.default_rng([self.seed, 5])
            archs = (self.space.sample(self.n_candidates, rng) if self.n_candidates
                     else list(self.space.enumerate()))
        episodes = self.episodes(task_sampler)
        scored = [(tuple(a), self.score(tuple(a), task_sampler, episodes)) for a in archs]
        return sorted(scored, key=lambda t: -t[1])

    def select(self, task_sampler: TaskSampler, archs: Sequence[Arch] | None = None) -> Arch:
        """The top-ranked architecture."""
        return self.rank(task_sampler, archs)[0][0]


# ----------------------------------------------------------------------------- ground truth: FOMAML
def _adapt(model: nn.Module, params: dict[str, Tensor], x: Tensor, y: Tensor, steps: int, lr: float):
    """``steps`` first-order SGD steps on (x, y) from ``params``; returns detached adapted params."""
    fast = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    for _ in range(steps):
        loss = F.cross_entropy(functional_call(model, fast, (x,)), y)
        grads = torch.autograd.grad(loss, list(fast.values()))
        fast = {k: (v - lr * g).detach().requires_grad_(True) for (k, v), g in zip(fast.items(), grads)}
    return fast


def fomaml_evaluate(model: nn.Module, task_sampler: TaskSampler, episodes: int = 100, inner_steps: int = 5,
                    inner_lr: float = 0.01, seed: int = 0) -> float:
    """Mean query accuracy after ``inner_steps`` SGD steps on each episode's support set."""
    if int(episodes) != episodes or episodes < 1 or inner_steps < 0:
        raise ValueError(f"need episodes >= 1 and inner_steps >= 0; got {episodes}, {inner_steps}")
    rng = np.random.default_rng([seed, 17])
    params = {k: v.detach() for k, v in model.named_parameters()}
    correct = total = 0
    for _ in range(episodes):
        xs, ys, xq, yq = task_sampler.sample(rng)
        fast = _adapt(model, params, xs, ys, inner_steps, inner_lr)
        with torch.no_grad():
            correct += int((functional_call(model, fast, (xq,)).argmax(1) == yq).sum())
        total += yq.numel()
    return correct / total


def fomaml_train(model: nn.Module, task_sampler: TaskSampler, iters: int, inner_steps: int = 5,
                 inner_lr: float = 0.01, outer_lr: float = 1e-3, *, meta_batch: int = 4,
                 test_sampler: TaskSampler | None = None, test_episodes: int = 100, seed: int = 0) -> float:
    """First-order MAML (Finn et al. 2017; FO variant): meta-train ``model`` in place, return test accuracy.

    Each iteration adapts on ``meta_batch`` support sets with ``inner_steps`` SGD
    steps, and applies Adam with the mean query-loss gradient taken at the adapted
    weights. Accuracy is measured on ``test_sampler`` (default: ``task_sampler``).
    """
    if iters < 0 or inner_steps < 0 or meta_batch < 1:
        raise ValueError(f"need iters >= 0, inner_steps >= 0, meta_batch >= 1; got {iters}, {inner_steps}, "
                         f"{meta_batch}")
    rng = np.random.default_rng([seed, 13])
    opt = torch.optim.Adam(model.parameters(), lr=outer_lr)
    names = [k for k, _ in model.named_parameters()]
    for _ in range(iters):
        meta_grad = [torch.zeros_like(p) for p in model.parameters()]
        for _ in range(meta_batch):
            xs, ys, xq, yq = task_sampler.sample(rng)
            fast = _adapt(model, dict(model.named_parameters()), xs, ys, inner_steps, inner_lr)
            loss = F.cross_entropy(functional_call(model, fast, (xq,)), yq)
            for acc, g in zip(meta_grad, torch.autograd.grad(loss, [fast[k] for k in names])):
                acc += g / meta_batch
        for p, g in zip(model.parameters(), meta_grad):
            p.grad = g
        opt.step()
    return fomaml_evaluate(model, test_sampler or task_sampler, test_episodes, inner_steps, inner_lr, seed)


# ----------------------------------------------------------------------------- ground truth: RFS-style
def _embed(model: nn.Module, x: Tensor) -> np.ndarray:
    with torch.no_grad():
        f = model.features(x) if hasattr(model, "features") else model(x)
    f = f.reshape(f.shape[0], -1).double()
    return F.normalize(f, dim=1).cpu().numpy()


def rfs_evaluate(model: nn.Module, task_sampler: TaskSampler, episodes: int = 100, seed: int = 0) -> float:
    """RFS test protocol (Tian et al. 2020): frozen embedding, L2-normalised, a logistic regression fitted on
    each episode's support set; mean query accuracy. The model needs ``features(x)`` (else its output is used)."""
    from sklearn.linear_model import LogisticRegression

    if int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    rng = np.random.default_rng([seed, 19])
    was_training = model.training
    model.eval()
    correct = total = 0
    try:
        for _ in range(int(episodes)):
            xs, ys, xq, yq = task_sampler.sample(rng)
            clf = LogisticRegression(max_iter=1000).fit(_embed(model, xs), ys.cpu().numpy())
            correct += int((clf.predict(_embed(model, xq)) == yq.cpu().numpy()).sum())
            total += yq.numel()
    finally:
        model.train(was_training)
    return correct / total


def rfs_train(model: nn.Module, task_sampler: TaskSampler, steps: int, *, batch_size: int = 64, lr: float = 0.05,
              momentum: float = 0.9, weight_decay: float = 5e-4, test_sampler: TaskSampler | None = None,
              test_episodes: int = 100, seed: int = 0) -> float:
    """RFS-style supervised pre-training (the paper's downstream protocol), then :func:`rfs_evaluate`.

    Trains ``model`` in place as one classifier over all base classes of ``task_sampler``
    (an :class:`~icml25.papers.ibfs.data.EpisodeSampler`; its ``bank`` renders images,
    label = index in ``class_ids``, so the model's head must have ``len(class_ids)`` outputs)
    with cross-entropy, SGD (momentum, weight decay) and a cosine learning-rate schedule,
    then returns the few-shot accuracy on ``test_sampler`` (default: ``task_sampler``).
    """
    if int(steps) != steps or steps < 0 or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"need integer steps >= 0 and batch_size >= 1; got {steps!r}, {batch_size!r}")
    if not (lr > 0 and math.isfinite(lr)) or not 0 <= momentum < 1 or not weight_decay >= 0:
        raise ValueError(f"need lr > 0, 0 <= momentum < 1, weight_decay >= 0; got {lr!r}, {momentum!r}, "
                         f"{weight_decay!r}")
    if not (hasattr(task_sampler, "bank") and hasattr(task_sampler, "class_ids")):
        raise ValueError("rfs_train needs a sampler with `bank` and `class_ids` (an EpisodeSampler)")
    class_ids = np.asarray(task_sampler.class_ids)
    rng = np.random.default_rng([seed, 23])
    device = next(model.parameters()).device
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(int(steps), 1))
    model.train()
    for _ in range(int(steps)):
        labels = rng.integers(len(class_ids), size=int(batch_size))
        x = torch.from_numpy(task_sampler.bank.render(class_ids[labels], rng)).to(device)
        loss = F.cross_entropy(model(x), torch.from_numpy(labels).to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return rfs_evaluate(model, test_sampler or task_sampler, test_episodes, seed)
