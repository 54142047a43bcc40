"""downstream_free_energy: CIFAR-100's python version (``cifar-100-python/{train,test,meta}``)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from icml25.papers.downstream_free_energy.data import CIFAR_FS_SPLIT

NAMES = sorted(CIFAR_FS_SPLIT["train"] + CIFAR_FS_SPLIT["val"] + CIFAR_FS_SPLIT["test"])
"""CIFAR-100's fine label names in fine-label order (alphabetical)."""
PER_CLASS = (5, 1)
"""Images per class in the fixture's ``train`` and ``test`` files (CIFAR-100: 500 and 100)."""


def dump_pickle(path: Path, obj: dict, bytes_keys: bool) -> None:
    """A pickle as the Python 2 originals read back: keys ``str``, or ``bytes`` with ``bytes_keys``."""
    if bytes_keys:
        obj = {k.encode(): v for k, v in obj.items()}
    with path.open("wb") as fh:
        pickle.dump(obj, fh, protocol=2)


def cifar_image(fine: int, k: int, split: int) -> np.ndarray:
    """A distinct 3072-byte image: pixel j is ``(fine * 37 + k * 11 + split * 101 + j) % 256``."""
    return ((fine * 37 + k * 11 + split * 101 + np.arange(3072)) % 256).astype(np.uint8)


def write_cifar100(root: Path, names: list[str] = NAMES, bytes_keys: bool = False) -> dict[str, list]:
    """The CIFAR-100 python layout under ``root/cifar-100-python`` with ``PER_CLASS`` images of every class, rows
    interleaved across classes (as in the real files); returns each fine id's raw images, ``train`` then ``test``."""
    d = root / "cifar-100-python"
    d.mkdir(parents=True)
    images: dict[int, list] = {c: [] for c in range(100)}
    for split, (f, n) in enumerate(zip(("train", "test"), PER_CLASS)):
        rows, labels = [], []
        for k in range(n):
            for c in range(100):
                rows.append(cifar_image(c, k, split))
                labels.append(c)
                images[c].append(rows[-1])
        dump_pickle(d / f, {"filenames": [f"{i}.png" for i in range(len(rows))], "batch_label": f"{f} batch",
                            "fine_labels": labels, "coarse_labels": [c // 5 for c in labels], "data": np.stack(rows)},
                    bytes_keys)
    dump_pickle(d / "meta", {"fine_label_names": names, "coarse_label_names": [f"s{i}" for i in range(20)]}, bytes_keys)
    return {names[c]: images[c] for c in range(100)}


def _paper_data(folder: Path) -> dict[str, str]:
    write_cifar100(folder)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
