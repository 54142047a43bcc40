"""ret_fhd: CIFAR-10's python version (``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``: Python 2
pickles, dicts with bytes keys, ``b"data"`` (N, 3072) uint8 in channel-major order)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np


def dump_pickle(path: Path, obj: dict) -> None:
    """A pickle as the official files are written (protocol 2, the keys as given: bytes in the real files)."""
    with path.open("wb") as fh:
        pickle.dump(obj, fh, protocol=2)


def cifar_images(n: int, offset: int) -> np.ndarray:
    """``n`` distinct (n, 3072) uint8 rows: pixel j of image i is ``(offset + 7 i + j) % 256``."""
    return ((offset + 7 * np.arange(n)[:, None] + np.arange(3072)[None, :]) % 256).astype(np.uint8)


def write_cifar10(root: Path, per_batch: int = 2, n_test: int = 2) -> tuple[list, list, np.ndarray, np.ndarray]:
    """The official CIFAR-10 layout under ``root/cifar-10-batches-py``; returns the raw rows and labels."""
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    raw, labels = [], []
    for b in range(1, 6):
        X = cifar_images(per_batch, 11 * b)
        y = [(b + i) % 10 for i in range(per_batch)]
        dump_pickle(d / f"data_batch_{b}", {b"batch_label": f"training batch {b} of 5".encode(), b"labels": y,
                                            b"data": X, b"filenames": [b"x.png"] * per_batch})
        raw.append(X)
        labels.append(y)
    Xte = cifar_images(n_test, 200)
    yte = np.arange(n_test) % 10
    dump_pickle(d / "test_batch", {b"batch_label": b"testing batch 1 of 1", b"labels": yte.tolist(), b"data": Xte,
                                   b"filenames": [b"t.png"] * n_test})
    dump_pickle(d / "batches.meta", {b"label_names": [f"c{i}".encode() for i in range(10)],
                                     b"num_cases_per_batch": 10000, b"num_vis": 3072})
    return raw, labels, Xte, yte


def _paper_data(folder: Path) -> dict[str, str]:
    write_cifar10(folder, per_batch=40, n_test=40)  # 200 training images: the smoke preset's 6 clients get >= 10
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
