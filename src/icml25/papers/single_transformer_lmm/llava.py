"""The paper's instruction data in LLaVA-1.5's format, read from a user's files (nothing is downloaded).

HaploVL fine-tunes on LLaVA-style visual-instruction data. LLaVA-1.5 distributes it as one JSON file (e.g.
``llava_v1_5_mix665k.json`` or ``llava_instruct_150k.json`` from the ``liuhaotian/LLaVA-Instruct-150K`` dataset
repository): a list of records ::

    {"id": "000000033471", "image": "coco/train2017/000000033471.jpg",
     "conversations": [{"from": "human", "value": "<image>\\nWhat are the colors of the bus?"},
                       {"from": "gpt", "value": "White and red."}, ...]}

with the images under an image folder (LLaVA's ``--image_folder``: the ``image`` paths are relative to it, e.g. COCO
train2017 under ``<image_folder>/coco/train2017/``). Records without an ``image`` (text-only conversations) are
skipped.

What is read (:func:`load_paper_dataset`): every (human, gpt) turn of an image record whose reply is ONE word (after
lower-casing and dropping a final full stop): the short-answer VQA part of the mixture (VQAv2, GQA, OCR-VQA...,
LLaVA-1.5's "Answer the question using a single word or phrase."), scored by exact match as those benchmarks are.
Each turn is one example; earlier turns of the conversation are dropped. Tokens are words (``[a-z0-9]+``, lower
case) with a vocabulary built from the training examples. Images are padded to a square with the CLIP mean colour and
resized, as LLaVA-1.5's ``image_aspect_ratio="pad"`` does.

The vision teacher (the paper's CLIP-ViT-L) is not run here: :func:`compute_teacher_features` writes its patch
features for the images into a file once, with ANY encoder (open_clip's ``encode_image`` or a plain callable), and
:func:`load_teacher_features` reads them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

SPECIALS = ("PAD", "IMG", "ANS", "UNK")
"""Special tokens, ids 0-3: padding, the image placeholder, the answer slot, unknown words."""
PAD_ID, IMAGE_TOKEN_ID, ANS_ID, UNK_ID = range(4)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
"""CLIP's pixel mean (LLaVA-1.5 pads images with ``int(255 * mean)``)."""
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
FINE_GRAINED_WORDS = frozenset(
    "color colour colors colours colored coloured red blue green yellow white black brown orange pink purple gray grey "
    "many number count left right above below behind front top bottom beside next under size big small large tall "
    "short shape round square".split())
"""A question is fine-grained when it contains one of these words: MMVP's visual patterns (colour and appearance,
quantity and count, position and relations, size and shape), the kind of question the paper's fine-grained gains
are about (our proxy, fixed before any run on the data)."""
YES_NO_STARTS = frozenset("is are was were do does did can could has have will would should".split())
"""First words of a yes/no question (question type 0)."""
WH_STARTS = frozenset("what which who whom whose where when why how".split())
"""First words of a wh-question (question type 1; 2 is any other question, 3 a fine-grained one)."""
LAYOUT = ("<data_path>: LLaVA-1.5 instruction JSON (a list of {'id', 'image': '<path relative to image_folder>', "
          "'conversations': [{'from': 'human', 'value': '<image>\\n...'}, {'from': 'gpt', 'value': '...'}, ...]}); "
          "<image_folder>/<image>: the images (e.g. coco/train2017/*.jpg)")


def words(text: str) -> list[str]:
    """Lower-case word tokens ``[a-z0-9]+`` of ``text`` (the ``<image>`` tag removed)."""
    return re.findall(r"[a-z0-9]+", text.replace("<image>", " ").lower())


def load_llava_records(data_path: str | Path) -> list[dict]:
    """The records of a LLaVA-1.5 instruction JSON file (a list of conversations), checked for the keys used."""
    path = Path(data_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: expected {LAYOUT}")
    with path.open(encoding="utf-8") as fh:
        records = json.load(fh)
    if not isinstance(records, list):
        raise ValueError(f"{path} is not a LLaVA instruction file: expected a JSON list of records, got "
                         f"{type(records).__name__}")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or not isinstance(rec.get("conversations"), list):
            raise ValueError(f"{path}: record {i} has no 'conversations' list (expected {LAYOUT})")
    return records


def single_word_turns(records: Sequence[dict]) -> list[tuple[str, str, str]]:
    """(image, question, answer) of every human -> gpt turn of an image record whose reply is one word.

    The question is the human turn's text without ``<image>``; the answer is the reply lower-cased with a final
    full stop removed. Records without a string ``image`` are skipped.
    """
    out = []
    for rec in records:
        image = rec.get("image")
        if not isinstance(image, str):
            continue
        conv = rec["conversations"]
        for ask, reply in zip(conv[:-1], conv[1:]):
            if ask.get("from") != "human" or reply.get("from") != "gpt":
                continue
            answer = str(reply.get("value", "")).strip().lower().removesuffix(".").strip()
            if re.fullmatch(r"[a-z0-9]+", answer):
                out.append((image, str(ask.get("value", "")).replace("<image>", "").strip(), answer))
    return out


def question_type(question: str) -> int:
    """3 if fine-grained (:data:`FINE_GRAINED_WORDS`), else 0 yes/no, 1 wh-question, 2 other."""
    ws = words(question)
    if FINE_GRAINED_WORDS.intersection(ws):
        return 3
    if ws and ws[0] in YES_NO_STARTS:
        return 0
    return 1 if ws and ws[0] in WH_STARTS else 2


def image_file(image_folder: str | Path, image: str) -> Path:
    """The file of a record's ``image`` under the image folder; a missing one raises naming it."""
    path = Path(image_folder).expanduser() / image
    if not path.is_file():
        raise FileNotFoundError(f"image {path} not found: expected {LAYOUT}")
    return path


def load_llava_image(path: str | Path, size: int) -> torch.Tensor:
    """(3, size, size) float pixels in [0, 1]: RGB, padded to a square with the CLIP mean colour (LLaVA-1.5's
    ``expand2square``, the image centred), then resized to ``size`` (bicubic)."""
    from PIL import Image

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image {path} not found: expected {LAYOUT}")
    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        if w != h:
            side = max(w, h)
            square = Image.new("RGB", (side, side), tuple(int(x * 255) for x in OPENAI_CLIP_MEAN))
            square.paste(im, (0, (w - h) // 2) if w > h else ((h - w) // 2, 0))
            im = square
        if im.size != (size, size):
            im = im.resize((size, size), Image.BICUBIC)
        arr = np.asarray(im, dtype=np.float32) / 255.0
    return torch.from_numpy(arr.transpose(2, 0, 1).copy())


def _grid_tokens(out: torch.Tensor) -> torch.Tensor:
    """An encoder's output as (B, g*g, C) patch tokens: (B, C) pooled -> g = 1; (B, T, C) with T = g*g, or T = 1 + g*g
    (a leading class token, dropped)."""
    if out.dim() == 2:
        return out[:, None]
    if out.dim() != 3:
        raise ValueError(f"the encoder must return (B, C) or (B, T, C) features, got shape {tuple(out.shape)}")
    T = out.shape[1]
    for drop in (0, 1):
        g = int(round((T - drop) ** 0.5))
        if g >= 1 and g * g == T - drop:
            return out[:, drop:]
    raise ValueError(f"the encoder returned {T} tokens per image: not a square grid (with or without a class token)")


def pool_grid(tokens: torch.Tensor, grid: int) -> torch.Tensor:
    """(B, g*g, C) patch tokens average-pooled (adaptively) to a ``grid`` x ``grid`` grid: (B, grid*grid, C)."""
    B, T, C = tokens.shape
    g = int(round(T ** 0.5))
    if g * g != T:
        raise ValueError(f"{T} tokens are not a square grid")
    x = tokens.transpose(1, 2).reshape(B, C, g, g).float()
    return F.adaptive_avg_pool2d(x, grid).flatten(2).transpose(1, 2)


@torch.no_grad()
def compute_teacher_features(data_path: str | Path, image_folder: str | Path, encoder: Callable | object,
                             out_path: str | Path, *, grid: int = 4, size: int = 336, batch: int = 32,
                             images: Sequence[str] | None = None, encoder_name: str = "") -> Path:
    """Write the vision teacher's features of the data's images to ``out_path`` (the file ``teacher_features`` reads).

    Each image is padded to a square and resized to ``size`` as :func:`load_llava_image` does, normalised with
    CLIP's mean and std, and encoded by ``encoder.encode_image(x)`` if it has that method (open_clip's name), else
    ``encoder(x)``, on CPU batches ``x`` of shape (B, 3, size, size) (an encoder on a GPU moves them there itself).
    Its output may be (B, C) pooled embeddings or
    (B, T, C) tokens with T a square grid (a leading class token, T = 1 + g*g, is dropped); tokens are average-pooled
    to ``grid`` x ``grid`` (a pooled embedding fills the grid). ``images`` defaults to every image of the file's
    one-word-answer turns (the ones the experiment reads).

    The file is ``torch.save({"images": [...], "features": Tensor(N, grid*grid, C) float16, "grid": grid,
    "size": size, "encoder": encoder_name})``, rows in the order of ``images`` (paths as in the JSON).
    """
    if images is None:
        images = sorted({img for img, _, _ in single_word_turns(load_llava_records(data_path))})
    images = list(images)
    if not images:
        raise ValueError(f"{data_path} has no image record with a one-word answer")
    paths = [image_file(image_folder, img) for img in images]
    m = torch.tensor(OPENAI_CLIP_MEAN, dtype=torch.float32).view(1, 3, 1, 1)
    s = torch.tensor(OPENAI_CLIP_STD, dtype=torch.float32).view(1, 3, 1, 1)
    encode = encoder.encode_image if hasattr(encoder, "encode_image") else encoder
    feats = []
    for start in range(0, len(paths), batch):
        x = torch.stack([load_llava_image(p, size) for p in paths[start:start + batch]])
        out = encode((x - m) / s)
        feats.append(pool_grid(_grid_tokens(torch.as_tensor(out).detach().float().cpu()), grid).half())
    out_path = Path(out_path)
    torch.save({"images": images, "features": torch.cat(feats), "grid": grid, "size": size,
                "encoder": encoder_name}, out_path)
    return out_path


def load_teacher_features(path: str | Path, images: Sequence[str], grid: int) -> torch.Tensor:
    """(len(images), grid*grid, C) float32 teacher features of ``images`` from a :func:`compute_teacher_features`
    file, pooled to ``grid`` x ``grid``; a missing file or image raises naming it."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"teacher features file {path} not found: write it with "
                                "compute_teacher_features(data_path, image_folder, encoder, path)")
    blob = torch.load(path, weights_only=True)
    if not isinstance(blob, dict) or "images" not in blob or "features" not in blob:
        raise ValueError(f"{path} is not a teacher features file (a dict with 'images' and 'features')")
    row = {img: i for i, img in enumerate(blob["images"])}
    missing = [img for img in images if img not in row]
    if missing:
        raise ValueError(f"{path} has no features for {len(missing)} image(s), e.g. {missing[0]!r}: recompute it "
                         "for the images of the data file")
    feats = blob["features"][[row[img] for img in images]].float()
    return pool_grid(feats, grid)


def build_vocab(texts: Sequence[list[str]], size: int) -> dict[str, int]:
    """Word -> id: :data:`SPECIALS` first, then the ``size - 4`` most frequent words of ``texts`` (ties in
    alphabetical order)."""
    if size <= len(SPECIALS):
        raise ValueError(f"vocabulary size must exceed {len(SPECIALS)}, got {size}")
    counts = Counter(w for t in texts for w in t)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))[: size - len(SPECIALS)]
    return {w: i for i, w in enumerate([*SPECIALS, *ranked])}


def _encode(examples: list[tuple[int, str, str]], vocab: dict[str, int], n_image_tokens: int,
            q_len: int) -> dict[str, torch.Tensor]:
    """Tensors of examples (image row, question, answer): [IMG x P] [question words, PAD to q_len] [ANS]."""
    ids = np.full((len(examples), n_image_tokens + q_len + 1), PAD_ID, np.int64)
    ids[:, :n_image_tokens] = IMAGE_TOKEN_ID
    ids[:, -1] = ANS_ID
    answers, qtype, rows = np.zeros(len(examples), np.int64), np.zeros(len(examples), np.int64), []
    for k, (row, question, answer) in enumerate(examples):
        q = [vocab.get(w, UNK_ID) for w in words(question)][:q_len]
        ids[k, n_image_tokens:n_image_tokens + len(q)] = q
        answers[k] = vocab.get(answer, -1)
        qtype[k] = question_type(question)
        rows.append(row)
    return {"input_ids": torch.from_numpy(ids), "answers": torch.from_numpy(answers),
            "qtype": torch.from_numpy(qtype), "image_index": torch.tensor(rows, dtype=torch.long)}


def load_paper_dataset(data_path: str | Path, image_folder: str | Path, features_path: str | Path, *,
                       sizes: tuple[int, int], img: int, patch: int, q_len: int, vocab_size: int,
                       seed: int) -> tuple[dict, dict, dict[str, int]]:
    """Train and test examples from a LLaVA-1.5 instruction file, its images and the teacher features file.

    ``sizes`` = (n_train, n_test). The one-word-answer turns (:func:`single_word_turns`) are split by IMAGE, drawn
    by ``seed``: images go to the test set in a seeded random order until it holds ``n_test`` examples, the rest to
    training, of which a seeded random ``n_train`` are kept. The vocabulary (:func:`build_vocab`, ``vocab_size``
    words) comes from the training questions and answers; training examples whose answer is outside it are
    dropped, test answers outside it get id -1 (always wrong). Returns ``(train, test, vocab)``; each split holds
    ``input_ids`` (N, P + q_len + 1), ``answers``, ``qtype`` (see :func:`question_type`), ``image_index`` (N,) into
    the split's per-image tables ``pixel_values`` (n_images, 3, img, img) in [0, 1] and ``teacher_features``
    (n_images, P, C), and ``images`` (the image paths, a list).
    """
    n_train, n_test = sizes
    folder = Path(image_folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder {folder} not found: expected {LAYOUT}")
    if img % patch:
        raise ValueError(f"patch={patch} must divide img={img}")
    turns = single_word_turns(load_llava_records(data_path))
    if not turns:
        raise ValueError(f"{data_path} has no image record with a one-word answer (expected {LAYOUT})")
    rng = np.random.default_rng([seed, 7])
    images = sorted({t[0] for t in turns})
    by_image: dict[str, list[int]] = {}
    for k, t in enumerate(turns):
        by_image.setdefault(t[0], []).append(k)
    test_imgs, n_in_test = [], 0
    for i in rng.permutation(len(images)):
        if n_in_test >= n_test:
            break
        test_imgs.append(images[i])
        n_in_test += len(by_image[images[i]])
    held = set(test_imgs)
    train_pool = [k for k in range(len(turns)) if turns[k][0] not in held]
    if not train_pool:
        raise ValueError(f"{data_path}: no images left for training after {len(test_imgs)} test images "
                         f"(n_test={n_test}; the file has {len(images)} images)")
    train_idx = sorted(rng.permutation(train_pool)[:n_train].tolist())
    test_idx = sorted(k for img_ in test_imgs for k in by_image[img_])
    vocab = build_vocab([words(turns[k][1]) + [turns[k][2]] for k in train_idx], vocab_size)
    train_idx = [k for k in train_idx if turns[k][2] in vocab]
    if not train_idx:
        raise ValueError(f"vocab_size={vocab_size} leaves no training answer in the vocabulary")
    grid = img // patch
    out = []
    for idx in (train_idx, test_idx):
        imgs = sorted({turns[k][0] for k in idx})
        row = {p: i for i, p in enumerate(imgs)}
        split = _encode([(row[turns[k][0]], turns[k][1], turns[k][2]) for k in idx], vocab, grid * grid, q_len)
        split["pixel_values"] = torch.stack([load_llava_image(image_file(folder, p), img) for p in imgs])
        split["teacher_features"] = load_teacher_features(features_path, imgs, grid)
        split["images"] = imgs
        out.append(split)
    return out[0], out[1], vocab
