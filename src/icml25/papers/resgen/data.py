"""Digits as RVQ token sequences, and the feature-space Frechet distance used as a stand-in for FID."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg


def digits_patches(patch: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn digits scaled to [0, 1], cut into non-overlapping patch x patch pieces.

    Returns:
        patches (n, L, patch*patch) with L = (8 / patch)^2 in raster order, and labels (n,).
    """
    from sklearn.datasets import load_digits

    if patch not in (1, 2, 4, 8):
        raise ValueError(f"patch must divide 8 (1, 2, 4 or 8), got {patch!r}")
    d = load_digits()
    return images_to_patches(d.images / 16.0, patch), d.target.astype(np.int64)


def images_to_patches(images: np.ndarray, patch: int) -> np.ndarray:
    """(n, H, W) images -> (n, (H/p)(W/p), p*p) patch vectors in raster order."""
    n, h, w = images.shape
    g = images.reshape(n, h // patch, patch, w // patch, patch).transpose(0, 1, 3, 2, 4)
    return g.reshape(n, (h // patch) * (w // patch), patch * patch)


def patches_to_images(patches: np.ndarray, patch: int = 2, side: int = 8) -> np.ndarray:
    """Inverse of :func:`images_to_patches`: (n, L, p*p) -> (n, side, side)."""
    patches = np.asarray(patches)
    n, g = patches.shape[0], side // patch
    x = patches.reshape(n, g, g, patch, patch).transpose(0, 1, 3, 2, 4)
    return x.reshape(n, side, side)


@dataclass
class DigitFeatures:
    """An MLP classifier fitted on real digits; its hidden layer gives the features of the Frechet distance."""

    classifier: object
    test_accuracy: float

    @classmethod
    def fit(cls, images: np.ndarray, labels: np.ndarray, seed: int = 0, hidden: int = 64) -> "DigitFeatures":
        """Fit on a random 80% of (n, 64) flattened images; accuracy on the other 20%."""
        from sklearn.neural_network import MLPClassifier

        x = np.asarray(images, dtype=np.float64).reshape(len(images), -1)
        rng = np.random.default_rng(seed)
        idx = rng.permutation(len(x))
        cut = int(0.8 * len(x))
        clf = MLPClassifier((hidden,), max_iter=400, random_state=seed).fit(x[idx[:cut]], labels[idx[:cut]])
        return cls(clf, float(clf.score(x[idx[cut:]], labels[idx[cut:]])))

    def features(self, images: np.ndarray) -> np.ndarray:
        """ReLU hidden activations of the classifier, (n, hidden)."""
        x = np.asarray(images, dtype=np.float64).reshape(len(images), -1)
        return np.maximum(x @ self.classifier.coefs_[0] + self.classifier.intercepts_[0], 0.0)

    def predict(self, images: np.ndarray) -> np.ndarray:
        """Predicted digit of each image."""
        return self.classifier.predict(np.asarray(images, dtype=np.float64).reshape(len(images), -1))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to feature sets a (n, f) and b (m, f):
    ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or len(a) < 2 or len(b) < 2:
        raise ValueError(f"need two (n>=2, f) feature arrays with equal f, got {a.shape} and {b.shape}")
    mu = a.mean(0) - b.mean(0)
    eye = 1e-6 * np.eye(a.shape[1])  # keeps sqrtm defined when a feature is constant (dead ReLU)
    sa, sb = np.cov(a, rowvar=False) + eye, np.cov(b, rowvar=False) + eye
    root = linalg.sqrtm(sa @ sb)
    if np.iscomplexobj(root):
        root = root.real
    return float(mu @ mu + np.trace(sa) + np.trace(sb) - 2 * np.trace(root))
