"""The paper's data for RisingAttacK: ImageNet-1k validation images and pretrained classifiers from a user's files.

Nothing is downloaded and torchvision is not needed: the images are read with Pillow and preprocessed as
torchvision's ImageNet evaluation transform (``Resize(256)``, ``CenterCrop(224)``, ``ToTensor()`` on PIL images),
and the classifiers are ResNet-18/50 and DenseNet-121 written here with torchvision's module names, so a torchvision
``state_dict`` file (e.g. ``resnet50-0676ba61.pth``, ``densenet121-a639ec97.pth`` from download.pytorch.org, or
``torch.save(model.state_dict(), path)`` of a ``torchvision.models.<arch>``) loads into them unchanged. The ImageNet
normalisation is inside :class:`ImageNetClassifier`, so attacks work on pixels in [0, 1]; its ``features`` (the
pooled penultimate layer) and linear ``head`` are what QuadAttacK needs.

* :func:`list_imagenet_val`: the validation images in torchvision's ``ImageFolder`` layout
  ``<data_dir>/val/<wnid>/*.JPEG`` (as ``torchvision.datasets.ImageNet`` leaves them after its ``val`` preparation,
  or as the common ``valprep.sh`` script arranges the official ``ILSVRC2012_img_val.tar``); class ``i`` is the
  ``i``-th wnid folder in sorted order (torchvision's and the pretrained weights' class index).
* :func:`load_imagenet_images`: the evaluation transform, a (N, 3, crop, crop) float tensor in [0, 1].
* :func:`load_classifier`: an architecture built with random weights, then the user's ``state_dict`` loaded.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from icml25.common.images import class_folders, class_images

ARCHS = ("resnet18", "resnet50", "densenet121")
"""Architectures :func:`load_classifier` builds (torchvision's names and parameter names)."""
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LAYOUT = ("torchvision's ImageFolder layout <data_dir>/val/<wnid>/*.JPEG: one folder per ImageNet-1k class named by "
          "its wnid (n01440764, ...; class i = the i-th folder in sorted order), holding that class's validation "
          "images")


# ----------------------------------------------------------------------------- images
def list_imagenet_val(data_dir: str | Path) -> tuple[list[Path], Tensor, list[str]]:
    """The validation images under ``data_dir`` in :data:`LAYOUT`, without reading them.

    Returns:
        the image paths (wnid folders in sorted order, files sorted by name within a folder), their labels (N,)
        int64 (the folder's index among the sorted wnid folders; empty folders count, so a subset of the 50,000
        images keeps the 1000-class index when all 1000 folders are present) and the sorted wnids.

    Raises:
        FileNotFoundError: ``<data_dir>/val`` is not a folder, holds no class folders or no images.
    """
    val = Path(data_dir).expanduser() / "val"
    if not val.is_dir():
        raise FileNotFoundError(f"{val} not found: expected the ImageNet-1k validation images in {LAYOUT}")
    wnids = class_folders(val)
    if not wnids:
        raise FileNotFoundError(f"{val} holds no class folders: expected {LAYOUT}")
    paths: list[Path] = []
    labels: list[int] = []
    for i, w in enumerate(wnids):
        files = class_images(val, w)
        paths += files
        labels += [i] * len(files)
    if not paths:
        raise FileNotFoundError(f"no images (*.JPEG, *.jpg, *.png) in the {len(wnids)} class folders of {val}: "
                                f"expected {LAYOUT}")
    return paths, torch.tensor(labels, dtype=torch.long), wnids


def load_image(path: str | Path, resize: int = 256, crop: int = 224) -> Tensor:
    """One image as torchvision's ImageNet evaluation transform gives it: RGB, the shorter side resized to
    ``resize`` with PIL's bilinear filter (the longer to ``int(resize * long / short)``), the centre
    ``crop`` x ``crop`` (offsets ``int(round((size - crop) / 2))``), then ``ToTensor()`` (pixel / 255, CHW).

    Raises:
        FileNotFoundError: no such file. ValueError: ``crop`` > ``resize`` or not positive.
    """
    from PIL import Image

    if not 0 < crop <= resize:
        raise ValueError(f"need 0 < crop <= resize, got crop={crop}, resize={resize}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image {path} not found")
    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        if w <= h:
            size = (resize, int(resize * h / w))
        else:
            size = (int(resize * w / h), resize)
        if size != (w, h):
            im = im.resize(size, Image.BILINEAR)
        w, h = im.size
        top, left = int(round((h - crop) / 2.0)), int(round((w - crop) / 2.0))
        a = np.asarray(im.crop((left, top, left + crop, top + crop)), dtype=np.uint8)
    return torch.from_numpy(a.transpose(2, 0, 1).astype(np.float32) / 255.0)


def load_imagenet_images(paths: list[Path], resize: int = 256, crop: int = 224) -> Tensor:
    """:func:`load_image` for each path, stacked: (N, 3, crop, crop) float32 in [0, 1]."""
    return torch.stack([load_image(p, resize, crop) for p in paths])


# ----------------------------------------------------------------------------- classifiers
class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)   # stride on the 3x3 (torchvision's v1.5)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU()
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class _ResNetBody(nn.Module):
    """torchvision's ResNet without its ``fc`` (same parameter names)."""

    def __init__(self, block: type[_BasicBlock] | type[_Bottleneck], layers: tuple[int, ...]) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), layers)):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or inplanes != planes * block.expansion:
                down = nn.Sequential(nn.Conv2d(inplanes, planes * block.expansion, 1, stride, bias=False),
                                     nn.BatchNorm2d(planes * block.expansion))
            blocks = [block(inplanes, planes, stride, down)]
            inplanes = planes * block.expansion
            blocks += [block(inplanes, planes, 1, None) for _ in range(n - 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.out_dim = inplanes

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)


class _DenseLayer(nn.Module):
    def __init__(self, n_in: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(n_in)
        self.relu1 = nn.ReLU()
        self.conv1 = nn.Conv2d(n_in, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.relu2 = nn.ReLU()
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, feats: list[Tensor]) -> Tensor:
        out = self.conv1(self.relu1(self.norm1(torch.cat(feats, 1))))
        return self.conv2(self.relu2(self.norm2(out)))


class _DenseBlock(nn.ModuleDict):
    def __init__(self, n_layers: int, n_in: int, growth: int, bn_size: int) -> None:
        super().__init__()
        for i in range(n_layers):
            self[f"denselayer{i + 1}"] = _DenseLayer(n_in + i * growth, growth, bn_size)

    def forward(self, x: Tensor) -> Tensor:
        feats = [x]
        for layer in self.values():
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class _DenseNetBody(nn.Module):
    """torchvision's DenseNet-121 without its ``classifier`` (same parameter names)."""

    def __init__(self, growth: int = 32, blocks: tuple[int, ...] = (6, 12, 24, 16), n_init: int = 64,
                 bn_size: int = 4) -> None:
        super().__init__()
        mods: OrderedDict[str, nn.Module] = OrderedDict(
            conv0=nn.Conv2d(3, n_init, 7, 2, 3, bias=False), norm0=nn.BatchNorm2d(n_init), relu0=nn.ReLU(),
            pool0=nn.MaxPool2d(3, 2, 1))
        n = n_init
        for i, n_layers in enumerate(blocks):
            mods[f"denseblock{i + 1}"] = _DenseBlock(n_layers, n, growth, bn_size)
            n += n_layers * growth
            if i != len(blocks) - 1:
                mods[f"transition{i + 1}"] = nn.Sequential(OrderedDict(
                    norm=nn.BatchNorm2d(n), relu=nn.ReLU(), conv=nn.Conv2d(n, n // 2, 1, bias=False),
                    pool=nn.AvgPool2d(2, 2)))
                n //= 2
        mods["norm5"] = nn.BatchNorm2d(n)
        self.features = nn.Sequential(mods)
        self.out_dim = n

    def forward(self, x: Tensor) -> Tensor:
        x = nn.functional.relu(self.features(x))
        return torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)


_HEAD = {"resnet18": "fc", "resnet50": "fc", "densenet121": "classifier"}
# torchvision's released DenseNet files name 'norm.1' what the modules call 'norm1' (torchvision remaps it too)
_DENSENET_OLD = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|"
                           r"running_var|num_batches_tracked))$")


class ImageNetClassifier(nn.Module):
    """A torchvision-compatible ImageNet classifier on pixels in [0, 1] (the normalisation is inside).

    ``features(x)`` is the pooled penultimate layer, ``head`` the final ``nn.Linear`` (``fc`` / ``classifier`` in
    torchvision's names), ``forward(x) = head(features(x))``.

    Args:
        arch: one of :data:`ARCHS`. n_classes: outputs of the head (1000 for ImageNet-1k).
    """

    def __init__(self, arch: str, n_classes: int = 1000) -> None:
        super().__init__()
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        self.arch = arch
        self.body = (_DenseNetBody() if arch == "densenet121" else
                     _ResNetBody(_BasicBlock, (2, 2, 2, 2)) if arch == "resnet18" else
                     _ResNetBody(_Bottleneck, (3, 4, 6, 3)))
        self.head = nn.Linear(self.body.out_dim, n_classes)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    @property
    def n_classes(self) -> int:
        return self.head.out_features

    def features(self, x: Tensor) -> Tensor:
        return self.body((x - self.mean) / self.std)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))

    def load_torchvision_state_dict(self, state: dict[str, Tensor]) -> None:
        """Load a torchvision ``<arch>`` state_dict (strict: every parameter and buffer, no extra key)."""
        head = _HEAD[self.arch]
        mapped = {}
        for key, value in state.items():
            if self.arch == "densenet121":
                m = _DENSENET_OLD.match(key)
                key = m.group(1) + m.group(2) if m else key
            if key.startswith(head + "."):
                mapped["head." + key[len(head) + 1:]] = value
            else:
                mapped["body." + key] = value
        mapped["mean"], mapped["std"] = self.mean, self.std
        self.load_state_dict(mapped, strict=True)


def load_classifier(arch: str, weights_path: str | Path) -> ImageNetClassifier:
    """``arch`` with the weights of a torchvision ``state_dict`` file (``torch.load(..., weights_only=True)``), in
    eval mode; the number of classes is read from the file's head.

    Raises:
        FileNotFoundError: no such file. ValueError: unknown ``arch``, or the file is not a state_dict of ``arch``.
    """
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    path = Path(weights_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"weights file {path} not found: expected a torchvision {arch} state_dict (.pth)")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    bias = state.get(f"{_HEAD[arch]}.bias") if isinstance(state, dict) else None
    if bias is None:
        raise ValueError(f"{path} is not a torchvision {arch} state_dict (no {_HEAD[arch]}.bias)")
    model = ImageNetClassifier(arch, int(bias.shape[0]))
    try:
        model.load_torchvision_state_dict(state)
    except RuntimeError as err:
        detail = " ".join(line.strip() for line in str(err).splitlines()[1:])[:300]
        raise ValueError(f"{path} does not match torchvision's {arch}: {detail}") from None
    return model.eval()
