"""generative_bilevel: MNIST's four official IDX files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``), written byte by byte as LeCun's format prescribes
(big-endian magic 2051 / 2049, then big-endian uint32 sizes, then unsigned bytes row-major), plain or gzipped."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np


def write_idx(path: Path, magic: int, data: np.ndarray, gz: bool = False) -> Path:
    """Write ``data`` (uint8) as an IDX file: magic, sizes (big-endian uint32), bytes; ``gz``: as ``<name>.gz``."""
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in data.shape)
    raw = header + data.astype(np.uint8).tobytes()
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def write_mnist(root: Path, n_train: int, n_test: int, gz: bool = False, rows: int = 28, cols: int = 28,
                seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Random uint8 images and digit labels of both splits written under ``root`` with the official names;
    returns ``{split: (images, labels)}``."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        images = rng.integers(0, 256, (n, rows, cols), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        write_idx(root / f"{prefix}-images-idx3-ubyte", 2051, images, gz)
        write_idx(root / f"{prefix}-labels-idx1-ubyte", 2049, labels, gz)
        out[split] = (images, labels)
    return out


def _paper_data(folder: Path) -> dict[str, str]:
    """torchvision's layout (``MNIST/raw/``, gzipped) with the smoke presets' 300 training and 100 + 100 t10k
    images."""
    write_mnist(folder / "MNIST" / "raw", n_train=300, n_test=200, gz=True)
    return {"data_dir": str(folder)}


FILES = {"paper_data_schedule": _paper_data, "paper_data_schedule_zo": _paper_data}
