"""Image folders in torchvision's ``ImageFolder`` layout (``<split>/<class>/<image>``), read without torchvision.

Several papers read ImageNet from a user's folder in that layout: one folder per class, named by its wnid
(``n01440764``, ...), class i being the i-th folder in sorted order. These helpers list the folders and their
image files; each paper keeps its own checks, subsets and preprocessing.
"""

from __future__ import annotations

from pathlib import Path

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")
"""Image files read from a class folder (case-insensitive; ImageNet's are ``*.JPEG``)."""


def class_folders(folder: Path) -> list[str]:
    """The class folder names under ``folder``, sorted (class i = the i-th)."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def class_images(folder: Path, name: str) -> list[Path]:
    """The image files of class folder ``folder / name``, sorted by file name."""
    return sorted(f for f in (folder / name).iterdir() if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
