"""Few-shot data for IBFS: procedural "glyph" classes (no downloads) and the paper's mini-/tiered-ImageNet read
from a user's folder in the RFS layout (nothing is downloaded).

Glyphs: each class is a glyph made of 2-4 quadratic Bezier strokes on a 16x16 canvas;
an instance is the class glyph under a random affine jitter (rotation, scale, shear,
shift), rendered with a soft pen, plus pixel noise. Meta-train and meta-test
classes are disjoint, so a meta-test episode is a genuinely *new* task.

The paper's data (:func:`load_paper_dataset`): the pickles / npz files that the RFS code base
(github.com/WangYueFt/rfs, the paper's downstream protocol) and MetaOptNet distribute, served through
the same sampler interface as the glyphs, so the reproduction runs unchanged on them.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

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


# ----------------------------------------------------------------------------- the paper's data (RFS layout)
PAPER_DATASETS: tuple[str, ...] = ("mini_imagenet", "tiered_imagenet")
"""The paper's few-shot data sets that :func:`load_paper_dataset` reads."""
PAPER_SPLITS: tuple[str, ...] = ("train", "val", "test")
"""Class splits: the base (meta-train) classes and the meta-validation / meta-test classes."""
PAPER_FOLDERS = {"mini_imagenet": "miniImageNet", "tiered_imagenet": "tieredImageNet"}
"""Sub-folder of each data set in RFS's ``--data_root`` (also accepted as the root itself)."""
RFS_MEAN = np.array([120.39586422, 115.59361427, 104.54012653]) / 255.0
"""Per-channel (RGB) mean of RFS's ``transforms.Normalize`` for both data sets."""
RFS_STD = np.array([70.68188272, 68.27635443, 72.54505529]) / 255.0
"""Per-channel (RGB) standard deviation of RFS's ``transforms.Normalize``."""


def paper_files(name: str, split: str) -> tuple[str, ...]:
    """File names of one split of a paper data set in the RFS layout.

    mini-ImageNet: ``miniImageNet_category_split_train_phase_train.pickle`` (train: the 64 base classes, RFS's
    pre-training file), ``miniImageNet_category_split_val.pickle`` (16 classes) and
    ``miniImageNet_category_split_test.pickle`` (20 classes, RFS's meta-test file), each a pickle of a dict with
    ``data`` (N, 84, 84, 3) uint8 and ``labels`` (N ints). tiered-ImageNet: ``<split>_images.npz`` (array
    ``images`` (N, 84, 84, 3) uint8) and ``<split>_labels.pkl`` (a dict with ``labels``), 351 / 97 / 160 classes.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"name must be one of {PAPER_DATASETS}, got {name!r}")
    if split not in PAPER_SPLITS:
        raise ValueError(f"split must be one of {PAPER_SPLITS}, got {split!r}")
    if name == "mini_imagenet":
        return ("miniImageNet_category_split_train_phase_train.pickle" if split == "train"
                else f"miniImageNet_category_split_{split}.pickle",)
    return f"{split}_images.npz", f"{split}_labels.pkl"


def _paper_folder(name: str, root: str | Path, splits: tuple[str, ...]) -> Path:
    """The folder holding the files: ``root`` itself, or ``root/miniImageNet`` / ``root/tieredImageNet`` (RFS's
    ``--data_root``) when the files are there. Raises FileNotFoundError naming the first missing file."""
    root = Path(root)
    files = [f for split in splits for f in paper_files(name, split)]
    for folder in (root, root / PAPER_FOLDERS[name]):
        if all((folder / f).is_file() for f in files):
            return folder
    folder = root / PAPER_FOLDERS[name] if (root / PAPER_FOLDERS[name]).is_dir() else root
    missing = next(f for f in files if not (folder / f).is_file())
    raise FileNotFoundError(f"{name}: missing {folder / missing}; expected the RFS layout, "
                            f"{', '.join(files)} in {root} or in {root / PAPER_FOLDERS[name]}")


def _unpickle(path: Path) -> dict:
    """A pickle written by Python 2 or 3 (RFS's files are Python 2 pickles: read with latin1)."""
    with path.open("rb") as fh:
        obj = pickle.load(fh, encoding="latin1")
    if not isinstance(obj, dict) or "labels" not in obj:
        raise ValueError(f"{path} must hold a dict with a 'labels' entry, got {type(obj).__name__}"
                         + (f" with keys {sorted(obj)}" if isinstance(obj, dict) else ""))
    return obj


def read_paper_split(name: str, root: str | Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The images and labels of one split of a paper data set, as stored (see :func:`paper_files`).

    The files are unpickled (trust only files you downloaded yourself from the standard source); nothing is
    downloaded. Returns ``(images, labels)``: uint8 (N, H, W, 3) and int64 (N,), the labels as in the file.
    """
    folder = _paper_folder(name, root, (split,))
    files = [folder / f for f in paper_files(name, split)]
    if name == "mini_imagenet":
        obj = _unpickle(files[0])
        if "data" not in obj:
            raise ValueError(f"{files[0]} must hold a dict with 'data' and 'labels', got keys {sorted(obj)}")
        images, labels = np.asarray(obj["data"]), obj["labels"]
    else:
        with np.load(files[0], allow_pickle=False) as npz:
            if "images" not in npz.files:
                raise ValueError(f"{files[0]} must hold an array 'images', got {npz.files}")
            images = npz["images"]
        labels = _unpickle(files[1])["labels"]
    labels = np.asarray(labels)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise ValueError(f"{files[0]}: images must be uint8 (N, H, W, 3), got {images.dtype} {images.shape}")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0] or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{files[-1]}: labels must be {images.shape[0]} integers (one per image), got "
                         f"{labels.dtype} {labels.shape}")
    return images, labels.astype(np.int64)


class ImageClasses:
    """A bank of real image classes with the :class:`GlyphClasses` interface (``n_classes``, ``size``,
    ``render``): class ``c`` is the ``c``-th smallest label of the file, its images kept as uint8.

    Images are served as float32 (m, 3, H, W), scaled to [0, 1] and normalised with RFS's per-channel
    mean and standard deviation (:data:`RFS_MEAN`, :data:`RFS_STD`); no augmentation.

    Args:
        images: uint8 (N, H, W, 3).
        labels: integer labels (N,).
        name: what the bank holds (e.g. ``"mini_imagenet test"``), for error messages.
    """

    channels = 3

    def __init__(self, images: np.ndarray, labels: np.ndarray, name: str = "images"):
        images, labels = np.asarray(images), np.asarray(labels)
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"images must be uint8 (N, H, W, 3), got {images.dtype} {images.shape}")
        if labels.shape != (images.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels must be {images.shape[0]} integers, got {labels.dtype} {labels.shape}")
        self.images, self.name = images, name
        self.class_labels, inverse, self.counts = np.unique(labels, return_inverse=True, return_counts=True)
        self.order = np.argsort(inverse, kind="stable")  # image indices grouped by class, file order within
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        self.n_classes, self.size = int(self.class_labels.size), int(images.shape[1])

    def class_images(self, c: int) -> np.ndarray:
        """Indices (into ``images``) of class ``c``'s images, in file order."""
        return self.order[self.starts[c]:self.starts[c] + self.counts[c]]

    def to_tensor(self, index: np.ndarray) -> np.ndarray:
        """The images at ``index`` as normalised float32 (m, 3, H, W)."""
        x = self.images[np.asarray(index, dtype=int)].astype(np.float32) / np.float32(255.0)
        x = (x - RFS_MEAN.astype(np.float32)) / RFS_STD.astype(np.float32)
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))

    def render(self, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One image of each class in ``classes``, drawn uniformly (with replacement across calls and within the
        list): normalised float32 (len, 3, H, W). Used for RFS pre-training batches."""
        classes = np.asarray(classes, dtype=int)
        if classes.size and (classes.min() < 0 or classes.max() >= self.n_classes):
            raise ValueError(f"class ids must lie in [0, {self.n_classes}), got {classes.min()}..{classes.max()}")
        pick = rng.integers(0, self.counts[classes]) if classes.size else np.zeros(0, int)
        return self.to_tensor(self.order[self.starts[classes] + pick])


@dataclass
class ImageEpisodeSampler(EpisodeSampler):
    """N-way K-shot episodes of an :class:`ImageClasses` bank, as RFS's meta-test sampler draws them: ``n_way``
    distinct classes, then ``k_shot + n_query`` *distinct* images per class (support and query never share an
    image). Same output as :class:`EpisodeSampler`: class-major support (n_way*k_shot, 3, H, W), labels
    0..n_way-1 in the order the classes were drawn."""

    bank: ImageClasses

    def __post_init__(self) -> None:
        super().__post_init__()
        fewest = int(self.bank.counts[self.class_ids].min())
        if self.k_shot + self.n_query > fewest:
            raise ValueError(f"k_shot + n_query = {self.k_shot + self.n_query} exceeds the {fewest} images of the "
                             f"smallest class of {self.bank.name}")

    def sample(self, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Draw one episode."""
        chosen = rng.choice(self.class_ids, self.n_way, replace=False)
        picks = np.stack([self.bank.class_images(c)[rng.choice(self.bank.counts[c], self.k_shot + self.n_query,
                                                               replace=False)] for c in chosen])
        xs = self.bank.to_tensor(picks[:, :self.k_shot].ravel())
        xq = self.bank.to_tensor(picks[:, self.k_shot:].ravel())
        ys = np.repeat(np.arange(self.n_way), self.k_shot)
        yq = np.repeat(np.arange(self.n_way), self.n_query)
        return tuple(torch.from_numpy(a).to(self.device) for a in (xs, ys, xq, yq))


def load_paper_dataset(name: str, root: str | Path, *, n_way: int = 5, k_shot: int = 1, n_query: int = 15,
                       eval_split: str = "test", device: str = "cpu",
                       ) -> tuple[ImageEpisodeSampler, ImageEpisodeSampler]:
    """Base-class and novel-class samplers of mini- or tiered-ImageNet from a folder in the RFS layout.

    The source: the data files of the RFS code base (Tian et al. 2020, github.com/WangYueFt/rfs, whose
    downstream protocol the paper follows; the same files as MetaOptNet's): ``root`` (or ``root/miniImageNet``,
    ``root/tieredImageNet``) holds, for ``mini_imagenet``,
    ``miniImageNet_category_split_train_phase_train.pickle`` and ``miniImageNet_category_split_<eval_split>.pickle``
    (pickled dicts with ``data`` uint8 (N, 84, 84, 3) and ``labels``), and for ``tiered_imagenet``
    ``train_images.npz`` / ``train_labels.pkl`` and ``<eval_split>_images.npz`` / ``<eval_split>_labels.pkl``
    (``images`` uint8 (N, 84, 84, 3); a dict with ``labels``). The files are checked first, and a missing one
    raises FileNotFoundError naming it; nothing is downloaded.

    Returns:
        ``(train, test)`` like :func:`glyph_few_shot`, two :class:`ImageEpisodeSampler` of ``n_way``-way
        ``k_shot``-shot episodes with ``n_query`` queries per class: ``train`` over every base class
        (``train.bank.render`` gives the RFS pre-training batches, label = class index), ``test`` over the
        ``eval_split`` classes. Images are normalised with RFS's mean and std, no augmentation.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"name must be one of {PAPER_DATASETS}, got {name!r}")
    if eval_split not in ("val", "test"):
        raise ValueError(f"eval_split must be 'val' or 'test', got {eval_split!r}")
    _paper_folder(name, root, ("train", eval_split))  # every file present before anything is read
    base = ImageClasses(*read_paper_split(name, root, "train"), name=f"{name} train")
    novel = ImageClasses(*read_paper_split(name, root, eval_split), name=f"{name} {eval_split}")
    train = ImageEpisodeSampler(base, np.arange(base.n_classes), n_way, k_shot, n_query, device)
    test = ImageEpisodeSampler(novel, np.arange(novel.n_classes), n_way, k_shot, n_query, device)
    return train, test
