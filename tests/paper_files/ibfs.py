"""ibfs: mini-ImageNet and tiered-ImageNet in the RFS layout (github.com/WangYueFt/rfs, ``dataset/mini_imagenet.py``
and ``dataset/tiered_imagenet.py``): mini-ImageNet as ``miniImageNet_category_split_*.pickle`` files holding a dict
with ``data`` (N, 84, 84, 3) uint8 and ``labels`` (a list), written as Python 2 wrote them (the array's bytes as a
py2 ``str``, which only ``encoding="latin1"`` reads, as RFS does); tiered-ImageNet as ``<split>_images.npz``
(``images``) plus ``<split>_labels.pkl`` (a dict with ``labels`` and the other label keys of the distributed files).
Every image carries its label and index in its pixels, so tests can check which images come back."""

from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path

import numpy as np

MINI = {"train": "miniImageNet_category_split_train_phase_train.pickle",
        "val": "miniImageNet_category_split_val.pickle", "test": "miniImageNet_category_split_test.pickle"}
"""mini-ImageNet's file per split."""


class Py2Pickler(pickle._Pickler):
    """Protocol 2 with every ``bytes`` written as a Python 2 ``str`` (BINSTRING), as RFS's pickles were made."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_bytes(self, obj: bytes) -> None:
        n = len(obj)
        self.write((pickle.SHORT_BINSTRING + bytes([n]) if n < 256 else pickle.BINSTRING + struct.pack("<i", n))
                   + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def py2_pickle(path: Path, obj) -> None:
    """``obj`` pickled as Python 2 wrote it (see :class:`Py2Pickler`)."""
    buf = io.BytesIO()
    Py2Pickler(buf, protocol=2).dump(obj)
    path.write_bytes(buf.getvalue())


def images(labels: np.ndarray, size: int = 84, seed: int = 0) -> np.ndarray:
    """uint8 (N, size, size, 3): channel 0 = the label, channel 1 = the image's index in the file, channel 2 noise."""
    n = len(labels)
    img = np.empty((n, size, size, 3), np.uint8)
    img[..., 0] = np.asarray(labels, np.uint8)[:, None, None]
    img[..., 1] = np.arange(n, dtype=np.uint8)[:, None, None]
    img[..., 2] = np.random.default_rng(seed).integers(0, 256, (n, size, size), dtype=np.uint8)
    return img


def labels(first: int, n_classes: int, per_class: int, seed: int) -> np.ndarray:
    """Labels first..first+n_classes-1, ``per_class`` each, shuffled (the loader must group them)."""
    y = np.repeat(np.arange(first, first + n_classes), per_class)
    np.random.default_rng(seed).shuffle(y)
    return y


def write_mini(root: Path, splits: dict[str, np.ndarray], size: int = 84, data: dict | None = None) -> dict:
    """``miniImageNet_category_split_*.pickle`` files in ``root`` (``data[split]`` replaces the generated images of
    that split); returns the (images, labels) written per split."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (split, y) in enumerate(splits.items()):
        x = data[split] if data and split in data else images(y, size, seed=i)
        py2_pickle(root / MINI[split], {"data": x, "labels": [int(v) for v in y],
                                        "catname2label": {f"n{v:08d}": int(v) for v in np.unique(y)}})
        out[split] = (x, y)
    return out


def write_tiered(root: Path, splits: dict[str, np.ndarray], size: int = 84) -> dict:
    """``<split>_images.npz`` and ``<split>_labels.pkl`` in ``root``; returns what was written per split."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (split, y) in enumerate(splits.items()):
        x = images(y, size, seed=10 + i)
        np.savez(root / f"{split}_images.npz", images=x)
        with (root / f"{split}_labels.pkl").open("wb") as fh:
            pickle.dump({"label_specific": np.asarray(y) + 1000, "label_general": np.asarray(y) % 2,
                         "label_specific_str": [f"s{v}" for v in y], "labels": [int(v) for v in y]}, fh,
                        protocol=2)
        out[split] = (x, y)
    return out


def _paper_data(folder: Path) -> dict[str, str]:
    """mini-ImageNet (the default ``paper_dataset``) under RFS's ``data_root/miniImageNet``: 6 base classes of 6
    images, 5 test classes of 10 (the smoke preset's scoring batch takes 5 per class, its episodes 1 + 5); 32 x 32
    images (the loader reads any size) keep the battery's run to seconds."""
    write_mini(folder / "miniImageNet", {"train": labels(0, 6, 6, 6), "test": labels(80, 5, 10, 5)}, size=32)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
