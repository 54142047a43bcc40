"""mats: Clotho v2 in its distributed layout (``clotho_captions_<split>.csv`` with ``file_name, caption_1..caption_5``
and 16-bit PCM WAVs in ``<split>/``) and the embeddings file that ``paper_data.embed_dataset`` writes from it with a
stub CLAP offering msclap's ``get_text_embeddings`` / ``get_audio_embeddings`` (made-up encoders; msclap is not
installed here)."""

from __future__ import annotations

import csv
import zlib
from pathlib import Path

import numpy as np
import torch
from scipy.io import wavfile

from icml25.papers.mats.paper_data import caption_words, embed_dataset, read_wav

RATE = 8000
"""Sample rate of the written WAVs (Clotho's are 44.1 kHz; any rate is read)."""
TONES = {"dog": 300.0, "bird": 700.0, "rain": 1100.0, "car": 1500.0, "water": 1900.0, "engine": 2300.0}
"""Each sound word of the written clips is a sine at this frequency (Hz)."""
TEMPLATES = ("A {a} and a {b} can be heard.", "{A} sounds, then a {b} in the background.",
             'the {a} is loud over a "{b}"', "A {a} with a {b} nearby", "{A} and {b} outside")
"""The five captions of a clip with sound words ``a`` and ``b`` (commas and quotes exercise the CSV quoting)."""
SPLITS = {
    "development": [("dog", "bird"), ("rain", "car"), ("water", "engine"), ("dog", "rain"), ("bird", "water"),
                    ("car", "engine"), ("dog", "car"), ("rain", "water")],
    "validation": [("bird", "engine"), ("dog", "water")],
    "evaluation": [("dog", "engine"), ("bird", "rain"), ("car", "water"), ("engine", "rain")],
}
"""The clips of each split, by their two sound words."""
DIM = 16
"""Width of the stub CLAP's embeddings (msclap 2023: 1024)."""


def clip_name(split: str, i: int) -> str:
    """The written clip's ``file_name`` (with a space and a non-ASCII letter, as Clotho's names have)."""
    return f"{split[:3]} clip é{i:02d}.wav"


def captions_of(a: str, b: str) -> list[str]:
    """The five reference captions of a clip with sound words ``a`` and ``b``."""
    return [t.format(a=a, b=b, A=a.capitalize()) for t in TEMPLATES]


def write_wav(path: Path, words: tuple[str, ...], seconds: float = 0.25) -> Path:
    """A 16-bit PCM WAV holding one sine per word (amplitude 0.3 each)."""
    t = np.arange(int(RATE * seconds)) / RATE
    x = sum(0.3 * np.sin(2 * np.pi * TONES[w] * t) for w in words)
    wavfile.write(path, RATE, np.round(x * 32767).astype(np.int16))
    return path


def write_clotho(folder: Path, splits: dict[str, list[tuple[str, str]]] | None = None) -> Path:
    """``clotho_captions_<split>.csv`` and ``<split>/<file_name>`` WAVs in ``folder``; returns ``folder``."""
    for split, clips in (SPLITS if splits is None else splits).items():
        (folder / split).mkdir(parents=True, exist_ok=True)
        with (folder / f"clotho_captions_{split}.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["file_name"] + [f"caption_{i}" for i in range(1, 6)])
            for i, (a, b) in enumerate(clips):
                w.writerow([clip_name(split, i)] + captions_of(a, b))
                write_wav(folder / split / clip_name(split, i), (a, b))
    return folder


def word_vector(word: str) -> np.ndarray:
    """A fixed random vector per word (seeded by the word's CRC32)."""
    return np.random.default_rng(zlib.crc32(word.encode())).standard_normal(DIM)


GAP = 2.0 * word_vector("<audio>")
"""The stub's modality gap: added to every audio embedding."""


class StubCLAP:
    """msclap's two embedding methods on made-up encoders, returning torch tensors as msclap does.

    Text: the sum of the caption's word vectors (sound words at weight 1, other words 0.2). Audio: the sum of the
    vectors of the sound words whose tone carries more than 1% of the clip's spectral energy, plus :data:`GAP`.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def get_text_embeddings(self, texts: list[str]) -> torch.Tensor:
        self.calls.append(("text", len(texts)))
        return torch.from_numpy(np.stack([text_embedding(t) for t in texts]).astype(np.float32))

    def get_audio_embeddings(self, audio_files: list[str], resample: bool = True) -> torch.Tensor:
        self.calls.append(("audio", len(audio_files)))
        return torch.from_numpy(np.stack([audio_embedding(p) for p in audio_files]).astype(np.float32))


def text_embedding(caption: str) -> np.ndarray:
    """The stub's text embedding of one caption."""
    return sum((1.0 if w in TONES else 0.2) * word_vector(w) for w in caption_words(caption))


def audio_embedding(path: str | Path) -> np.ndarray:
    """The stub's audio embedding of one WAV file (read with ``read_wav``)."""
    rate, x = read_wav(path)
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    present = [w for w, f in TONES.items() if power[np.abs(freqs - f) < 20].sum() > 0.01 * power.sum()]
    return GAP + sum((word_vector(w) for w in present), np.zeros(DIM))


def write_paper_data(folder: Path) -> dict[str, str]:
    """Clotho files embedded by the stub CLAP into ``folder/clotho_stubclap.npz``; the ``--set`` values."""
    write_clotho(folder)
    path = embed_dataset(StubCLAP(), folder, folder / "clotho_stubclap.npz", dataset="clotho", batch_size=4,
                         encoder="stub CLAP (tests/paper_files/mats.py)")
    return {"data_path": str(path)}


FILES = {"paper_data": write_paper_data}
