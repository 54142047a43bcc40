"""The paper's data: Clotho v2 / AudioCaps captions and audio, embedded by the user's CLAP, read from files.

MATS trains text-only on captions through a frozen CLAP (msclap) and is evaluated on audio. Nothing here downloads
anything or needs msclap: the user's data sets are read in the layouts their sources distribute, and
:func:`embed_dataset` embeds their captions and audio with *any* object offering msclap's two methods
``get_text_embeddings(list[str])`` and ``get_audio_embeddings(list[path])`` (the real ``msclap.CLAP``, or a stub in
the tests) and writes one ``.npz`` file (layout in :func:`embed_dataset`). The ``paper_data`` experiment reads that
file (:func:`load_embeddings`) and trains the row's mapper + tiny LM on the real captions' CLAP text embeddings
(:func:`caption_scenes` turns the captions into the tiny LM's tokens and concept sets).

Layouts read (each file checked first; a missing one raises one ``FileNotFoundError`` naming it and the layout):

* Clotho v2 (Zenodo): ``<root>/clotho_captions_{development,validation,evaluation}.csv``
  (columns ``file_name, caption_1, ..., caption_5``) and the WAV files of ``clotho_audio_<split>.7z`` extracted to
  ``<root>/{development,validation,evaluation}/<file_name>``.
* AudioCaps (github.com/cdjkim/audiocaps, ``dataset/{train,val,test}.csv``, columns ``audiocap_id, youtube_id,
  start_time, caption``: one row per caption, five per clip in val/test) copied to ``<root>/{train,val,test}.csv``,
  with the clips as ``<root>/<split>/<audiocap_id>.wav`` (what the ``audiocaps-download`` package writes: one file
  per caption row, so each val/test clip has five identical files; the first row's file is used) or, with
  ``naming="youtube_id"``, ``<root>/<split>/<youtube_id>.wav`` (one file per clip).
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from icml25.papers.mats.data import SPECIAL, WORD, Scenes

CLOTHO_SPLITS = ("development", "validation", "evaluation")
"""Clotho v2.1's splits (file name suffixes and audio folders)."""
AUDIOCAPS_SPLITS = ("train", "val", "test")
"""AudioCaps' splits (CSV names and audio folders)."""
DATASETS = {"clotho": CLOTHO_SPLITS, "audiocaps": AUDIOCAPS_SPLITS}
"""Data set name -> its splits."""
TRAIN_TEST = {"clotho": ("development", "evaluation"), "audiocaps": ("train", "test")}
"""Data set name -> (the split whose captions train text-only, the split whose audio is tested)."""
AUDIOCAPS_NAMING = ("audiocap_id", "youtube_id")
"""How the AudioCaps clips are named: ``<audiocap_id>.wav`` (audiocaps-download) or ``<youtube_id>.wav``."""
EMBEDDING_KEYS = ("dataset", "encoder", "file_name", "split", "audio_embeddings", "caption", "caption_clip",
                  "text_embeddings")
"""The arrays of the embeddings file written by :func:`embed_dataset`."""
UNK = "<unk>"
"""The tiny LM's token for words outside its vocabulary (the last id)."""
STOPWORDS = frozenset(
    "a an the and or but of in on at to from by for with without into onto over under above below through "
    "while as is are was were be been being it its this that these those there their then than some something "
    "someone one two three very also while when where which who whom whose what up down out off away back "
    "again around near far across along behind all each other another more most many much few has have had "
    "do does did can could will would may might just only not no so such".split())
"""Words never taken as concepts (function words)."""


def _need(path: Path, layout: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: expected {layout}")
    return path


def read_wav(path: str | Path) -> tuple[int, np.ndarray]:
    """(sample rate, mono float32 samples in [-1, 1]) of a WAV file, read with :mod:`scipy.io.wavfile`.

    Integer PCM is scaled by its full range (int16 / 2**15, int32 / 2**31, uint8 (x - 128) / 128), float WAVs are kept;
    several channels are averaged. Raises ``FileNotFoundError`` naming a missing file.
    """
    from scipy.io import wavfile

    path = _need(Path(path), "a WAV file")
    rate, data = wavfile.read(path)
    if data.dtype == np.uint8:
        x = (data.astype(np.float32) - 128.0) / 128.0
    elif np.issubdtype(data.dtype, np.integer):
        x = data.astype(np.float32) / float(2 ** (8 * data.dtype.itemsize - 1))
    else:
        x = data.astype(np.float32)
    return int(rate), (x.mean(axis=1) if x.ndim == 2 else x).astype(np.float32)


@dataclass
class CaptionedClips:
    """One split of a captioned-audio data set: clips, their audio files and their reference captions."""

    dataset: str
    """``"clotho"`` or ``"audiocaps"``."""
    split: str
    """The split's name (e.g. ``"development"``, ``"test"``)."""
    file_names: list[str]
    """A name per clip: Clotho's ``file_name``, AudioCaps' ``youtube_id``."""
    audio_paths: list[Path]
    """The clip's audio file."""
    captions: list[list[str]]
    """The clip's reference captions (5 for Clotho and AudioCaps val/test, 1 for AudioCaps train)."""


def _read_csv(path: Path, layout: str, columns: Sequence[str]) -> list[dict[str, str]]:
    with _need(path, layout).open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: columns {missing} missing (expected {', '.join(columns)}); got "
                             f"{reader.fieldnames}")
        return list(reader)


def load_clotho(root: str | Path, split: str) -> CaptionedClips:
    """Clotho v2 split ``split`` from ``root`` (``clotho_captions_<split>.csv`` + ``<split>/<file_name>`` WAVs).

    Rows keep the CSV's order; every caption column is kept (empty ones dropped). Raises ``ValueError`` for an
    unknown split, ``FileNotFoundError`` naming the CSV or the first missing WAV.
    """
    if split not in CLOTHO_SPLITS:
        raise ValueError(f"Clotho split must be one of {CLOTHO_SPLITS}, got {split!r}")
    root = Path(root).expanduser()
    layout = (f"Clotho v2's <root>/clotho_captions_{split}.csv (file_name, caption_1..caption_5) and the WAV files in "
              f"<root>/{split}/")
    cols = ("file_name",) + tuple(f"caption_{i}" for i in range(1, 6))
    rows = _read_csv(root / f"clotho_captions_{split}.csv", layout, cols)
    names = [r["file_name"] for r in rows]
    paths = [_need(root / split / name, layout) for name in names]
    caps = [[r[c].strip() for c in cols[1:] if r[c] and r[c].strip()] for r in rows]
    return CaptionedClips("clotho", split, names, paths, caps)


def load_audiocaps(root: str | Path, split: str, naming: str = "audiocap_id") -> CaptionedClips:
    """AudioCaps split ``split`` from ``root`` (``<split>.csv`` + ``<split>/<audiocap_id or youtube_id>.wav``).

    Caption rows are grouped by ``youtube_id`` into clips in order of first appearance; a clip's audio is the file
    of its first row (``naming="audiocap_id"``, as audiocaps-download names them) or ``<youtube_id>.wav``.
    """
    if split not in AUDIOCAPS_SPLITS:
        raise ValueError(f"AudioCaps split must be one of {AUDIOCAPS_SPLITS}, got {split!r}")
    if naming not in AUDIOCAPS_NAMING:
        raise ValueError(f"AudioCaps naming must be one of {AUDIOCAPS_NAMING}, got {naming!r}")
    root = Path(root).expanduser()
    layout = (f"AudioCaps' <root>/{split}.csv (audiocap_id, youtube_id, start_time, caption) and the clips as "
              f"<root>/{split}/<{naming}>.wav")
    rows = _read_csv(root / f"{split}.csv", layout, ("audiocap_id", "youtube_id", "start_time", "caption"))
    clips: dict[str, tuple[str, list[str]]] = {}
    for r in rows:
        yid = r["youtube_id"]
        if yid not in clips:
            clips[yid] = (r[naming], [])
        if r["caption"].strip():
            clips[yid][1].append(r["caption"].strip())
    names = list(clips)
    paths = [_need(root / split / f"{clips[y][0]}.wav", layout) for y in names]
    return CaptionedClips("audiocaps", split, names, paths, [clips[y][1] for y in names])


def load_paper_dataset(name: str, root: str | Path, split: str, naming: str = "audiocap_id") -> CaptionedClips:
    """:func:`load_clotho` (``name="clotho"``) or :func:`load_audiocaps` (``"audiocaps"``, with ``naming``)."""
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {tuple(DATASETS)}, got {name!r}")
    return load_clotho(root, split) if name == "clotho" else load_audiocaps(root, split, naming)


def _as_array(x: Any, n: int, what: str) -> np.ndarray:  # noqa: ANN401
    """An encoder's output (a torch tensor on any device, or an array) as a float32 (n, dim) array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float32)
    if a.ndim != 2 or len(a) != n:
        raise ValueError(f"{what} must return one row per input, shape ({n}, dim); got {a.shape}")
    return a


def _embed(fn: Any, items: list, batch_size: int, what: str) -> np.ndarray:  # noqa: ANN401
    out = [_as_array(fn(items[i:i + batch_size]), len(items[i:i + batch_size]), what)
           for i in range(0, len(items), batch_size)]
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def embed_dataset(clap: Any, root: str | Path, out_path: str | Path, dataset: str = "clotho",  # noqa: ANN401
                  splits: Sequence[str] | None = None, batch_size: int = 64, encoder: str = "",
                  naming: str = "audiocap_id") -> Path:
    """Embed a data set's captions and audio with ``clap`` and write them to ``out_path`` (``.npz``).

    ``clap`` is anything with msclap's ``CLAP.get_text_embeddings(list[str])`` and
    ``CLAP.get_audio_embeddings(list[str])`` (file paths), each returning one row per input (a torch tensor or an
    array): the raw projection outputs, as msclap returns them (not normalised). ``splits`` defaults to the data
    set's train and test splits (:data:`TRAIN_TEST`). The file (``np.savez``, no pickled objects) holds:

    * ``dataset`` (str), ``encoder`` (str, e.g. ``"msclap 2023"``: free text recorded for the reader);
    * per clip: ``file_name`` (str; AudioCaps: the youtube_id), ``split`` (str), ``audio_embeddings`` (float32,
      (n_clips, dim));
    * per caption: ``caption`` (str), ``caption_clip`` (int64 index of its clip), ``text_embeddings`` (float32,
      (n_captions, dim)).

    Returns ``out_path``. Every file is checked before anything is embedded.
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {tuple(DATASETS)}, got {dataset!r}")
    splits = TRAIN_TEST[dataset] if splits is None else tuple(splits)
    if not splits or len(set(splits)) != len(splits):
        raise ValueError(f"splits must be distinct names of {DATASETS[dataset]}, got {splits!r}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    lacking = [m for m in ("get_text_embeddings", "get_audio_embeddings") if not callable(getattr(clap, m, None))]
    if lacking:
        raise TypeError(f"clap must offer msclap's CLAP.get_text_embeddings and CLAP.get_audio_embeddings; "
                        f"{type(clap).__name__} lacks {', '.join(lacking)}")
    parts = [load_paper_dataset(dataset, root, s, naming) for s in splits]
    names, split_of, paths, captions, clip_of = [], [], [], [], []
    for part in parts:
        for name, path, caps in zip(part.file_names, part.audio_paths, part.captions):
            captions += caps
            clip_of += [len(names)] * len(caps)
            names.append(name)
            split_of.append(part.split)
            paths.append(str(path))
    text = _embed(clap.get_text_embeddings, captions, batch_size, "get_text_embeddings")
    audio = _embed(clap.get_audio_embeddings, paths, batch_size, "get_audio_embeddings")
    if text.shape[1] != audio.shape[1]:
        raise ValueError(f"text embeddings have width {text.shape[1]} but audio embeddings {audio.shape[1]}")
    out_path = Path(out_path).expanduser()
    with out_path.open("wb") as fh:  # an open file: np.savez would append .npz to another suffix
        np.savez(fh, dataset=np.array(dataset), encoder=np.array(encoder), file_name=np.array(names, dtype=str),
                 split=np.array(split_of, dtype=str), audio_embeddings=audio, caption=np.array(captions, dtype=str),
                 caption_clip=np.array(clip_of, dtype=np.int64), text_embeddings=text)
    return out_path


@dataclass
class PaperEmbeddings:
    """The contents of an embeddings file (see :func:`embed_dataset`)."""

    dataset: str
    encoder: str
    file_name: np.ndarray
    split: np.ndarray
    audio_embeddings: np.ndarray
    caption: np.ndarray
    caption_clip: np.ndarray
    text_embeddings: np.ndarray


def load_embeddings(path: str | Path) -> PaperEmbeddings:
    """Read and check a file written by :func:`embed_dataset` (no pickled objects are loaded).

    Raises ``FileNotFoundError`` naming a missing file, ``ValueError`` for a missing array, an unknown data set or
    split, inconsistent shapes, caption-clip indices out of range or non-finite embeddings.
    """
    path = _need(Path(path).expanduser(), "an .npz file written by icml25.papers.mats.paper_data.embed_dataset "
                 "(the captions and audio of Clotho v2 or AudioCaps embedded by a CLAP)")
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in EMBEDDING_KEYS if k not in z.files]
        if missing:
            raise ValueError(f"{path}: arrays {missing} missing (an embeddings file holds {', '.join(EMBEDDING_KEYS)})")
        e = PaperEmbeddings(str(z["dataset"]), str(z["encoder"]), z["file_name"].astype(str), z["split"].astype(str),
                            z["audio_embeddings"].astype(np.float32), z["caption"].astype(str),
                            z["caption_clip"].astype(np.int64), z["text_embeddings"].astype(np.float32))
    if e.dataset not in DATASETS:
        raise ValueError(f"{path}: dataset must be one of {tuple(DATASETS)}, got {e.dataset!r}")
    bad = sorted(set(e.split.tolist()) - set(DATASETS[e.dataset]))
    if bad:
        raise ValueError(f"{path}: splits {bad} are not {e.dataset}'s {DATASETS[e.dataset]}")
    n, m = len(e.file_name), len(e.caption)
    a, t = e.audio_embeddings, e.text_embeddings
    if a.ndim != 2 or t.ndim != 2 or a.shape != (n, a.shape[1]) or t.shape != (m, a.shape[1]) or len(e.split) != n \
            or e.caption_clip.shape != (m,) or a.shape[1] == 0:
        raise ValueError(f"{path}: inconsistent shapes: file_name {e.file_name.shape}, split {e.split.shape}, "
                         f"audio_embeddings {a.shape}, caption {e.caption.shape}, caption_clip "
                         f"{e.caption_clip.shape}, text_embeddings {t.shape}")
    if m and (e.caption_clip.min() < 0 or e.caption_clip.max() >= n):
        raise ValueError(f"{path}: caption_clip must index the {n} clips")
    if not (np.isfinite(a).all() and np.isfinite(t).all()):
        raise ValueError(f"{path}: embeddings must be finite (NaN or inf found)")
    return e


# ----------------------------------------------------------------------------- captions -> the tiny LM's tokens
def caption_words(caption: str) -> list[str]:
    """Lower-cased words of a caption (letters and inner apostrophes; punctuation and digits dropped)."""
    return re.findall(r"[a-z]+(?:'[a-z]+)*", caption.lower())


@dataclass(frozen=True)
class CaptionVocabulary:
    """The tiny LM's vocabulary for real captions: the synthetic world's special tokens (``<pad>``, ``<bos>``,
    ``<eos>``, ``<cap>``, ``<snd>``, ``a``, ``over``, ``with``: ids 0-7, so the prompts and :func:`concepts_in`
    work unchanged), then the concepts (ids 8 ... 8 + n_concepts - 1), then other words, then ``<unk>``."""

    words: tuple[str, ...]
    """Every token, in id order."""
    n_concepts: int
    """How many words after the specials are concepts."""

    @property
    def concepts(self) -> tuple[str, ...]:
        """The concept words, in id order (most frequent first)."""
        return self.words[len(SPECIAL):len(SPECIAL) + self.n_concepts]

    @cached_property
    def index(self) -> dict[str, int]:
        """Word -> token id."""
        return {w: i for i, w in enumerate(self.words)}

    def ids(self, caption: str, max_words: int) -> list[int]:
        """The caption's first ``max_words`` words as token ids (unknown words -> ``<unk>``)."""
        return [self.index.get(w, len(self.words) - 1) for w in caption_words(caption)[:max_words]]

    def concept_set(self, caption: str) -> np.ndarray:
        """0/1 vector (n_concepts,) of the concepts the caption names (all its words, not only the first
        ``max_words``)."""
        out = np.zeros(self.n_concepts, np.int64)
        for w in caption_words(caption):
            j = self.index.get(w, -1) - len(SPECIAL)
            if 0 <= j < self.n_concepts:
                out[j] = 1
        return out


def build_vocabulary(captions: Sequence[str], n_concepts: int, vocab_size: int) -> CaptionVocabulary:
    """The vocabulary of the training captions: concepts = the ``n_concepts`` most frequent words that are not
    :data:`STOPWORDS`, special tokens or shorter than 3 letters (fewer if the captions have fewer); then the most
    frequent other words until ``vocab_size`` tokens with the specials and ``<unk>``. Ties break alphabetically."""
    if int(n_concepts) != n_concepts or n_concepts < 1:
        raise ValueError(f"n_concepts must be a positive integer, got {n_concepts!r}")
    counts = Counter(w for c in captions for w in caption_words(c))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    concepts = [w for w in ranked if w not in STOPWORDS and w not in SPECIAL and len(w) >= 3][:n_concepts]
    if not concepts:
        raise ValueError("the training captions name no concept word (every word is a stop word or shorter than 3)")
    if vocab_size < len(SPECIAL) + len(concepts) + 1:
        raise ValueError(f"vocab_size must be at least {len(SPECIAL) + len(concepts) + 1} (specials, concepts and "
                         f"<unk>), got {vocab_size}")
    rest = [w for w in ranked if w not in SPECIAL and w not in concepts][:vocab_size - len(SPECIAL) - len(concepts) - 1]
    return CaptionVocabulary(SPECIAL + tuple(concepts) + tuple(rest) + (UNK,), len(concepts))


def caption_scenes(captions: Sequence[str], audio: np.ndarray, vocab: CaptionVocabulary, max_words: int) -> Scenes:
    """Training examples for :func:`~icml25.papers.mats.model.train_mats`, one per caption: ``features`` the
    caption's clip's audio embedding (read only by the audio-supervised baseline), ``concepts`` its concept set,
    ``caption`` its first ``max_words`` word ids then EOS, ``sounds`` its concept words in id order then EOS."""
    n, width = len(captions), max_words + 1
    if audio.shape[0] != n:
        raise ValueError(f"need one audio embedding per caption, got {audio.shape[0]} for {n} captions")
    caption, sounds = np.zeros((n, width), np.int64), np.zeros((n, width), np.int64)
    concepts = np.zeros((n, vocab.n_concepts), np.int64)
    for r, text in enumerate(captions):
        ids = vocab.ids(text, max_words)
        caption[r, :len(ids) + 1] = ids + [WORD["<eos>"]]
        concepts[r] = vocab.concept_set(text)
        named = (np.flatnonzero(concepts[r]) + len(SPECIAL))[:max_words].tolist()
        sounds[r, :len(named) + 1] = named + [WORD["<eos>"]]
    return Scenes(np.ascontiguousarray(audio, dtype=np.float32), concepts, caption, sounds)


def reference_concepts(references: Sequence[Sequence[str]], vocab: CaptionVocabulary) -> np.ndarray:
    """0/1 matrix (n_clips, n_concepts): the concepts named by at least half of each clip's reference captions
    (all of them for a single reference)."""
    out = np.zeros((len(references), vocab.n_concepts), np.int64)
    for i, refs in enumerate(references):
        if refs:
            named = np.sum([vocab.concept_set(c) for c in refs], axis=0)
            out[i] = 2 * named >= len(refs)
    return out


class EmbeddingCLAP(nn.Module):
    """The CLAP of the paper's data, as :class:`~icml25.papers.mats.model.MATS` sees it: its embeddings were
    computed beforehand (:func:`embed_dataset`), so ``encode_audio`` takes a stored audio embedding and returns it
    unchanged (the raw encoder output Santa works on) and ``encode_text`` refuses token input (captions are given to
    :meth:`MATS.loss` as their stored text embeddings)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = int(dim)

    def encode_audio(self, audio: Tensor) -> Tensor:
        """The stored audio embeddings (B, dim), unchanged."""
        if audio.dim() != 2 or audio.shape[1] != self.dim or not audio.is_floating_point():
            raise ValueError(f"audio must be stored embeddings of shape (B, {self.dim}), got {tuple(audio.shape)}")
        return audio

    def encode_text(self, text: Tensor) -> Tensor:
        """Not available: pass the stored text embeddings to ``MATS.loss`` instead of tokens."""
        raise TypeError("the paper's data holds precomputed CLAP text embeddings: pass them (a float tensor) to "
                        "MATS.loss instead of caption tokens")


def stored_tensor(x: np.ndarray, device: torch.device) -> Tensor:
    """A float32 tensor of stored embeddings on ``device``."""
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device)
