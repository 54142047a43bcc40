"""single_transformer_lmm: a LLaVA-1.5 instruction JSON (list of {id, image, conversations}) with its JPEG images under
``coco/train2017/`` of the image folder, and a teacher features file written by
``llava.compute_teacher_features`` with a stub encoder (made-up values; the real one is CLIP-ViT-L)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from icml25.papers.single_transformer_lmm.llava import compute_teacher_features

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 60, 220)}
N_IMAGES = 12
"""Images written; each has three one-word-answer turns (and one longer reply, which is not read)."""


class StubEncoder:
    """Stands in for open_clip's model: ``encode_image`` returns (B, 1 + 16, 6) tokens, a class token of zeros and
    the 4 x 4 average-pooled pixels with their squares (the real encoder returns CLIP-ViT-L's patch tokens)."""

    def __init__(self) -> None:
        self.calls: list[torch.Tensor] = []

    def encode_image(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.append(x.clone())
        pooled = F.adaptive_avg_pool2d(x, 4).flatten(2).transpose(1, 2)  # (B, 16, 3)
        tokens = torch.cat([pooled, pooled ** 2], -1)
        return torch.cat([torch.zeros(len(x), 1, 6), tokens], 1)


def image_name(i: int) -> str:
    return f"coco/train2017/{i:012d}.jpg"


def write_llava(folder: Path, n_images: int = N_IMAGES, seed: int = 0) -> Path:
    """JPEGs (a coloured square on noise, some not square) and ``llava_v1_5_mix_tiny.json``; returns the JSON."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    (folder / "coco" / "train2017").mkdir(parents=True, exist_ok=True)
    names = list(COLOURS)
    records = []
    for i in range(n_images):
        colour = names[i % 3]
        w, h = (48, 40) if i % 2 else (40, 40)
        pix = rng.integers(0, 60, (h, w, 3), dtype=np.uint8)
        pix[8:32, 8:32] = COLOURS[colour]
        Image.fromarray(pix).save(folder / image_name(i), format="JPEG", quality=95)
        suffix = "\nAnswer the question using a single word or phrase."
        records.append({"id": f"{i:012d}", "image": image_name(i), "conversations": [
            {"from": "human", "value": f"<image>\nWhat color is the square?{suffix}"},
            {"from": "gpt", "value": colour.capitalize()},
            {"from": "human", "value": f"Is the square {names[(i + i // 3) % 3]}?{suffix}"},
            {"from": "gpt", "value": "Yes" if (i + i // 3) % 3 == i % 3 else "No"},
            {"from": "human", "value": "What is in the picture?"},
            {"from": "gpt", "value": "Square."},
            {"from": "human", "value": "Describe the image in detail."},
            {"from": "gpt", "value": f"A {colour} square on a dark, noisy background."},
        ]})
    records.append({"id": "text-only", "conversations": [{"from": "human", "value": "Hello?"},
                                                         {"from": "gpt", "value": "Hi."}]})
    path = folder / "llava_v1_5_mix_tiny.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path


def write_paper_data(folder: Path) -> dict[str, str]:
    """The JSON, its images and the stub encoder's features file; the ``--set`` values."""
    data_path = write_llava(folder)
    feats = compute_teacher_features(data_path, folder, StubEncoder(), folder / "clip_features.pt", size=32,
                                     encoder_name="stub")
    return {"data_path": str(data_path), "image_folder": str(folder), "teacher_features": str(feats)}


FILES = {"paper_data": write_paper_data}
