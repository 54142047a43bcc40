"""vlgpo: a tiny copy of the official VLGPO release's files (github.com/uzh-dqbm-cmi/VLGPO): the training split and
the ground-truth landscape as ``sequence,score`` CSVs of AAV-length (28) sequences, and randomly initialised
checkpoints in the official key layouts (the conv VAE's ``{"state_dict": ...}``, GGS BaseCNN Lightning checkpoints
with ``predictor.*`` keys, width 8 instead of 256); made-up values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from icml25.papers.vlgpo.landscape import decode_tokens
from icml25.papers.vlgpo.official import ConvSeqVAE

L = 28
"""AAV sequence length."""
N_TRAIN, N_GT = 40, 100
"""Rows of the training split and of the ground-truth file (which holds the training split first)."""


def write_ggs_cnn(path: Path, width: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    """A random GGS ``BaseCNN`` (kernel 5) saved as a Lightning checkpoint; returns its ``state_dict``."""
    g = torch.Generator().manual_seed(seed)
    shapes = {"encoder.weight": (width, 20, 5), "encoder.bias": (width,), "embedding.layer.weight": (2 * width, width),
              "embedding.layer.bias": (2 * width,), "decoder.weight": (1, 2 * width), "decoder.bias": (1,)}
    state = {f"predictor.{k}": 0.5 * torch.randn(shape, generator=g) for k, shape in shapes.items()}
    state["predictor.decoder.bias"] += 6.0          # around the AAV splits' scores
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state, "epoch": 1, "global_step": 1}, path)
    return state


def write_vae(path: Path, seed: int = 0) -> dict[str, torch.Tensor]:
    """A random official-layout conv VAE (L = 28, latent 16) saved as ``{"state_dict": ...}``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        state = ConvSeqVAE(L, 16).state_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": state}, path)
    return state


def write_csv(path: Path, seqs: list[str], scores: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sequence,score\n" + "".join(f"{s},{v:.6f}\n" for s, v in zip(seqs, scores)))
    return path


def write_release(folder: Path, tasks: tuple[str, ...] = ("aav_medium", "aav_hard"), seed: int = 0) -> Path:
    """``data/`` and ``checkpoints/`` of a VLGPO release for ``tasks`` (both predictors); returns ``folder``.

    Sequences are random 1-6 point mutants of one random wild type; scores are in [0, 10) with 3 decimals."""
    rng = np.random.default_rng(seed)
    wt = rng.integers(0, 20, L)
    lib = np.tile(wt, (N_GT, 1))
    for row in lib:
        pos = rng.choice(L, rng.integers(1, 7), replace=False)
        row[pos] = rng.integers(0, 20, len(pos))
    seqs = list(dict.fromkeys(decode_tokens(lib)))
    scores = np.round(rng.uniform(0, 10, len(seqs)), 3)
    write_csv(folder / "data" / "aav_ground_truth.csv", seqs, scores)
    for i, task in enumerate(tasks):
        write_csv(folder / "data" / f"{task}.csv", seqs[:N_TRAIN], scores[:N_TRAIN])
        write_vae(folder / "checkpoints" / "vae" / f"vae_{task}.pt", seed=i)
        for j, kind in enumerate(("unsmoothed", "smoothed")):
            write_ggs_cnn(folder / "checkpoints" / "predictor" / kind / f"predictor_{task}.ckpt", seed=10 * i + j + 1)
    write_ggs_cnn(folder / "checkpoints" / "oracle" / "oracle_aav.ckpt", seed=99)
    return folder


def write_paper_data(folder: Path) -> dict[str, str]:
    write_release(folder)
    return {"data_dir": str(folder)}


FILES = {"paper_data_aav_medium": write_paper_data, "paper_data_aav_hard": write_paper_data}
