"""Digits as RVQ token sequences, and the feature-space Frechet distance used as a stand-in for FID."""

from __future__ import annotations

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data


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
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"images must have shape (n, H, W), got {images.shape}")
    n, h, w = images.shape
    if not isinstance(patch, (int, np.integer)) or patch < 1 or h % patch or w % patch:
        raise ValueError(f"patch must be a positive int dividing H={h} and W={w}, got {patch!r}")
    g = images.reshape(n, h // patch, patch, w // patch, patch).transpose(0, 1, 3, 2, 4)
    return g.reshape(n, (h // patch) * (w // patch), patch * patch)


def patches_to_images(patches: np.ndarray, patch: int = 2, side: int = 8) -> np.ndarray:
    """Inverse of :func:`images_to_patches`: (n, L, p*p) -> (n, side, side)."""
    patches = np.asarray(patches)
    if not isinstance(patch, (int, np.integer)) or patch < 1 or side % patch:
        raise ValueError(f"patch must be a positive int dividing side={side}, got {patch!r}")
    if patches.ndim != 3 or patches.shape[1:] != ((side // patch) ** 2, patch * patch):
        raise ValueError(f"patches must have shape (n, {(side // patch) ** 2}, {patch * patch}), got {patches.shape}")
    n, g = patches.shape[0], side // patch
    x = patches.reshape(n, g, g, patch, patch).transpose(0, 1, 3, 2, 4)
    return x.reshape(n, side, side)


class DigitFeatures(TransformerMixin, BaseEstimator):
    """An MLP classifier fitted on real digits; its ReLU hidden layer gives the features of the Frechet distance.

    ``fit(X, y)`` trains ``MLPClassifier((hidden,))`` on a random ``1 - test_fraction`` of the rows (split by
    ``seed``) and scores it on the rest; ``transform(X)`` returns the hidden activations.

    Args:
        hidden: width of the hidden layer (the feature dimension).
        seed: seed of the split and of the MLP's initialisation.
        max_iter: MLP training epochs.
        test_fraction: held-out fraction of the rows, in (0, 1).

    Attributes (after :meth:`fit`):
        classifier_: the fitted ``MLPClassifier``; test_accuracy_: its accuracy on the held-out rows;
        n_iter_: the MLP's training epochs; n_features_in_: number of columns of X (pixels of a flattened
        image, 64 for 8x8 digits).
    """

    def __init__(self, hidden: int = 64, seed: int = 0, max_iter: int = 400, test_fraction: float = 0.2):
        self.hidden = hidden
        self.seed = seed
        self.max_iter = max_iter
        self.test_fraction = test_fraction

    def fit(self, X: np.ndarray, y: np.ndarray) -> "DigitFeatures":
        """Fit on ``X`` (n, n_pixels) flattened images with digit labels ``y`` (n,)."""
        from sklearn.neural_network import MLPClassifier

        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if not isinstance(self.hidden, (int, np.integer)) or self.hidden < 1:
            raise ValueError(f"hidden must be a positive int, got {self.hidden!r}")
        if not 0.0 < self.test_fraction < 1.0:
            raise ValueError(f"test_fraction must lie in (0, 1), got {self.test_fraction!r}")
        if len(X) < 2:
            raise ValueError(f"DigitFeatures needs at least 2 samples to hold out a test split, got {len(X)} sample")
        idx = np.random.default_rng(self.seed).permutation(len(X))
        cut = min(max(int((1.0 - self.test_fraction) * len(X)), 1), len(X) - 1)
        clf = MLPClassifier((self.hidden,), max_iter=self.max_iter, random_state=self.seed)
        self.classifier_ = clf.fit(X[idx[:cut]], y[idx[:cut]])
        self.test_accuracy_ = float(clf.score(X[idx[cut:]], y[idx[cut:]]))
        self.n_iter_ = clf.n_iter_
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """ReLU hidden activations of the classifier, (n, hidden), for (n, n_pixels) images."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return np.maximum(X @ self.classifier_.coefs_[0] + self.classifier_.intercepts_[0], 0.0)

    def features(self, images: np.ndarray) -> np.ndarray:
        """:meth:`transform` of images given as (n, n_pixels) or (n, H, W)."""
        images = np.asarray(images)
        return self.transform(images.reshape(len(images), -1) if images.ndim > 2 else images)

    def predict(self, images: np.ndarray) -> np.ndarray:
        """Predicted digit of each image, (n,), for (n, n_pixels) or (n, H, W) images."""
        check_is_fitted(self)
        images = np.asarray(images)
        X = validate_data(self, images.reshape(len(images), -1) if images.ndim > 2 else images, dtype=np.float64,
                          reset=False)
        return self.classifier_.predict(X)

    @property
    def classifier(self):
        """The fitted ``MLPClassifier`` (``classifier_``)."""
        check_is_fitted(self)
        return self.classifier_

    @property
    def test_accuracy(self) -> float:
        """Accuracy on the held-out rows (``test_accuracy_``)."""
        check_is_fitted(self)
        return self.test_accuracy_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to feature sets a (n, f) and b (m, f):
    ||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or len(a) < 2 or len(b) < 2:
        raise ValueError(f"need two (n>=2, f) feature arrays with equal f, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("features must be finite (they contain NaN or inf)")
    mu = a.mean(0) - b.mean(0)
    eye = 1e-6 * np.eye(a.shape[1])  # keeps sqrtm defined when a feature is constant (dead ReLU)
    sa, sb = np.cov(a, rowvar=False) + eye, np.cov(b, rowvar=False) + eye
    root = linalg.sqrtm(sa @ sb)
    if np.iscomplexobj(root):
        root = root.real
    return float(mu @ mu + np.trace(sa) + np.trace(sb) - 2 * np.trace(root))
