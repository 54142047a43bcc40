"""Data for the ReT-FHD reproduction: bundled digits, a 20-class Gaussian mixture, Dirichlet label skew, and a
reader of the paper's CIFAR-10/100 and Tiny-ImageNet files at a user's path (nothing is downloaded)."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from icml25.papers.ret_fhd.federated import Client, MultiExitMLP

HETEROGENEOUS_ARCHS: tuple[tuple[int, ...], ...] = ((32,), (64, 32), (128, 64, 32), (64,), (128, 64))
"""Hidden widths of the heterogeneous clients (client k gets ``archs[k % 5]``): 1-3 layers, widths 32-128."""


def load_dataset(name: str, seed: int = 0, test_fraction: float = 0.3):
    """Standardised train/test tensors of ``"digits"`` (sklearn, 1,797 x 64, 10 classes) or ``"gmm20"``.

    ``gmm20`` is a 20-class mixture in 50 dimensions: each class has two Gaussian components with
    means ``N(0, 0.6^2 I)`` and unit covariance, 150 points per class (3,000 points).

    Returns:
        ``(X_train, y_train, X_test, y_test, n_classes)``.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng([seed, 3])
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        C = 10
    elif name == "gmm20":
        C, d, per = 20, 50, 150
        means = rng.normal(0, 0.6, size=(C, 2, d))
        y = np.repeat(np.arange(C), per)
        comp = rng.integers(0, 2, size=y.size)
        X = means[y, comp] + rng.normal(size=(y.size, d))
    else:
        raise ValueError(f"unknown dataset {name!r}; valid: 'digits', 'gmm20'")
    perm = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-8
    f = lambda a: torch.tensor((a - mu) / sd, dtype=torch.float32)  # noqa: E731
    return f(X[tr]), torch.tensor(y[tr]), f(X[te]), torch.tensor(y[te]), C


def dirichlet_split(y: np.ndarray | torch.Tensor, n_clients: int, alpha: float, seed: int = 0,
                    min_size: int = 10) -> list[np.ndarray]:
    """Label-skewed partition: class c's points are split by proportions ``~ Dir(alpha 1_K)``.

    Redraws until every client has at least ``min_size`` points.

    Returns:
        A list of ``n_clients`` index arrays.
    """
    y = np.asarray(y)
    if n_clients < 1 or alpha <= 0 or n_clients * min_size > len(y):
        raise ValueError(f"need n_clients >= 1, alpha > 0 and n_clients*min_size <= n; got {n_clients}, {alpha}, "
                         f"{min_size}, n={len(y)}")
    rng = np.random.default_rng([seed, 5])
    for _ in range(1000):
        parts = [[] for _ in range(n_clients)]
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            cuts = (np.cumsum(rng.dirichlet(alpha * np.ones(n_clients))) * len(idx)).astype(int)[:-1]
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.array(p)) for p in parts]
    raise ValueError(f"could not draw a split with {min_size} points per client; raise alpha or lower min_size")


def make_clients(X: torch.Tensor, y: torch.Tensor, parts: Sequence[np.ndarray], n_classes: int,
                 archs: Sequence[Sequence[int]] = HETEROGENEOUS_ARCHS, seed: int = 0,
                 attackers: dict[int, str] | None = None, device: str | torch.device | None = None) -> list[Client]:
    """Build one :class:`Client` per partition with architecture ``archs[k % len(archs)]``.

    Model initialisation depends only on ``seed`` (weights are drawn on the CPU, then moved to
    ``device``, default: the device of ``X``), so every method of a comparison starts from the same
    weights on any device. ``attackers`` maps client ids to an attack name.
    """
    attackers = attackers or {}
    parts = [np.asarray(p) for p in parts]
    for k, p in enumerate(parts):
        if p.ndim != 1 or (p.size and not np.issubdtype(p.dtype, np.integer)):
            raise TypeError(f"parts[{k}] must be a 1-D integer index array, got dtype {p.dtype}, shape {p.shape}")
        if p.size and (p.min() < 0 or p.max() >= len(X)):
            raise ValueError(f"parts[{k}] indexes rows outside [0, {len(X)}): range [{p.min()}, {p.max()}]")
    device = X.device if device is None else torch.device(device)
    X, y = X.to(device), y.to(device)
    torch.manual_seed(seed)
    return [Client(MultiExitMLP(X.shape[1], archs[k % len(archs)], n_classes).to(device), X[p], y[p],
                   attackers.get(k))
            for k, p in enumerate(parts)]


PAPER_DATASETS = ("cifar10", "cifar100", "tinyimagenet")
"""The paper's data sets that :func:`load_paper_dataset` reads from a user's folder (Flowers-102 is not read)."""
PAPER_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                                        "data_batch_5", "test_batch", "batches.meta")),
    "cifar100": ("cifar-100-python", ("train", "test", "meta")),
    "tinyimagenet": ("tiny-imagenet-200", ("wnids.txt", "train/<wnid>/images/*.JPEG", "val/val_annotations.txt",
                                           "val/images/*.JPEG")),
}
"""Each data set's folder (as its official archive extracts) and the files :func:`load_paper_dataset` reads."""


class PaperDataError(FileNotFoundError):
    """A file of a paper data set is missing or malformed; the message names it and the expected layout."""


def _layout_message(name: str) -> str:
    folder, files = PAPER_LAYOUT[name]
    return f"expected layout: <data_dir>/{folder}/ (or <data_dir> itself) holding {', '.join(files)}"


def _paper_root(name: str, data_dir: str | Path) -> Path:
    """``<data_dir>/<official folder>`` when it exists, else ``data_dir`` itself."""
    root = Path(data_dir).expanduser()
    sub = root / PAPER_LAYOUT[name][0]
    return sub if sub.is_dir() else root


def _need(path: Path, name: str) -> Path:
    if not path.is_file():
        raise PaperDataError(f"{name}: missing file {path}; {_layout_message(name)}")
    return path


def _unpickle(path: Path, name: str) -> dict:
    """One CIFAR pickle (a dict with bytes keys). ``pickle`` can run code: read only files you trust."""
    try:
        with _need(path, name).open("rb") as fh:
            obj = pickle.load(fh, encoding="bytes")
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise PaperDataError(f"{name}: {path} is not a CIFAR python pickle ({exc}); {_layout_message(name)}") from exc
    if not isinstance(obj, dict):
        raise PaperDataError(f"{name}: {path} holds a {type(obj).__name__}, not a dict; {_layout_message(name)}")
    return obj


def _cifar_batch(path: Path, name: str, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    d = _unpickle(path, name)
    for key in (b"data", label_key):
        if key not in d:
            raise PaperDataError(f"{name}: {path} has no key {key!r} (keys: {sorted(d)}); {_layout_message(name)}")
    X = np.asarray(d[b"data"], dtype=np.uint8)
    y = np.asarray(d[label_key], dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != 3072 or len(y) != len(X):
        raise PaperDataError(f"{name}: {path} has data of shape {X.shape} and {len(y)} labels; expected "
                             f"(N, 3072) uint8 and N labels")
    return X, y


def _read_cifar(name: str, root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    if name == "cifar10":
        files = [f"data_batch_{i}" for i in range(1, 6)]
        for f in (*files, "test_batch", "batches.meta"):
            _need(root / f, name)  # every file is checked before any is read
        parts = [_cifar_batch(root / f, name, b"labels") for f in files]
        Xtr, ytr = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        Xte, yte = _cifar_batch(root / "test_batch", name, b"labels")
        meta, names_key = _unpickle(root / "batches.meta", name), b"label_names"
    else:
        for f in ("train", "test", "meta"):
            _need(root / f, name)
        Xtr, ytr = _cifar_batch(root / "train", name, b"fine_labels")
        Xte, yte = _cifar_batch(root / "test", name, b"fine_labels")
        meta, names_key = _unpickle(root / "meta", name), b"fine_label_names"
    if names_key not in meta:
        raise PaperDataError(f"{name}: the meta file has no key {names_key!r}; {_layout_message(name)}")
    return Xtr, ytr, Xte, yte, len(meta[names_key])


def _read_image(path: Path, size: int = 64) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        a = np.asarray(im.convert("RGB"), dtype=np.uint8)  # a few Tiny-ImageNet images are greyscale
    if a.shape != (size, size, 3):
        raise PaperDataError(f"tinyimagenet: {path} is {a.shape[1]}x{a.shape[0]}, expected {size}x{size}")
    return a.transpose(2, 0, 1).reshape(-1)  # channel-major, as CIFAR's rows


def _read_tinyimagenet(root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    name = "tinyimagenet"
    wnids = sorted(w.strip() for w in _need(root / "wnids.txt", name).read_text().split() if w.strip())
    index = {w: i for i, w in enumerate(wnids)}
    ann = _need(root / "val" / "val_annotations.txt", name)
    Xtr, ytr = [], []
    for w in wnids:
        files = sorted((root / "train" / w / "images").glob("*.JPEG"))
        if not files:
            raise PaperDataError(f"{name}: no images in {root / 'train' / w / 'images'}; {_layout_message(name)}")
        Xtr += [_read_image(f) for f in files]
        ytr += [index[w]] * len(files)
    Xte, yte = [], []
    for line_no, line in enumerate(ann.read_text().splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 2 or cols[1] not in index:
            raise PaperDataError(f"{name}: {ann} line {line_no} is not '<file>\\t<wnid in wnids.txt>\\t...': "
                                 f"{line[:80]!r}")
        Xte.append(_read_image(_need(root / "val" / "images" / cols[0], name)))
        yte.append(index[cols[1]])
    return (np.stack(Xtr), np.array(ytr, np.int64), np.stack(Xte), np.array(yte, np.int64), len(wnids))


def load_paper_dataset(name: str, data_dir: str | Path):
    """One of the paper's image data sets from a user's folder, as flat tensors for the multi-exit MLPs.

    Nothing is downloaded and no checksum is checked: the files are read directly (no torchvision dataset
    class). **The CIFAR files are Python pickles, and unpickling can run code: read only files you trust.**

    Layouts (as the official archives extract; ``data_dir`` may be the parent folder or the folder itself):

    * ``cifar10``: ``cifar-10-batches-py/data_batch_1`` ... ``data_batch_5`` (training, in that order),
      ``test_batch`` and ``batches.meta``: pickled dicts with ``b"data"`` (N, 3072) uint8 (the 1,024 red,
      then green, then blue pixels of a 32x32 image, rows top to bottom) and ``b"labels"``; the number of classes
      is ``len(meta[b"label_names"])``.
    * ``cifar100``: ``cifar-100-python/train``, ``test`` and ``meta``, with ``b"fine_labels"`` (100 classes,
      ``len(meta[b"fine_label_names"])``); the 20 coarse labels are not used.
    * ``tinyimagenet``: ``tiny-imagenet-200/wnids.txt``, ``train/<wnid>/images/*.JPEG`` (500 per class) and
      ``val/images/*.JPEG`` labelled by ``val/val_annotations.txt`` (file, wnid, box); class ``i`` is the
      ``i``-th wnid in sorted order (what torchvision's ``ImageFolder`` gives the training folders). Images are
      read with Pillow, converted to RGB (a few are greyscale) and flattened channel-major like CIFAR (12,288
      features). The unlabelled ``test/`` folder is not read. Needs Pillow.

    Conversion (the same for all three): ``x = (pixel / 255 - 0.5) / 0.5`` in [-1, 1], the official code's
    ``ToTensor()`` + ``Normalize((0.5,)*3, (0.5,)*3)`` (daxu0111/ReT-FHD ``dataset/generate_Cifar10.py``,
    ``generate_Cifar100.py``, ``generate_TinyImagenet.py``), kept flat in channel-major order (3 x H x W)
    because the experiments' clients are MLPs; ``x.view(-1, 3, H, W)`` recovers the image tensor. Unlike
    :func:`load_dataset`, there is no per-feature standardisation (the official scaling is used instead) and no
    random split: the official training set is the training pool that :func:`dirichlet_split` partitions and
    the official test set (CIFAR's ``test_batch`` / ``test``, Tiny-ImageNet's ``val``) is the global test set.
    (The official code instead pools training and test images, partitions the pool over clients and splits
    each client's share into train and test; that is not followed here.) No augmentation.

    Args:
        name: one of :data:`PAPER_DATASETS`.
        data_dir: the folder holding the data set's folder (or the data set's folder itself).

    Returns:
        ``(X_train, y_train, X_test, y_test, n_classes)``: float32 ``(N, 3*H*W)`` and int64 ``(N,)`` tensors,
        as :func:`load_dataset` returns.

    Raises:
        PaperDataError: a file is missing or malformed (the message names it and the expected layout).
        ValueError: an unknown ``name``.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"unknown paper data set {name!r}; valid: {PAPER_DATASETS}")
    root = _paper_root(name, data_dir)
    if name == "tinyimagenet":
        Xtr, ytr, Xte, yte, C = _read_tinyimagenet(root)
    else:
        Xtr, ytr, Xte, yte, C = _read_cifar(name, root)
    for split, y in (("training", ytr), ("test", yte)):
        if y.size and (y.min() < 0 or y.max() >= C):
            raise PaperDataError(f"{name}: {split} labels outside [0, {C}) in {root}")

    def f(a: np.ndarray) -> torch.Tensor:
        x = a.astype(np.float32)  # in place from here: Tiny-ImageNet's training set alone is ~4.9 GB as float32
        x /= 255.0
        x -= 0.5
        x /= 0.5
        return torch.from_numpy(x)

    return f(Xtr), torch.from_numpy(ytr), f(Xte), torch.from_numpy(yte), C
