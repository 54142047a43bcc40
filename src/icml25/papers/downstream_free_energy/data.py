"""The paper's few-shot image data (CIFAR-FS, mini-ImageNet) read from a user's folder in the formats they are
distributed in, as the :class:`~icml25.papers.downstream_free_energy.transfer.TransferData` that the selection study
consumes (pretraining set = the meta-train classes, downstream pool = the meta-test classes). Nothing is downloaded.

**The files are Python pickles, and unpickling can run code: read only files you trust.**
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25.papers.downstream_free_energy.transfer import TransferData

PAPER_DATASETS = ("cifar_fs", "mini_imagenet")
"""The paper's data sets that :func:`load_paper_dataset` reads (the paper pretrains on the meta-train classes of
CIFAR-FS and mini-ImageNet; second-hand, see docs/papers/downstream_free_energy.md)."""

CIFAR_FS_SPLIT: dict[str, tuple[str, ...]] = {
    "train": ("apple", "aquarium_fish", "bear", "bee", "bottle", "bowl", "boy", "bridge", "bus", "can", "castle",
              "caterpillar", "chair", "clock", "cloud", "cockroach", "couch", "cup", "dinosaur", "dolphin", "elephant",
              "forest", "girl", "hamster", "house", "kangaroo", "keyboard", "lawn_mower", "lion", "lizard", "lobster",
              "mountain", "mouse", "mushroom", "oak_tree", "orange", "orchid", "palm_tree", "pear", "pine_tree",
              "plate", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "seal", "shrew", "skunk",
              "skyscraper", "snake", "spider", "squirrel", "streetcar", "sunflower", "tank", "tiger", "train", "trout",
              "tulip", "turtle", "willow_tree", "wolf"),
    "val": ("beaver", "beetle", "butterfly", "camel", "cattle", "crab", "crocodile", "flatfish", "lamp", "maple_tree",
            "motorcycle", "otter", "sea", "shark", "television", "tractor"),
    "test": ("baby", "bed", "bicycle", "chimpanzee", "fox", "leopard", "man", "pickup_truck", "plain", "poppy",
             "rocket", "rose", "snail", "sweet_pepper", "table", "telephone", "wardrobe", "whale", "woman", "worm"),
}
"""The CIFAR-FS class split of Bertinetto et al. (ICLR 2019, "Meta-learning with differentiable closed-form solvers"):
64 meta-train, 16 meta-validation and 20 meta-test CIFAR-100 fine classes, each list in alphabetical order (the order
of CIFAR-100's fine label ids). Source: the split files of github.com/bertinetto/r2d2 as redistributed by torchmeta
(tristandeleu/pytorch-meta ``torchmeta/datasets/assets/cifar100/cifar-fs/{train,val,test}.json`` at ac3c48e, read
2026-12-05); metadata only, no image is bundled."""

CIFAR100_FILES = ("train", "test", "meta")
"""The files of the CIFAR-100 python version (``cifar-100-python/`` of cifar-100-python.tar.gz)."""
METAOPTNET_FILES = {"cifar_fs": ("CIFAR_FS_train.pickle", "CIFAR_FS_test.pickle"),
                    "mini_imagenet": ("miniImageNet_category_split_train_phase_train.pickle",
                                      "miniImageNet_category_split_test.pickle")}
"""The MetaOptNet (Lee et al., CVPR 2019) pickles read for each data set: the meta-train classes' pretraining images,
then the meta-test classes' images (``CIFAR_FS_val.pickle`` and the mini-ImageNet ``*_val``/``*_train_phase_{val,
test}`` pickles are not read)."""
IMAGE_SIDE = {"cifar_fs": 32, "mini_imagenet": 84}
"""Image height = width of each data set (3 colour channels)."""

_CIFAR100_LAYOUT = ("<data_dir>/cifar-100-python/{train,test,meta} (or <data_dir>/{train,test,meta}): the CIFAR-100 "
                    "python version from https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz, extracted")
_METAOPTNET_LAYOUT = {name: f"<data_dir>/{{{','.join(files)}}}: the MetaOptNet pickles "
                            "(github.com/kjunelee/MetaOptNet, README's data links)"
                      for name, files in METAOPTNET_FILES.items()}


class PaperDataError(FileNotFoundError):
    """A file of a paper data set is missing or malformed; the message names it and the expected layout."""


def _layout(name: str) -> str:
    if name == "cifar_fs":
        return f"expected either {_CIFAR100_LAYOUT}, or {_METAOPTNET_LAYOUT['cifar_fs']}"
    return f"expected {_METAOPTNET_LAYOUT[name]}"


def _need(path: Path, name: str) -> Path:
    if not path.is_file():
        raise PaperDataError(f"{name}: missing file {path}; {_layout(name)}")
    return path


def _unpickle(path: Path, name: str) -> dict:
    """A pickled dict. ``latin1`` reads the Python 2 pickles (numpy arrays and ``str`` keys) of both sources, as
    torchvision and MetaOptNet do; a Python 3 pickle ignores it."""
    try:
        with _need(path, name).open("rb") as fh:
            obj = pickle.load(fh, encoding="latin1")
    except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError) as exc:
        raise PaperDataError(f"{name}: {path} is not a readable pickle ({exc}); {_layout(name)}") from exc
    if not isinstance(obj, dict):
        raise PaperDataError(f"{name}: {path} holds a {type(obj).__name__}, not a dict; {_layout(name)}")
    return obj


def _key(d: dict, key: str, path: Path, name: str) -> Any:  # noqa: ANN401
    """``d[key]``, whether the pickle's keys read back as ``str`` or as ``bytes``."""
    for k in (key, key.encode()):
        if k in d:
            return d[k]
    raise PaperDataError(f"{name}: {path} has no key {key!r} (keys: {sorted(map(str, d))}); {_layout(name)}")


def _labels(d: dict, key: str, n: int, path: Path, name: str) -> np.ndarray:
    y = np.asarray(_key(d, key, path, name))
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise PaperDataError(f"{name}: {path} key {key!r} must hold {n} integer labels, got shape {y.shape} of "
                             f"{y.dtype}")
    return y.astype(np.int64)


def _cifar100_root(data_dir: Path) -> Path | None:
    """The folder of the CIFAR-100 python files if ``data_dir`` holds them (itself or ``cifar-100-python/``)."""
    sub = data_dir / "cifar-100-python"
    if sub.is_dir():
        return sub
    return data_dir if any((data_dir / f).exists() for f in CIFAR100_FILES) else None


def _read_cifar100(root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pretraining and downstream images (uint8 rows, channel-major 3072) and labels from CIFAR-100's python files."""
    name = "cifar_fs"
    for f in CIFAR100_FILES:
        _need(root / f, name)  # every file is checked before any is read
    meta_path = root / "meta"
    names = [n.decode() if isinstance(n, bytes) else str(n)
             for n in _key(_unpickle(meta_path, name), "fine_label_names", meta_path, name)]
    missing = [c for split in ("train", "test") for c in CIFAR_FS_SPLIT[split] if c not in names]
    if missing or len(set(names)) != len(names):
        raise PaperDataError(f"{name}: {meta_path} 'fine_label_names' must name the 100 distinct CIFAR-100 classes; "
                             f"missing {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    rows, fine = [], []
    for f in ("train", "test"):  # CIFAR-FS uses all 600 images of a class: 500 from `train`, then 100 from `test`
        d = _unpickle(root / f, name)
        X = np.asarray(_key(d, "data", root / f, name))
        if X.ndim != 2 or X.shape[1] != 3072 or X.dtype != np.uint8:
            raise PaperDataError(f"{name}: {root / f} key 'data' must be (N, 3072) uint8, got {X.shape} {X.dtype}")
        rows.append(X)
        fine.append(_labels(d, "fine_labels", len(X), root / f, name))
    X, fine_y = np.concatenate(rows), np.concatenate(fine)
    out = []
    for split in ("train", "test"):
        ids = np.array([names.index(c) for c in CIFAR_FS_SPLIT[split]])
        remap = np.full(len(names), -1, np.int64)
        remap[ids] = np.arange(len(ids))
        y = remap[fine_y]
        empty = [CIFAR_FS_SPLIT[split][k] for k in range(len(ids)) if not (y == k).any()]
        if empty:
            raise PaperDataError(f"{name}: no image of the CIFAR-FS {split} class(es) {empty[:5]} in "
                                 f"{root / 'train'} or {root / 'test'}")
        keep = np.flatnonzero(y >= 0)
        order = keep[np.argsort(y[keep], kind="stable")]  # by class, file order within a class
        out += [X[order], y[order]]
    return out[0], out[1], out[2], out[3]


def _read_metaoptnet(name: str, root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pretraining and downstream images (uint8 rows, channel-major) and labels from MetaOptNet's pickles."""
    paths = [root / f for f in METAOPTNET_FILES[name]]
    for p in paths:
        _need(p, name)
    side = IMAGE_SIDE[name]
    out, sets = [], []
    for p in paths:
        d = _unpickle(p, name)
        X = np.asarray(_key(d, "data", p, name))
        if X.ndim != 4 or X.shape[1:] != (side, side, 3) or X.dtype != np.uint8:
            raise PaperDataError(f"{name}: {p} key 'data' must be (N, {side}, {side}, 3) uint8 images, got "
                                 f"{X.shape} {X.dtype}")
        raw = _labels(d, "labels", len(X), p, name)
        classes, y = np.unique(raw, return_inverse=True)  # class k = the k-th smallest label value of the file
        if len(classes) < 2:
            raise PaperDataError(f"{name}: {p} holds {len(classes)} class(es); a split needs at least 2")
        order = np.argsort(y, kind="stable")
        out += [X[order].transpose(0, 3, 1, 2).reshape(len(X), -1), y[order].astype(np.int64)]
        sets.append(set(classes.tolist()))
    if sets[0] & sets[1]:
        raise PaperDataError(f"{name}: {paths[0]} and {paths[1]} share labels {sorted(sets[0] & sets[1])[:5]}; the "
                             "pretraining and downstream classes must be disjoint")
    return out[0], out[1], out[2], out[3]


def load_paper_dataset(name: str, data_dir: str | Path) -> TransferData:
    """One of the paper's few-shot data sets from a user's folder, as :class:`TransferData`.

    The pretraining set is every image of the meta-train classes and the downstream pool every image of the
    meta-test classes (the meta-validation classes are not used); the selection study pretrains on the first and
    draws its few-shot support sets and queries from the second. Nothing is downloaded and no checksum is checked;
    **the files are Python pickles, and unpickling can run code: read only files you trust.**

    Layouts (``data_dir`` is the folder that holds the files):

    * ``cifar_fs`` (CIFAR-FS, Bertinetto et al. 2019: CIFAR-100's 600 images per class, split by class), either

      - the CIFAR-100 python version as torchvision expects it: ``<data_dir>/cifar-100-python/`` (or ``data_dir``
        itself) holding ``train``, ``test`` and ``meta`` from
        https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz: pickled dicts with ``data`` (N, 3072) uint8 (the
        1,024 red, then green, then blue pixels of a 32x32 image), ``fine_labels`` and, in ``meta``,
        ``fine_label_names``. The class split is :data:`CIFAR_FS_SPLIT` (shipped here), resolved through
        ``fine_label_names``; pretraining class ``k`` is ``CIFAR_FS_SPLIT["train"][k]`` and downstream class ``k``
        is ``CIFAR_FS_SPLIT["test"][k]``; a class's images are those of ``train`` then ``test``, in file order. Or
      - the MetaOptNet pickles (github.com/kjunelee/MetaOptNet, the CIFAR-FS link of its README):
        ``<data_dir>/CIFAR_FS_train.pickle`` and ``CIFAR_FS_test.pickle``, dicts with ``data`` (N, 32, 32, 3)
        uint8 and ``labels`` (N ints). Class ``k`` of a file is its ``k``-th smallest label value.

      When both are present the CIFAR-100 files are read.
    * ``mini_imagenet``: the MetaOptNet pickles ``<data_dir>/miniImageNet_category_split_train_phase_train.pickle``
      (the 64 meta-train classes' training images) and ``miniImageNet_category_split_test.pickle`` (the 20 meta-test
      classes), ``data`` (N, 84, 84, 3) uint8 and ``labels``, classes numbered as for CIFAR-FS's pickles.

    Conversion: ``x = pixel / 255`` in [0, 1] (torchvision's ``ToTensor()``; the digits stand-in is scaled to [0, 1]
    too, the paper's normalisation was not seen), flattened channel-major (3 x H x W: 3,072 features for CIFAR-FS,
    21,168 for mini-ImageNet) because the study's backbones are MLPs; ``x.view(-1, 3, H, W)`` recovers the image.
    Samples are ordered by class, file order within a class. No augmentation.

    Args:
        name: one of :data:`PAPER_DATASETS`.
        data_dir: the folder holding the files.

    Returns:
        :class:`TransferData` with float32 ``x_pre`` / ``x_down`` and int64 labels ``0 .. K-1``, ``n_pre_classes``
        the number of meta-train classes and ``name`` the data set's.

    Raises:
        PaperDataError: (a ``FileNotFoundError``) a file is missing or malformed; the message names it and the
            expected layout.
        ValueError: an unknown ``name``.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"unknown paper data set {name!r}; valid: {PAPER_DATASETS}")
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise PaperDataError(f"{name}: data_dir {root} is not a folder; {_layout(name)}")
    cifar_root = _cifar100_root(root) if name == "cifar_fs" else None
    if cifar_root is not None:
        Xp, yp, Xd, yd = _read_cifar100(cifar_root)
    else:
        Xp, yp, Xd, yd = _read_metaoptnet(name, root)

    def scale(a: np.ndarray) -> torch.Tensor:
        x = a.astype(np.float32)
        x /= 255.0
        return torch.from_numpy(x)

    return TransferData(scale(Xp), torch.from_numpy(yp), scale(Xd), torch.from_numpy(yd), int(yp.max()) + 1, name)
