"""MNIST from a user's folder, for the noise-schedule experiments on the paper's data (nothing is downloaded).

The paper's Scenario 2 trains a diffusion model on MNIST (the official ``MNISTDiffusion`` scripts of
afmsaif/bilevel_diffusion). :func:`load_mnist` reads the four official IDX files, plain or gzipped, from a folder
laid out as LeCun's site distributes them or as torchvision writes them (``<root>/MNIST/raw/``), parsing the IDX
header itself (no torchvision needed).

IDX format (LeCun, "THE MNIST DATABASE", file-format section): a big-endian header of a 4-byte magic number
``0x00 0x00 <type> <ndim>`` (type ``0x08`` = unsigned byte), then ``ndim`` big-endian uint32 sizes, then the data
in row-major (C) order. MNIST images have magic 2051 (``0x00000803``, 3 dims N x 28 x 28), labels magic 2049
(``0x00000801``, 1 dim N).

Conversion (the official ``MNISTDiffusion`` data pipeline: ``transforms.ToTensor()`` then
``transforms.Normalize([0.5], [0.5])`` at ``image_size=28``): a pixel p in 0..255 becomes ``p / 255 * 2 - 1`` in
[-1, 1]; no resizing; each image is flattened row-major to ``rows * cols`` (784) values, because the schedule
experiments train an MLP on (N, d) points.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import torch

MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
"""The official file names of each split (each may also end in ``.gz``)."""
IDX_IMAGES_MAGIC = 2051
"""Magic number of an IDX file of unsigned-byte images (``0x00000803``: 3 dimensions)."""
IDX_LABELS_MAGIC = 2049
"""Magic number of an IDX file of unsigned-byte labels (``0x00000801``: 1 dimension)."""
MNIST_SPLITS = tuple(MNIST_FILES)


class MNISTFormatError(ValueError):
    """A missing, truncated or malformed MNIST IDX file (the message names the file)."""


def find_mnist_file(data_dir: str | Path, name: str) -> Path:
    """The path of official file ``name`` under ``data_dir``: ``name`` or ``name.gz``, directly in ``data_dir``,
    in ``data_dir/raw`` or in ``data_dir/MNIST/raw`` (torchvision's layout); raises :class:`MNISTFormatError`
    naming the file and the places looked at when none exists."""
    root = Path(data_dir)
    places = (root, root / "raw", root / "MNIST" / "raw")
    for folder in places:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    raise MNISTFormatError(f"MNIST file {name!r} (or {name}.gz) not found in {', '.join(str(p) for p in places)}")


def read_idx(path: str | Path, magic: int | None = None) -> np.ndarray:
    """An IDX file of unsigned bytes as a uint8 array of the header's shape (gzip when the name ends in ``.gz``).

    ``magic``: the expected magic number (2051 images, 2049 labels; None: any unsigned-byte IDX). Raises
    :class:`MNISTFormatError` naming ``path`` for a wrong magic number, a type other than unsigned byte, or a data
    length that differs from the header's sizes.
    """
    path = Path(path)
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:  # a missing file, or a damaged gzip stream
        raise MNISTFormatError(f"cannot read MNIST file {path}: {exc}") from exc
    if len(raw) < 4:
        raise MNISTFormatError(f"MNIST file {path} is too short for an IDX header ({len(raw)} bytes)")
    found = int.from_bytes(raw[:4], "big")
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08 or (magic is not None and found != magic):
        want = f"{magic} (0x{magic:08x})" if magic is not None else "0x000008NN (unsigned bytes)"
        raise MNISTFormatError(f"MNIST file {path} has magic number {found} (0x{found:08x}), expected {want}")
    ndim = raw[3]
    if ndim < 1 or len(raw) < 4 + 4 * ndim:
        raise MNISTFormatError(f"MNIST file {path}: an IDX header with {ndim} dimensions does not fit its "
                               f"{len(raw)} bytes")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    size = int(np.prod(shape, dtype=np.int64))
    body = len(raw) - 4 - 4 * ndim
    if body != size:
        raise MNISTFormatError(f"MNIST file {path}: the header's shape {shape} needs {size} data bytes, the file "
                               f"holds {body}")
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape).copy()


def images_to_unit_range(images: np.ndarray) -> torch.Tensor:
    """uint8 images (N, rows, cols) -> float32 (N, rows * cols) in [-1, 1]: ``p / 255 * 2 - 1``, flattened
    row-major (the official ToTensor + Normalize(0.5, 0.5), no resizing)."""
    x = torch.from_numpy(np.asarray(images, dtype=np.uint8).reshape(len(images), -1).astype(np.float32))
    return x / 255.0 * 2.0 - 1.0


def load_mnist(data_dir: str | Path, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST ``split`` ("train": 60,000 images, "test": the 10,000 of t10k) from the official IDX files.

    Args:
        data_dir: a folder holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
            ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``), directly, in
            ``raw/`` or in ``MNIST/raw/`` (torchvision's layout).
        split: "train" or "test".

    Returns:
        ``(images, labels)``: float32 (N, rows * cols) = (N, 784) in [-1, 1] (``p / 255 * 2 - 1``, row-major, no
        resizing) and int64 (N,) digits, on the CPU, in the files' order.

    Raises:
        MNISTFormatError: a missing or malformed file (named), or image and label counts that differ.
        ValueError: an unknown ``split``.
    """
    if split not in MNIST_FILES:
        raise ValueError(f"split must be one of {MNIST_SPLITS}, got {split!r}")
    img_name, lab_name = MNIST_FILES[split]
    img_path, lab_path = find_mnist_file(data_dir, img_name), find_mnist_file(data_dir, lab_name)
    images = read_idx(img_path, IDX_IMAGES_MAGIC)
    labels = read_idx(lab_path, IDX_LABELS_MAGIC)
    if images.ndim != 3:
        raise MNISTFormatError(f"MNIST file {img_path} has {images.ndim} dimensions, expected 3 (N, rows, cols)")
    if labels.ndim != 1:
        raise MNISTFormatError(f"MNIST file {lab_path} has {labels.ndim} dimensions, expected 1 (N,)")
    if len(images) != len(labels):
        raise MNISTFormatError(f"MNIST files {img_path} and {lab_path} hold {len(images)} images and "
                               f"{len(labels)} labels")
    if len(images) == 0:
        raise MNISTFormatError(f"MNIST file {img_path} holds no images")
    if labels.max() > 9:
        raise MNISTFormatError(f"MNIST file {lab_path} holds label {int(labels.max())}, expected digits 0..9")
    return images_to_unit_range(images), torch.from_numpy(labels.astype(np.int64))
