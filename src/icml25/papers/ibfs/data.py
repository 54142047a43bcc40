"""Procedural "glyph" few-shot data: many classes of stroke drawings, no downloads.

Each class is a glyph made of 2-4 quadratic Bezier strokes on a 16x16 canvas; an
instance is the class glyph under a random affine jitter (rotation, scale, shear,
shift), rendered with a soft pen, plus pixel noise. Meta-train and meta-test
classes are disjoint, so a meta-test episode is a genuinely *new* task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml25.common.checks import check_ranges

_PTS_PER_STROKE = 12




class GlyphClasses:
    """A bank of procedural glyph classes.

    Args:
        n_classes: number of classes.
        size: canvas side in pixels.
        seed: seed of the class shapes.
        jitter: scale of the per-instance affine jitter (0 gives the prototype).
        noise: standard deviation of the additive pixel noise.
    """

    def __init__(self, n_classes: int, size: int = 16, seed: int = 0, jitter: float = 0.12, noise: float = 0.1):
        check_ranges("GlyphClasses", {"n_classes": n_classes}, integer=True, positive=True)
        check_ranges("GlyphClasses", {"size": size}, integer=True, positive=True)
        if not (jitter >= 0 and noise >= 0 and np.isfinite(jitter) and np.isfinite(noise)):
            raise ValueError(f"jitter and noise must be finite numbers >= 0, got jitter={jitter!r}, noise={noise!r}")
        rng = np.random.default_rng([seed, 101])
        self.n_classes, self.size, self.jitter, self.noise = int(n_classes), int(size), float(jitter), float(noise)
        ctrl = rng.uniform(-0.75, 0.75, size=(n_classes, 4, 3, 2))  # (class, stroke, control point, xy)
        n_strokes = rng.integers(2, 5, size=n_classes)
        for c in range(n_classes):  # unused strokes repeat stroke 0 (drawing it twice changes nothing)
            ctrl[c, n_strokes[c]:] = ctrl[c, 0]
        t = np.linspace(0, 1, _PTS_PER_STROKE)[:, None]
        p0, p1, p2 = ctrl[:, :, None, 0], ctrl[:, :, None, 1], ctrl[:, :, None, 2]
        pts = (1 - t) ** 2 * p0 + 2 * t * (1 - t) * p1 + t**2 * p2  # (class, stroke, pts, 2)
        self.points = pts.reshape(n_classes, -1, 2)
        g = (np.arange(size) + 0.5) / size * 2 - 1
        gx, gy = np.meshgrid(g, g)
        self._grid = np.stack([gx.ravel(), gy.ravel()], 1)  # (size*size, 2)

    def render(self, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Render one jittered, noisy instance of each class in ``classes``: (len, 1, size, size) float32."""
        classes = np.asarray(classes, dtype=int)
        if classes.size and (classes.min() < 0 or classes.max() >= self.n_classes):
            raise ValueError(f"class ids must lie in [0, {self.n_classes}), got {classes.min()}..{classes.max()}")
        m = classes.size
        ang = rng.normal(0, self.jitter * 2, m)
        scale = 1 + rng.normal(0, self.jitter, (m, 2))
        shear = rng.normal(0, self.jitter, m)
        cos, sin = np.cos(ang), np.sin(ang)
        A = np.stack([np.stack([cos, -sin + shear], -1), np.stack([sin, cos], -1)], 1) * scale[:, :, None]
        shift = rng.normal(0, self.jitter, (m, 1, 2))
        pts = np.einsum("mij,mpj->mpi", A, self.points[classes]) + shift  # (m, P, 2)
        d2 = ((self._grid[None, :, None, :] - pts[:, None, :, :]) ** 2).sum(-1)  # (m, pixels, P)
        pen = 1.5 / self.size
        img = np.exp(-d2.min(-1) / (2 * pen**2))
        img = img + rng.normal(0, self.noise, img.shape)
        return img.reshape(m, 1, self.size, self.size).astype(np.float32)


@dataclass
class EpisodeSampler:
    """N-way K-shot episodes drawn from a range of classes of a :class:`GlyphClasses` bank.

    ``sample(rng)`` returns ``(x_support, y_support, x_query, y_query)`` as torch
    tensors on ``device``; support is (n_way*k_shot, 1, s, s), labels are 0..n_way-1.
    """

    bank: GlyphClasses
    class_ids: np.ndarray
    n_way: int = 5
    k_shot: int = 1
    n_query: int = 15
    device: str = "cpu"
    """Where the episode tensors are put (rendering itself is NumPy)."""

    def __post_init__(self) -> None:
        for name in ("n_way", "k_shot", "n_query"):
            check_ranges("EpisodeSampler", {name: getattr(self, name)}, integer=True, positive=True)
        self.class_ids = np.asarray(self.class_ids, dtype=int)
        if self.n_way > self.class_ids.size:
            raise ValueError(f"n_way={self.n_way} exceeds the {self.class_ids.size} available classes")

    def sample(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Draw one episode."""
        chosen = rng.choice(self.class_ids, self.n_way, replace=False)
        ys = np.repeat(np.arange(self.n_way), self.k_shot)
        yq = np.repeat(np.arange(self.n_way), self.n_query)
        xs = self.bank.render(chosen[ys], rng)
        xq = self.bank.render(chosen[yq], rng)
        return tuple(torch.from_numpy(a).to(self.device) for a in (xs, ys, xq, yq))


def glyph_few_shot(n_train_classes: int = 400, n_test_classes: int = 100, n_way: int = 5, k_shot: int = 1,
                   n_query: int = 15, seed: int = 0, device: str = "cpu",
                   **bank_kw) -> tuple[EpisodeSampler, EpisodeSampler]:
    """Meta-train and meta-test episode samplers over disjoint glyph classes (episodes on ``device``)."""
    check_ranges("glyph_few_shot", {"n_train_classes": n_train_classes}, integer=True, positive=True)
    check_ranges("glyph_few_shot", {"n_test_classes": n_test_classes}, integer=True, positive=True)
    bank = GlyphClasses(n_train_classes + n_test_classes, seed=seed, **bank_kw)
    train = EpisodeSampler(bank, np.arange(n_train_classes), n_way, k_shot, n_query, device)
    test = EpisodeSampler(bank, np.arange(n_train_classes, n_train_classes + n_test_classes), n_way, k_shot, n_query,
                          device)
    return train, test
