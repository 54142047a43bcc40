"""resgen: ImageNet images in torchvision's ImageFolder layout (``train/<wnid>/*.JPEG``), random RGB JPEGs of
varied sizes (made-up pixels; the real files' names and layout)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGES = {0: 6, 1: 6, 2: 2}
"""Images per class folder that :func:`write_paper_data` writes (the smoke preset reads the first 2 classes x 6)."""


def wnid(i: int) -> str:
    """A made-up wnid whose sorted position is ``i`` (the real ones are n01440764 ...)."""
    return f"n{1440764 + 1000 * i:08d}"


def write_jpeg(path: Path, rng: np.random.Generator, size: tuple[int, int]) -> Path:
    """A random RGB JPEG of ``size`` (width, height)."""
    from PIL import Image

    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path, format="JPEG")
    return path


def write_image_folder(folder: Path, images: dict[int, int], split: str = "train", seed: int = 0) -> Path:
    """``<split>/<wnid(i)>/`` with ``images[i]`` random JPEGs named as ImageNet's train files
    (``<wnid>_<n>.JPEG``); returns ``folder``."""
    rng = np.random.default_rng(seed)
    n = 0
    for i in sorted(images):
        (folder / split / wnid(i)).mkdir(parents=True, exist_ok=True)
        for _ in range(images[i]):
            n += 1
            write_jpeg(folder / split / wnid(i) / f"{wnid(i)}_{n}.JPEG", rng, (20 + 7 * (n % 3), 17 + 5 * (n % 2)))
    return folder


def write_paper_data(folder: Path) -> dict[str, str]:
    """:data:`IMAGES` in ``train/``; the ``--set`` values."""
    write_image_folder(folder, IMAGES)
    return {"data_dir": str(folder)}


FILES = {"paper_data": write_paper_data}
