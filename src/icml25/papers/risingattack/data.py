"""Data and small classifiers for the RisingAttacK reproduction (nothing is downloaded).

* :func:`template_dataset`: a synthetic C-class image task; class c is a smooth random
  template, an image is its template shifted by up to one pixel, with random contrast and
  pixel noise. With C = 100 it gives the many-class setting that ordered top-K attacks need.
* :func:`digits_dataset`: scikit-learn's bundled 8x8 digits (10 classes).
* :class:`MLP` and :class:`SmallCNN` expose ``features`` (penultimate layer) and a linear
  ``head``, the structure QuadAttacK needs.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.ndimage import gaussian_filter
from torch import Tensor, nn


def template_dataset(n_classes: int = 100, size: int = 16, n_per_class: int = 60, noise: float = 0.08,
                     smooth: float = 1.5, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Synthetic template images in [0, 1].

    Args:
        n_classes: C.
        size: images are (1, size, size).
        n_per_class: images per class.
        noise: std of the i.i.d. pixel noise.
        smooth: std (pixels) of the Gaussian filter that makes the templates smooth.
        seed: seed of the templates and of the samples.

    Returns:
        X (N, 1, size, size) float32 and y (N,) long, classes interleaved.
    """
    if n_classes < 2 or size < 4 or n_per_class < 1 or noise < 0 or smooth <= 0:
        raise ValueError(f"invalid template settings: n_classes={n_classes}, size={size}, "
                         f"n_per_class={n_per_class}, noise={noise}, smooth={smooth}")
    rng = np.random.default_rng([seed, 101])
    tpl = gaussian_filter(rng.standard_normal((n_classes, size, size)), sigma=(0, smooth, smooth), mode="wrap")
    tpl = (tpl - tpl.mean(axis=(1, 2), keepdims=True)) / tpl.std(axis=(1, 2), keepdims=True)
    y = np.tile(np.arange(n_classes), n_per_class)
    n = y.size
    shifts = rng.integers(-1, 2, size=(n, 2))
    imgs = tpl[y]
    for dy in (-1, 0, 1):  # vectorised per shift value: roll each group once
        for dx in (-1, 0, 1):
            sel = (shifts[:, 0] == dy) & (shifts[:, 1] == dx)
            imgs[sel] = np.roll(imgs[sel], (dy, dx), axis=(1, 2))
    contrast = rng.uniform(0.12, 0.2, size=(n, 1, 1))
    x = 0.5 + contrast * imgs + noise * rng.standard_normal(imgs.shape)
    x = np.clip(x, 0.0, 1.0).astype(np.float32)
    return torch.from_numpy(x[:, None]), torch.from_numpy(y).long()


def digits_dataset() -> tuple[Tensor, Tensor]:
    """scikit-learn's digits as (1797, 1, 8, 8) float32 in [0, 1] and labels (1797,)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return torch.from_numpy((d.images / 16.0).astype(np.float32)[:, None]), torch.from_numpy(d.target).long()


def _check_sizes(name: str, **sizes: object) -> None:
    for key, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: {key} must be a positive integer, got {value!r}")


def _check_model_input(x: Tensor, in_shape: tuple[int, ...]) -> None:
    if x.shape[1:] != in_shape:
        raise ValueError(f"x must have shape (B, {', '.join(map(str, in_shape))}), got {tuple(x.shape)}")


class MLP(nn.Module):
    """Two hidden ReLU layers; ``features`` is the second hidden layer, ``head`` the linear classifier.

    Args:
        in_shape: shape of one input, e.g. (1, 8, 8); flattened first.
        n_classes: C >= 2.
        hidden: width of both hidden layers.
    """

    def __init__(self, in_shape: tuple[int, ...], n_classes: int, hidden: int = 128) -> None:
        super().__init__()
        in_shape = tuple(in_shape)
        if not in_shape:
            raise ValueError("MLP: in_shape must have at least one axis")
        _check_sizes("MLP", hidden=hidden, **{f"in_shape[{i}]": v for i, v in enumerate(in_shape)})
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            raise ValueError(f"MLP: n_classes must be an integer >= 2, got {n_classes!r}")
        self.in_shape = in_shape
        n_in = int(np.prod(in_shape))
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                  nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)

    def features(self, x: Tensor) -> Tensor:
        """Penultimate-layer features (B, hidden) of x (B, *in_shape)."""
        _check_model_input(x, self.in_shape)
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class SmallCNN(nn.Module):
    """conv(width)-pool-conv(2 width)-pool-fc(feat_dim)-ReLU, then a linear ``head``.

    Args:
        in_shape: (channels, height, width) of one image; height and width >= 4 (two 2x poolings).
        n_classes: C >= 2.
        width: channels of the first conv layer. feat_dim: penultimate feature dimension.
    """

    def __init__(self, in_shape: tuple[int, int, int], n_classes: int, width: int = 16, feat_dim: int = 128) -> None:
        super().__init__()
        in_shape = tuple(in_shape)
        if len(in_shape) != 3:
            raise ValueError(f"SmallCNN: in_shape must be (channels, height, width), got {in_shape}")
        _check_sizes("SmallCNN", channels=in_shape[0], width=width, feat_dim=feat_dim)
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            raise ValueError(f"SmallCNN: n_classes must be an integer >= 2, got {n_classes!r}")
        if not all(isinstance(v, (int, np.integer)) and v >= 4 for v in in_shape[1:]):
            raise ValueError(f"SmallCNN: image height and width must be integers >= 4, got {in_shape[1:]}")
        self.in_shape = in_shape
        ch, h, w = in_shape
        self.body = nn.Sequential(
            nn.Conv2d(ch, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * width * (h // 4) * (w // 4), feat_dim), nn.ReLU())
        self.head = nn.Linear(feat_dim, n_classes)

    def features(self, x: Tensor) -> Tensor:
        """Penultimate-layer features (B, feat_dim) of x (B, *in_shape)."""
        _check_model_input(x, self.in_shape)
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


def train_classifier(model: nn.Module, X: Tensor, y: Tensor, epochs: int = 10, lr: float = 3e-3,
                     batch_size: int = 128, seed: int = 0) -> nn.Module:
    """Adam + cross-entropy for ``epochs`` passes; returns the model in eval mode.

    Mini-batches are drawn from a CPU generator seeded with ``seed`` (the same order on any
    device); the model and ``X``, ``y`` must live on one device.

    Raises:
        ValueError: ``epochs`` < 0, ``batch_size`` < 1, ``lr`` <= 0, or ``X`` and ``y`` of different lengths.
        TypeError: non-integer labels.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"epochs must be an integer >= 0, got {epochs!r}")
    _check_sizes("train_classifier", batch_size=batch_size)
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if y.is_floating_point() or y.dtype == torch.bool:
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    if X.shape[0] != y.shape[0] or y.ndim != 1:
        raise ValueError(f"X and y must have one row per sample, got shapes {tuple(X.shape)} and {tuple(y.shape)}")
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(X.shape[0], generator=g).to(X.device)
        for i in range(0, X.shape[0], batch_size):
            idx = perm[i:i + batch_size]
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def attack_set(model: nn.Module, X: Tensor, y: Tensor, n_images: int, n_classes: int, max_k: int,
               seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """The first ``n_images`` correctly classified images and, per image, ``max_k`` random distinct
    target classes excluding the true label (the targets for K are the first K of them, so all
    methods and all K share them).

    Returns:
        x (n, ...), y (n,), targets (n, max_k).
    """
    if not 1 <= max_k <= n_classes - 1:
        raise ValueError(f"max_k must be in [1, C - 1 = {n_classes - 1}], got {max_k}")
    _check_sizes("attack_set", n_images=n_images)
    if y.is_floating_point() or y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be (N,) integer labels for X of {X.shape[0]} rows, got {y.dtype} {tuple(y.shape)}")
    if y.numel() and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes - 1}], got range [{int(y.min())}, {int(y.max())}]")
    with torch.no_grad():
        ok = model(X).argmax(1) == y
    idx = ok.nonzero().squeeze(1)[:n_images]
    if idx.numel() < n_images:
        raise ValueError(f"only {idx.numel()} correctly classified images, {n_images} asked")
    g = torch.Generator().manual_seed(seed)
    keys = torch.rand(idx.numel(), n_classes, generator=g)
    keys[torch.arange(idx.numel()), y[idx].cpu()] = 2.0    # the true label sorts last (keys live on the CPU)
    targets = keys.argsort(dim=1)[:, :max_k]
    return X[idx], y[idx], targets
