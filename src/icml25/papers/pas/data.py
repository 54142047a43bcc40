"""Data for PAS: the paper's Gaussian synthetic model, a study on scikit-learn's digits, and loaders for the
prediction files of the paper's real-data studies (Galaxy Zoo, Amazon Food Reviews) from a user's path."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CompoundMeanData:
    """m problems in the input convention of the PAS estimators.

    Attributes:
        y_labelled, pred_labelled, pred_unlabelled: lists of m 1-D arrays.
        theta: the true mean of each problem, shape (m,).
        known_moments: the true ``(var_y, cov_yf, var_f)`` of each problem when the
            generating model gives them in closed form, else ``None``.
    """

    y_labelled: list[np.ndarray]
    pred_labelled: list[np.ndarray]
    pred_unlabelled: list[np.ndarray]
    theta: np.ndarray
    known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def arrays(self) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        return self.y_labelled, self.pred_labelled, self.pred_unlabelled


def gaussian_synthetic(m: int = 100, n: int = 20, N: int = 80, good_predictor: bool = True, seed: int = 0,
                       sigma_x: float = 0.1, noise_var: float = 0.05) -> CompoundMeanData:
    """The paper's Gaussian synthetic model (Section 6.1; official ``synthetic_model.py``).

    For each problem j: ``mu_j ~ U(-1, 1)``, ``X ~ N(mu_j, sigma_x^2)`` and
    ``Y = mu_j^2 + 2 mu_j (X - mu_j) + eps`` with ``Var eps = noise_var``, so
    ``theta_j = E[Y_j] = mu_j^2``. The good predictor is ``f(x) = x^2`` (close to the
    regression function), the bad one ``f(x) = |x|``.

    Args:
        m: number of problems.
        n: labelled points per problem (>= 2).
        N: unlabelled points per problem (>= 1).
        good_predictor: use ``f(x) = x^2`` (True) or ``f(x) = |x|`` (False).
        seed: seed of the generator.
        sigma_x: standard deviation of X around mu_j.
        noise_var: variance of the noise eps.

    Returns:
        CompoundMeanData with ``theta = mu^2`` and the closed-form true moments
        (see :func:`gaussian_true_moments`).
    """
    if m < 1 or n < 2 or N < 1:
        raise ValueError(f"need m >= 1, n >= 2 and N >= 1, got m={m}, n={n}, N={N}")
    # written as "not (lo < x < inf)" so that NaN (all comparisons False) and +-inf are rejected too
    if not (0 < sigma_x < np.inf):
        raise ValueError(f"sigma_x must be finite and > 0, got {sigma_x!r}")
    if not (0 <= noise_var < np.inf):
        raise ValueError(f"noise_var must be finite and >= 0, got {noise_var!r}")
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-1.0, 1.0, size=m)
    x = mu[:, None] + sigma_x * rng.standard_normal((m, n + N))
    y = mu[:, None] ** 2 + 2 * mu[:, None] * (x - mu[:, None]) + np.sqrt(noise_var) * rng.standard_normal((m, n + N))
    f = x**2 if good_predictor else np.abs(x)
    moments = gaussian_true_moments(mu, good_predictor, sigma_x, noise_var)
    return CompoundMeanData(list(y[:, :n]), list(f[:, :n]), list(f[:, n:]), mu**2, moments)


def gaussian_true_moments(mu: np.ndarray, good_predictor: bool = True, sigma_x: float = 0.1,
                          noise_var: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed-form (Var Y, Cov(Y, f(X)), Var f(X)) of the synthetic model, per problem.

    With X ~ N(mu, s^2) and Y = mu^2 + 2 mu (X - mu) + eps: Var Y = 4 mu^2 s^2 + noise_var
    and Cov(Y, f) = 2 mu Cov(X, f(X)).
    Good predictor f = x^2: Var f = 4 mu^2 s^2 + 2 s^4, Cov(X, X^2) = 2 mu s^2.
    Bad predictor f = |x| (folded normal), with a = mu/s:
    E|X| = s sqrt(2/pi) exp(-a^2/2) + mu (1 - 2 Phi(-a)),
    E[X|X|] = (mu^2 + s^2)(2 Phi(a) - 1) + 2 mu s phi(a), Var|X| = mu^2 + s^2 - (E|X|)^2.
    (The official code estimates these moments by Monte Carlo.)
    """
    from scipy.stats import norm

    mu = np.asarray(mu, dtype=float)
    s2 = sigma_x**2
    var_y = 4 * mu**2 * s2 + noise_var
    if good_predictor:
        return var_y, 2 * mu * (2 * mu * s2), 4 * mu**2 * s2 + 2 * s2**2
    a = mu / sigma_x
    e_abs = sigma_x * np.sqrt(2 / np.pi) * np.exp(-(a**2) / 2) + mu * (1 - 2 * norm.cdf(-a))
    e_x_abs = (mu**2 + s2) * (2 * norm.cdf(a) - 1) + 2 * mu * sigma_x * norm.pdf(a)
    return var_y, 2 * mu * (e_x_abs - mu * e_abs), mu**2 + s2 - e_abs**2


@dataclass(frozen=True)
class PredictionProblems:
    """m problems, each a set of points with an outcome and a prediction (before any labelled split).

    Attributes:
        y: outcomes, one array per problem.
        pred: predictions of the same points, one array per problem.
        theta: mean of y over each problem's points.
        ids: the problem names (Galaxy Zoo bins, Amazon product ids), or ``()``.
    """

    y: list[np.ndarray]
    pred: list[np.ndarray]
    theta: np.ndarray
    ids: tuple = ()


DigitsProblems = PredictionProblems
"""The digits study: problems are k-means clusters, Y the digit's value 0-9, pred a ridge prediction."""


def digits_problems(n_clusters: int = 30, train_fraction: float = 0.3, min_size: int = 12,
                    seed: int = 0) -> DigitsProblems:
    """Build compound mean problems from scikit-learn's bundled digits data.

    A ridge regression of the digit's value on its 64 pixels is fitted on a random
    ``train_fraction`` of the images; the other images are clustered by k-means on
    their pixels into ``n_clusters`` problems, and clusters with fewer than
    ``min_size`` images are dropped. The estimand of a problem is the mean digit value
    of its images; the predictor's bias differs from cluster to cluster.

    Raises:
        ValueError: unless ``n_clusters >= 1``, ``0 < train_fraction < 1``, ``min_size >= 1``,
            there are at least ``n_clusters`` evaluation images and some cluster keeps
            ``min_size`` of them.
    """
    if isinstance(n_clusters, bool) or int(n_clusters) != n_clusters or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction!r}")
    if int(min_size) != min_size or min_size < 1:
        raise ValueError(f"min_size must be a positive integer, got {min_size!r}")
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_digits
    from sklearn.linear_model import Ridge

    X, y = load_digits(return_X_y=True)
    y = y.astype(float)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_train = int(round(train_fraction * len(y)))
    train, rest = perm[:n_train], perm[n_train:]
    if n_train < 1 or rest.size < n_clusters:
        raise ValueError(f"train_fraction={train_fraction!r} leaves {n_train} training and {rest.size} evaluation "
                         f"images; need at least 1 and n_clusters={n_clusters}")
    model = Ridge(alpha=1.0).fit(X[train], y[train])
    pred = model.predict(X[rest])
    labels = KMeans(n_clusters=n_clusters, n_init=4, random_state=seed).fit_predict(X[rest])
    ys, preds = [], []
    for c in range(n_clusters):
        idx = np.flatnonzero(labels == c)
        if idx.size >= min_size:
            ys.append(y[rest][idx])
            preds.append(pred[idx])
    if not ys:
        raise ValueError(f"no cluster has min_size={min_size} images; lower n_clusters or min_size")
    return DigitsProblems(ys, preds, np.array([a.mean() for a in ys]))


def split_labelled(problems: PredictionProblems, n_labelled: int, rng: np.random.Generator) -> CompoundMeanData:
    """Randomly mark ``n_labelled`` points of each problem as labelled, the rest as unlabelled."""
    yl, fl, fu = [], [], []
    for y, f in zip(problems.y, problems.pred):
        perm = rng.permutation(y.size)
        lab, unl = perm[:n_labelled], perm[n_labelled:]
        yl.append(y[lab])
        fl.append(f[lab])
        fu.append(f[unl])
    return CompoundMeanData(yl, fl, fu, problems.theta)


# --- the paper's real data (files of the official repository, supplied by the user) ---------------------------

GALAXY_SPIRAL_CLASSES = (3, 4, 5)
"""Galaxy Zoo classes counted as spiral (Y = 1) in the paper's study (official ``galaxy_zoo.py``)."""


def load_galaxy_zoo(path: str | Path, spiral_classes: tuple[int, ...] = GALAXY_SPIRAL_CLASSES) -> PredictionProblems:
    """The Galaxy Zoo study's problems from its prediction CSV (``data/galaxy/galaxy_test_prediction.csv``).

    The CSV has one row per galaxy with integer columns ``true_label`` (the Galaxy Zoo
    class), ``pred_label`` (the ResNet's predicted class) and ``WVT_BIN`` (the subgroup);
    other columns are ignored. As in the paper, Y = 1 when the true class is in
    ``spiral_classes`` and f = 1 when the predicted class is; a problem is a ``WVT_BIN``
    value, problems are sorted by bin and rows keep the file's order within a bin.

    Raises:
        ValueError: a missing file, missing columns, a non-integer entry, or no rows.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Galaxy Zoo prediction CSV not found: {str(path)!r}")
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        need = ("true_label", "pred_label", "WVT_BIN")
        if header is None or any(c not in header for c in need):
            raise ValueError(f"{str(path)!r} must be a CSV with the columns {', '.join(need)}; got {header}")
        cols = [header.index(c) for c in need]
        rows = []
        for i, row in enumerate(reader, start=2):
            try:
                rows.append([int(row[c]) for c in cols])
            except (ValueError, IndexError):
                raise ValueError(f"{str(path)!r} line {i}: true_label, pred_label and WVT_BIN must be integers, "
                                 f"got {row}") from None
    if not rows:
        raise ValueError(f"{str(path)!r} has no data rows")
    data = np.asarray(rows)
    spiral = np.asarray(spiral_classes)
    y = np.isin(data[:, 0], spiral).astype(float)
    f = np.isin(data[:, 1], spiral).astype(float)
    bins, problem = np.unique(data[:, 2], return_inverse=True)
    order = np.argsort(problem, kind="stable")
    split = np.cumsum(np.bincount(problem))[:-1]
    ys, fs = np.split(y[order], split), np.split(f[order], split)
    return PredictionProblems(ys, fs, np.array([a.mean() for a in ys]), tuple(int(b) for b in bins))


def load_amazon_reviews(path: str | Path) -> PredictionProblems:
    """The Amazon Food Reviews study's problems (``data/amazon/amazon_review.h5`` of the official repository).

    One problem per product. The HDF5 file has one dataset per product id, an array of
    shape (2, n_j): row 0 the review's star rating (Y), row 1 the fine-tuned BERT's
    predicted rating (f). Reading ``.h5``/``.hdf5`` needs ``h5py``; the same arrays saved
    with ``numpy.savez`` (one array per product id, ``.npz``) need nothing else. Products
    are sorted by id, the order in which h5py lists them.

    Raises:
        ValueError: a missing file, an unknown suffix, an array not of shape (2, n) with
            n >= 1, non-finite values, or no product.
        ImportError: an HDF5 file without h5py installed.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Amazon review file not found: {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix in (".h5", ".hdf5"):
        try:
            import h5py
        except ImportError as err:
            raise ImportError("reading the Amazon .h5 file needs h5py (pip install h5py); or save the same "
                              "(2, n) arrays per product with numpy.savez and pass the .npz") from err
        with h5py.File(path, "r") as fh:
            arrays = {str(k): np.asarray(fh[k][:]) for k in fh.keys()}
    elif suffix == ".npz":
        with np.load(path, allow_pickle=False) as fh:
            arrays = {str(k): np.asarray(fh[k]) for k in fh.files}
    else:
        raise ValueError(f"{str(path)!r}: expected an .h5/.hdf5 or .npz file, got suffix {path.suffix!r}")
    if not arrays:
        raise ValueError(f"{str(path)!r} holds no product")
    ids = tuple(sorted(arrays))
    ys, fs = [], []
    for pid in ids:
        a = arrays[pid]
        if a.ndim != 2 or a.shape[0] != 2 or a.shape[1] < 1:
            raise ValueError(f"product {pid!r}: expected an array of shape (2, n) (ratings, predictions), "
                             f"got shape {a.shape}")
        a = a.astype(float)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"product {pid!r} contains NaN or infinite values")
        ys.append(a[0])
        fs.append(a[1])
    return PredictionProblems(ys, fs, np.array([a.mean() for a in ys]), ids)


def split_labelled_fraction(problems: PredictionProblems, fraction: float = 0.2,
                            seed: int | None = 42) -> CompoundMeanData:
    """The paper's real-data split: a random ``fraction`` of each problem is labelled, the rest unlabelled.

    Problem j gets ``int(n_j * fraction)`` labelled points, the first of a random
    permutation, and the estimand is the mean of Y over its *unlabelled* points (official
    ``galaxy_zoo.py`` / ``amazon_review.py``, ``train_test_split=0.2``). The permutations
    come from ``numpy.random.RandomState(seed)`` drawn problem after problem, so a seed
    gives the official split of that seed (the official benchmark uses seeds 42, 43, ...).

    Raises:
        ValueError: unless ``0 < fraction < 1`` and every problem keeps at least 2 labelled
            and 1 unlabelled point (the estimators need them).
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
    rng = np.random.RandomState(seed)
    yl, fl, fu, theta = [], [], [], []
    for j, (y, f) in enumerate(zip(problems.y, problems.pred)):
        perm = rng.permutation(y.size)
        k = int(y.size * fraction)
        if k < 2 or k >= y.size:
            raise ValueError(f"problem {j} has {y.size} points: fraction={fraction!r} gives {k} labelled and "
                             f"{y.size - k} unlabelled; each problem needs at least 2 and 1")
        lab, unl = perm[:k], perm[k:]
        yl.append(y[lab])
        fl.append(f[lab])
        fu.append(f[unl])
        theta.append(y[unl].mean())
    return CompoundMeanData(yl, fl, fu, np.asarray(theta))
