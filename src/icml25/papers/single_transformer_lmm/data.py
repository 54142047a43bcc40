"""Procedural shape scenes and templated single-token questions (the mini reproduction's data).

A 32x32 RGB scene has 1-4 shapes (circle/square/triangle, 4 colours, 2 sizes) on distinct cells
of a 2x2 grid. Question templates (answer is one token):
  colour-at-cell, shape-at-cell ("none" if empty), count-of-colour,
  "is there a <size> <colour> <shape>?" (fine-grained: size and conjunction matter).
Sequence layout: [image placeholders x P] [question tokens, PAD to 4] [ANS]; the answer is predicted at ANS.
"""

from __future__ import annotations

import numpy as np
import torch

COLOURS = np.array([[1.0, 0.1, 0.1], [0.1, 0.9, 0.1], [0.15, 0.3, 1.0], [1.0, 0.9, 0.1]], dtype=np.float32)
SPECIALS = ["PAD", "IMG", "ANS", "Q_COLOUR", "Q_SHAPE", "Q_COUNT", "Q_EXIST"]
WORDS = SPECIALS + [f"cell{i}" for i in range(4)] + [f"col{i}" for i in range(4)] + \
    [f"shape{i}" for i in range(3)] + [f"size{i}" for i in range(2)] + [f"n{i}" for i in range(5)] + \
    ["yes", "no", "none"]
TOK = {w: i for i, w in enumerate(WORDS)}
VOCAB = len(WORDS)
IMAGE_TOKEN_ID = TOK["IMG"]
Q_LEN = 4


def render_scenes(n: int, rng: np.random.Generator, img: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` scenes. Returns pixels (n, 3, img, img) and attributes (n, 4 cells, 3) with
    (colour, shape, size) per cell and -1 where a cell is empty."""
    if n <= 0 or img % 2 or img < 16:
        raise ValueError(f"need n > 0 and an even img >= 16, got n={n}, img={img}")
    cell = img // 2
    k = rng.integers(1, 5, n)
    occ = np.argsort(rng.random((n, 4)), 1) < k[:, None]
    attrs = np.stack([rng.integers(0, 4, (n, 4)), rng.integers(0, 3, (n, 4)), rng.integers(0, 2, (n, 4))], -1)
    attrs[~occ] = -1
    yy, xx = np.mgrid[0:cell, 0:cell].astype(np.float32) + 0.5
    c0 = cell / 2
    masks = {}
    for shape in range(3):
        for size in range(2):
            r = cell * (0.22 if size == 0 else 0.42)
            if shape == 0:
                m = (yy - c0) ** 2 + (xx - c0) ** 2 <= r ** 2
            elif shape == 1:
                m = (np.abs(yy - c0) <= r * 0.85) & (np.abs(xx - c0) <= r * 0.85)
            else:
                m = (yy >= c0 - r) & (yy <= c0 + r) & (np.abs(xx - c0) <= (yy - (c0 - r)) / 2)
            masks[shape, size] = m.astype(np.float32)
    pix = np.zeros((n, 3, img, img), np.float32)
    for c in range(4):
        oy, ox = (c // 2) * cell, (c % 2) * cell
        for shape in range(3):
            for size in range(2):
                sel = (attrs[:, c, 1] == shape) & (attrs[:, c, 2] == size)
                if sel.any():
                    col = COLOURS[attrs[sel, c, 0]]  # (m, 3)
                    pix[sel, :, oy:oy + cell, ox:ox + cell] = col[:, :, None, None] * masks[shape, size]
    pix += rng.normal(0, 0.05, pix.shape).astype(np.float32)
    return pix, attrs


def make_questions(attrs: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One random question per scene. Returns question tokens (n, Q_LEN), answer ids (n,), type (n,) in 0..3
    (0 colour-at-cell, 1 shape-at-cell, 2 count-of-colour, 3 exists size+colour+shape: fine-grained)."""
    n = len(attrs)
    qtype = rng.integers(0, 4, n)
    cell = rng.integers(0, 4, n)
    colour = rng.integers(0, 4, n)
    at = attrs[np.arange(n), cell]  # (n, 3)
    q = np.full((n, Q_LEN), TOK["PAD"], np.int64)
    ans = np.zeros(n, np.int64)
    none = TOK["none"]
    # colour at cell
    s = qtype == 0
    q[s, 0], q[s, 1] = TOK["Q_COLOUR"], TOK["cell0"] + cell[s]
    ans[s] = np.where(at[s, 0] >= 0, TOK["col0"] + at[s, 0], none)
    s = qtype == 1
    q[s, 0], q[s, 1] = TOK["Q_SHAPE"], TOK["cell0"] + cell[s]
    ans[s] = np.where(at[s, 1] >= 0, TOK["shape0"] + at[s, 1], none)
    s = qtype == 2
    q[s, 0], q[s, 1] = TOK["Q_COUNT"], TOK["col0"] + colour[s]
    ans[s] = TOK["n0"] + (attrs[s, :, 0] == colour[s, None]).sum(1)
    # exists: half the time ask about a present object with one attribute possibly perturbed
    s = np.flatnonzero(qtype == 3)
    occ_cells = np.argsort(-(attrs[s, :, 0] >= 0).astype(float) + rng.random((len(s), 4)) * 0.5, 1)[:, 0]
    target = attrs[s, occ_cells].copy()
    flip = rng.integers(0, 4, len(s))  # 0: keep, 1: size, 2: colour, 3: shape
    target[flip == 1, 2] = 1 - target[flip == 1, 2]
    target[flip == 2, 0] = (target[flip == 2, 0] + rng.integers(1, 4, (flip == 2).sum())) % 4
    target[flip == 3, 1] = (target[flip == 3, 1] + rng.integers(1, 3, (flip == 3).sum())) % 3
    q[s, 0] = TOK["Q_EXIST"]
    q[s, 1], q[s, 2], q[s, 3] = TOK["size0"] + target[:, 2], TOK["col0"] + target[:, 0], TOK["shape0"] + target[:, 1]
    present = (attrs[s][:, :, None, :] == target[:, None, None, :]).all(-1).any((1, 2))
    ans[s] = np.where(present, TOK["yes"], TOK["no"])
    return q, ans, qtype


def make_vqa(n: int, seed: int, patch: int = 8, img: int = 32) -> dict:
    """Tensors for ``n`` (scene, question, answer) examples: input_ids (n, P+Q_LEN+1), pixel_values,
    answers, qtype, attrs."""
    if not isinstance(patch, (int, np.integer)) or patch < 1 or img % patch:
        raise ValueError(f"patch must be a positive int dividing img={img}, got {patch!r}")
    rng = np.random.default_rng([seed, 123])
    pix, attrs = render_scenes(n, rng, img)
    q, ans, qtype = make_questions(attrs, rng)
    P = (img // patch) ** 2
    ids = np.concatenate([np.full((n, P), IMAGE_TOKEN_ID), q, np.full((n, 1), TOK["ANS"])], 1)
    return {"input_ids": torch.from_numpy(ids), "pixel_values": torch.from_numpy(pix),
            "answers": torch.from_numpy(ans), "qtype": torch.from_numpy(qtype), "attrs": torch.from_numpy(attrs)}


def text_only(data: dict, n_image: int) -> torch.Tensor:
    """Question + ANS + answer token sequences without the image (teacher-LM training text)."""
    return torch.cat([data["input_ids"][:, n_image:], data["answers"][:, None]], 1)
