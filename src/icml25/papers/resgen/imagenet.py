"""The paper's data for ResGen: ImageNet images from a user's folder, cut into RGB patches for the RVQ tokenizer.

Nothing is downloaded and torchvision is not needed: the images are read with Pillow from torchvision's
``ImageFolder`` layout (:data:`LAYOUT`), as the ILSVRC2012 train (and val) archives are usually unpacked, and
preprocessed as class-conditional ImageNet generation preprocesses them: ADM's ``center_crop_arr``
(openai/guided-diffusion, ``image_datasets.py``; also used by DiT and MAR and by the ImageNet 256 FID reference
batch): halve the image with PIL's box filter while its shorter side is at least twice ``image_size``, resize
bicubically so that the shorter side is ``image_size``, take the centre square. The paper then tokenises 256-pixel
images with a trained RQ-VAE (kakaobrain/rq-vae-transformer); we have no such weights, so the row's own
:class:`~icml25.papers.resgen.rvq.ResidualVQ` quantises ``patch`` x ``patch`` RGB pixel patches of small images
instead (a 32-pixel image in 4-pixel patches gives the paper's code length L = 64).

* :func:`list_image_folder`: the image files of the first ``n_classes`` class folders (sorted wnids) of a split.
* :func:`load_image`: one image, (3, image_size, image_size) float32 in [0, 1].
* :func:`load_imagenet`: the images of :func:`list_image_folder`, stacked, with their labels.
* :func:`rgb_to_patches` / :func:`patches_to_rgb`: (N, 3, S, S) images <-> (N, L, 3 p p) patch vectors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from icml25.common.images import class_folders, class_images

SPLITS = ("train", "val")
"""Split folders :func:`list_image_folder` reads (the paper trains and computes FID statistics on ``train``)."""
LAYOUT = ("torchvision's ImageFolder layout <data_dir>/<split>/<wnid>/*.JPEG (split train, optionally val): one "
          "folder per ImageNet-1k class named by its wnid (n01440764, ...; class i = the i-th folder in sorted "
          "order), holding that class's images")


def list_image_folder(data_dir: str | Path, split: str = "train", n_classes: int | None = None,
                      images_per_class: int | None = None) -> tuple[list[Path], Tensor, list[str]]:
    """The image files under ``data_dir`` in :data:`LAYOUT`, without reading them.

    Args:
        data_dir: the ImageNet folder (holding ``train/``). split: ``train`` or ``val``.
        n_classes: keep the first ``n_classes`` wnid folders in sorted order (None: all).
        images_per_class: keep the first ``images_per_class`` files of each kept folder, sorted by name (None: all).

    Returns:
        the image paths (class by class), their labels (N,) int64 (the folder's index among the kept sorted wnid
        folders) and the kept wnids.

    Raises:
        FileNotFoundError: ``<data_dir>/<split>`` is not a folder, holds fewer than ``n_classes`` class folders, or
            a kept class folder holds no image. ValueError: unknown split, or a count below 1.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    for name, value in (("n_classes", n_classes), ("images_per_class", images_per_class)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    folder = Path(data_dir).expanduser() / split
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} not found: expected the ImageNet images in {LAYOUT}")
    wnids = class_folders(folder)
    if not wnids or (n_classes is not None and len(wnids) < n_classes):
        raise FileNotFoundError(f"{folder} holds {len(wnids)} class folders, need {n_classes or 1}: expected "
                                f"{LAYOUT}")
    wnids = wnids[:n_classes]
    paths: list[Path] = []
    labels: list[int] = []
    for i, w in enumerate(wnids):
        files = class_images(folder, w)
        if not files:
            raise FileNotFoundError(f"no images (*.JPEG, *.jpg, *.png) in {folder / w}: expected {LAYOUT}")
        files = files[:images_per_class]
        paths += files
        labels += [i] * len(files)
    return paths, torch.tensor(labels, dtype=torch.long), wnids


def load_image(path: str | Path, image_size: int) -> Tensor:
    """One image preprocessed by ADM's ``center_crop_arr``: RGB; halved with ``Image.BOX`` while the shorter side
    is >= 2 ``image_size``; resized with ``Image.BICUBIC`` by ``image_size / shorter side`` (each side rounded);
    the centre ``image_size`` square (offsets ``(size - image_size) // 2``); pixel / 255, CHW float32.

    Raises:
        FileNotFoundError: no such file. ValueError: ``image_size`` < 1.
    """
    from PIL import Image

    if not isinstance(image_size, (int, np.integer)) or image_size < 1:
        raise ValueError(f"image_size must be a positive int, got {image_size!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image {path} not found")
    with Image.open(path) as im:
        im = im.convert("RGB")
        while min(*im.size) >= 2 * image_size:
            im = im.resize(tuple(x // 2 for x in im.size), resample=Image.BOX)
        scale = image_size / min(*im.size)
        im = im.resize(tuple(round(x * scale) for x in im.size), resample=Image.BICUBIC)
        a = np.asarray(im, dtype=np.uint8)
    top, left = (a.shape[0] - image_size) // 2, (a.shape[1] - image_size) // 2
    a = a[top:top + image_size, left:left + image_size]
    return torch.from_numpy(a.transpose(2, 0, 1).astype(np.float32) / 255.0)


def load_imagenet(data_dir: str | Path, image_size: int, split: str = "train", n_classes: int | None = None,
                  images_per_class: int | None = None) -> tuple[Tensor, Tensor, list[str]]:
    """The images of :func:`list_image_folder` through :func:`load_image`: (N, 3, S, S) float32 in [0, 1], their
    labels (N,) int64 and the wnids."""
    paths, labels, wnids = list_image_folder(data_dir, split, n_classes, images_per_class)
    return torch.stack([load_image(p, image_size) for p in paths]), labels, wnids


def rgb_to_patches(images: np.ndarray | Tensor, patch: int) -> np.ndarray:
    """(N, 3, S, S) images -> (N, (S/p)^2, 3 p p) patch vectors in raster order (channel-major inside a patch)."""
    x = np.asarray(images)
    if x.ndim != 4:
        raise ValueError(f"images must have shape (N, C, H, W), got {x.shape}")
    n, c, h, w = x.shape
    if not isinstance(patch, (int, np.integer)) or patch < 1 or h % patch or w % patch:
        raise ValueError(f"patch must be a positive int dividing H={h} and W={w}, got {patch!r}")
    g = x.reshape(n, c, h // patch, patch, w // patch, patch).transpose(0, 2, 4, 1, 3, 5)
    return g.reshape(n, (h // patch) * (w // patch), c * patch * patch)


def patches_to_rgb(patches: np.ndarray | Tensor, patch: int, side: int, channels: int = 3) -> np.ndarray:
    """Inverse of :func:`rgb_to_patches`: (N, L, C p p) -> (N, C, side, side)."""
    x = np.asarray(patches)
    if not isinstance(patch, (int, np.integer)) or patch < 1 or side % patch:
        raise ValueError(f"patch must be a positive int dividing side={side}, got {patch!r}")
    g = side // patch
    if x.ndim != 3 or x.shape[1:] != (g * g, channels * patch * patch):
        raise ValueError(f"patches must have shape (N, {g * g}, {channels * patch * patch}), got {x.shape}")
    y = x.reshape(len(x), g, g, channels, patch, patch).transpose(0, 3, 1, 4, 2, 5)
    return y.reshape(len(x), channels, side, side)
