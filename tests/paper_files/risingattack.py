"""risingattack: ImageNet-1k validation images in torchvision's ImageFolder layout (``val/<wnid>/*.JPEG``, all 1000
wnid folders) and a torchvision ``state_dict`` file of a randomly initialised ResNet-18 (the weights' format; made-up
values)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from icml25.papers.risingattack.imagenet import ImageNetClassifier

LABEL = 7
"""The class every written image belongs to (the written model predicts it for any image)."""


def wnid(i: int) -> str:
    """A made-up wnid whose sorted position is ``i`` (the real ones are n01440764 ...)."""
    return f"n{1440764 + 1000 * i:08d}"


def torchvision_state_dict(model: ImageNetClassifier) -> dict[str, torch.Tensor]:
    """``model``'s parameters under torchvision's names (``fc.*`` / ``classifier.*`` for the head)."""
    head = "classifier" if model.arch == "densenet121" else "fc"
    out = {}
    for key, value in model.state_dict().items():
        if key.startswith("body."):
            out[key[5:]] = value.clone()
        elif key.startswith("head."):
            out[head + key[4:]] = value.clone()
    return out


def write_weights(path: Path, arch: str = "resnet18", label: int | None = LABEL, seed: int = 0) -> Path:
    """A random ``arch`` saved as torchvision saves a state_dict; with ``label``, its head is scaled up and
    biased so that it predicts ``label`` for every image (other logits still depend on the input)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ImageNetClassifier(arch).eval()
    state = torchvision_state_dict(model)
    if label is not None:
        state["fc.weight"] *= 30.0
        state["fc.bias"].zero_()
        state["fc.bias"][label] = 3.0
    torch.save(state, path)
    return path


def write_jpeg(path: Path, rng: np.random.Generator, size: tuple[int, int] = (80, 60)) -> Path:
    """A random RGB JPEG of ``size`` (width, height)."""
    from PIL import Image

    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path, format="JPEG")
    return path


def write_imagenet_val(folder: Path, images: dict[int, int], seed: int = 0) -> Path:
    """``val/<wnid>/`` for all 1000 classes, with ``images[i]`` random JPEGs (``ILSVRC2012_val_<n>.JPEG``) in class
    ``i``'s folder; returns ``folder``."""
    rng = np.random.default_rng(seed)
    val = folder / "val"
    n = 0
    for i in range(1000):
        (val / wnid(i)).mkdir(parents=True, exist_ok=True)
        for _ in range(images.get(i, 0)):
            n += 1
            write_jpeg(val / wnid(i) / f"ILSVRC2012_val_{n:08d}.JPEG", rng, (60 + 10 * (n % 3), 50 + 7 * (n % 2)))
    return folder


def write_paper_data(folder: Path) -> dict[str, str]:
    """Four images of class ``LABEL`` and ResNet-18 weights that predict it; the ``--set`` values."""
    write_imagenet_val(folder, {LABEL: 4})
    weights = write_weights(folder / "resnet18.pth")
    return {"data_dir": str(folder), "weights_path": str(weights), "arch": "resnet18"}


FILES = {"paper_data": write_paper_data}
