"""The official VLGPO / GGS benchmark pieces, read from files the user provides (nothing is downloaded).

The paper's benchmark (Kirjner et al., GGS, ICLR 2024) and the official VLGPO release (uzh-dqbm-cmi/VLGPO,
commit 9909084) ship as files: training splits ``data/{aav,gfp}_{medium,hard}.csv`` (columns ``sequence``,
``score``), the GGS CNN predictor and oracle checkpoints (PyTorch Lightning ``.ckpt``, keys
``predictor.encoder`` / ``predictor.embedding.layer`` / ``predictor.decoder``) and the VAE checkpoints
(``checkpoints/vae/vae_<split>.pt``, key ``state_dict``). This module reads them into our classes:

- :func:`load_ggs_split`: a training split as (sequences, scores);
- :func:`load_ggs_cnn`: a GGS ``BaseCNN`` checkpoint (predictor or oracle, width 256) as a :class:`FitnessCNN`;
- :func:`load_official_vae`: a VAE checkpoint as a :class:`ConvSeqVAE` (the official 1-D convolutional layout);
- :func:`official_step_settings`: the (J, alpha) of the official configs per protein, split and predictor.

The official tokenizer orders the amino acids ``ARNDCQEGHILKMFPSTWYV``; ours is alphabetical
(:data:`AMINO_ACIDS`). The loaders permute the token axis of every weight once, so the loaded models read and
write our tokens and give the official numbers on the same amino-acid strings.

Not covered: the official flow prior is a ``Unet1D`` (denoising-diffusion-pytorch layout, ``dim=8``,
``dim_mults=(1, 2)``, latents of shape ``(n, 1, latent_dim)``) that we do not re-implement; any velocity module
``v(z, t)`` with a ``latent_dim`` attribute on ``(n, latent_dim)`` latents drives :func:`vlgpo_sample`, so a user
can wrap the official network (``v(z, t) = unet(z[:, None], t.expand(n))[:, 0]``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.papers.vlgpo.landscape import AMINO_ACIDS, encode_sequences
from icml25.papers.vlgpo.models import FitnessCNN, tokens_tensor

OFFICIAL_ALPHABET = "ARNDCQEGHILKMFPSTWYV"
"""Token order of the official tokenizer (``utils/tokenizer.py``) and of every official checkpoint."""

_PERM = [OFFICIAL_ALPHABET.index(a) for a in AMINO_ACIDS]
"""Our token k is the official token ``_PERM[k]``."""

OFFICIAL_STEP_SETTINGS: dict[tuple[str, str, str], tuple[int, float]] = {
    ("aav", "medium", "unsmoothed"): (39, 34.0), ("aav", "medium", "smoothed"): (20, 10.0),
    ("aav", "hard", "unsmoothed"): (19, 38.0), ("aav", "hard", "smoothed"): (20, 10.0),
    ("gfp", "medium", "unsmoothed"): (37, 18.0), ("gfp", "medium", "smoothed"): (5, 0.5),
    ("gfp", "hard", "unsmoothed"): (5, 0.5), ("gfp", "hard", "smoothed"): (5, 0.5),
}
"""(J, alpha) of ``configs/{aav,gfp}_{medium,hard}.yaml``; alpha is the config's "alpha * ode_steps" (the unit
:func:`vlgpo_sample` takes). All four configs use n_samples 512, ode_steps 32, top_k 128; the released runs use
the unsmoothed predictor."""

OFFICIAL_FITNESS_RANGE = {"aav": (0.0, 19.5365), "gfp": (1.2834, 4.1231)}
"""(f_min, f_max) that ``sample.py`` uses to normalise the predictor's output in the likelihood."""

OFFICIAL_LATENT_DIM = {"aav": 16, "gfp": 32}
"""VAE latent dimension per protein (official configs)."""

OFFICIAL_VAE_LENGTH = {"aav": 28, "gfp": 240}
"""VAE sequence length per protein; GFP (237 residues) is padded to 240 and the last 3 positions are dropped."""

GGS_SPLITS = {"medium": "mutations_6/percentile_0.2_0.4", "hard": "mutations_7/percentile_0.0_0.3"}
"""GGS checkpoint folders of the two difficulties (training set: fitness percentile range, minimum number of
mutations from the top sequences); the oracle is ``mutations_0/percentile_0.0_1.0`` (all data)."""


def official_step_settings(protein: str, difficulty: str, predictor: str = "unsmoothed") -> tuple[int, float]:
    """(J, alpha) of the official config for ``protein`` in {"aav", "gfp"}, ``difficulty`` in {"medium", "hard"}
    and ``predictor`` in {"unsmoothed", "smoothed"}; alpha in units of the ODE step (as :func:`vlgpo_sample`)."""
    key = (protein, difficulty, predictor)
    if key not in OFFICIAL_STEP_SETTINGS:
        raise ValueError(f"no official setting for protein={protein!r}, difficulty={difficulty!r}, "
                         f"predictor={predictor!r}; valid: protein 'aav'/'gfp', difficulty 'medium'/'hard', "
                         "predictor 'unsmoothed'/'smoothed'")
    return OFFICIAL_STEP_SETTINGS[key]


def load_ggs_split(path: str | Path) -> tuple[list[str], np.ndarray]:
    """Read a GGS / VLGPO split CSV (header with ``sequence`` and ``score`` columns) from a user path.

    Returns the sequences (strings over the 20 amino acids, one length) and their scores ``(n,)``.
    Raises ValueError on a missing column, an empty file, unknown letters, ragged lengths or non-finite scores.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no split file at {path}")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"sequence", "score"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: need the columns 'sequence' and 'score', got {reader.fieldnames}")
        rows = [(r["sequence"].strip(), r["score"]) for r in reader]
    if not rows:
        raise ValueError(f"{path}: no sequences")
    seqs = [s for s, _ in rows]
    encode_sequences(seqs)  # letters and equal lengths
    try:
        scores = np.array([float(v) for _, v in rows])
    except ValueError as exc:
        raise ValueError(f"{path}: a score is not a number ({exc})") from None
    if not np.isfinite(scores).all():
        raise ValueError(f"{path}: scores must be finite")
    return seqs, scores


def _load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no checkpoint at {path}")
    ckpt = torch.load(path, map_location="cpu", weights_only=True)  # tensors and plain containers only
    state = ckpt.get("state_dict", ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: expected a dict with a 'state_dict' entry")
    return state


def _require(state: dict, keys: dict[str, tuple[int, ...]], path) -> None:
    for k, shape in keys.items():
        if k not in state:
            raise ValueError(f"{path}: missing key {k!r} (found {sorted(state)[:8]})")
        if shape and tuple(state[k].shape) != shape:
            raise ValueError(f"{path}: {k!r} has shape {tuple(state[k].shape)}, expected {shape}")


def load_ggs_cnn(path: str | Path, seq_len: int | None = None) -> FitnessCNN:
    """A GGS ``BaseCNN`` checkpoint (predictor or oracle) as a fitted :class:`FitnessCNN`.

    The layouts agree layer for layer: conv (kernel 5, no padding) -> per-position linear (width -> 2 width) + ReLU
    -> max over positions -> linear, so ``encoder`` -> ``conv``, ``embedding.layer`` -> ``mlp``, ``decoder`` ->
    ``out``; the conv's input channels are permuted to our alphabet. The model outputs the checkpoint's raw
    fitness scale (normalise with :data:`OFFICIAL_FITNESS_RANGE` in :func:`vlgpo_sample`). ``seq_len`` fixes the
    accepted length (AAV 28, GFP 237; ``None``: any length >= 5). Dropout is 0 in every GGS config, so
    inference equals the official ``forward`` / ``forward_soft``.
    """
    state = _load_state_dict(path)
    state = {k.removeprefix("predictor."): v for k, v in state.items()}
    if "encoder.weight" not in state:
        raise ValueError(f"{path}: missing key 'encoder.weight' (found {sorted(state)[:8]})")
    width, n_tokens, kernel = state["encoder.weight"].shape
    if n_tokens != len(AMINO_ACIDS):
        raise ValueError(f"{path}: the conv reads {n_tokens} tokens, expected {len(AMINO_ACIDS)}")
    _require(state, {"encoder.bias": (width,), "embedding.layer.weight": (2 * width, width),
                     "embedding.layer.bias": (2 * width,), "decoder.weight": (1, 2 * width),
                     "decoder.bias": (1,)}, path)
    model = FitnessCNN(seq_len, width=width, kernel_size=kernel)
    model.load_state_dict({"conv.weight": state["encoder.weight"][:, _PERM], "conv.bias": state["encoder.bias"],
                           "mlp.weight": state["embedding.layer.weight"], "mlp.bias": state["embedding.layer.bias"],
                           "out.weight": state["decoder.weight"], "out.bias": state["decoder.bias"]})
    model.eval()
    if seq_len is not None:
        model.n_features_in_ = seq_len  # fitted: predict() accepts sequences of this length
    else:
        model.n_train_steps_ = 0
    return model


class ConvSeqVAE(nn.Module):
    """The official VLGPO sequence VAE layout (1-D convolutions), to run the released checkpoints.

    Encoder: token embedding (20 -> 64), Conv1d 64->128 (k3, s1), 128->64 (k3, s2), 64->32 (k3, s2), ReLU after
    each, flatten (32 * L/4) -> linear mu and log-variance. Decoder: linear -> ReLU -> (32, L/4), ConvTranspose1d
    32->64, 64->128 (k3, s2, output padding 1), 128->64 (k3, s1), ReLU between, per-position linear 64 -> 20.
    ``n_pad`` trailing positions (GFP: 3, the padding 237 -> 240) are dropped from the decoder's output, as
    ``sample.py`` does before the predictor and before decoding. The official training code is not published,
    so this class has no ``fit``; train :class:`SeqVAE` for your own data.

    Args:
        seq_len: padded length L (a multiple of 4; AAV 28, GFP 240).
        latent_dim: dimension of z (AAV 16, GFP 32).
        n_pad: trailing padding positions to drop from the output.
    """

    def __init__(self, seq_len: int = 28, latent_dim: int = 16, n_pad: int = 0, n_tokens: int = 20,
                 embedding_dim: int = 64):
        super().__init__()
        if seq_len < 4 or seq_len % 4:
            raise ValueError(f"seq_len must be a positive multiple of 4, got {seq_len}")
        if latent_dim < 1 or n_tokens < 1 or embedding_dim < 1:
            raise ValueError(f"latent_dim, n_tokens and embedding_dim must be >= 1, got {latent_dim}, {n_tokens}, "
                             f"{embedding_dim}")
        if not 0 <= n_pad < seq_len:
            raise ValueError(f"n_pad must be in [0, seq_len), got {n_pad}")
        self.seq_len, self.latent_dim, self.n_pad, self.n_tokens = seq_len, latent_dim, n_pad, n_tokens
        flat = 32 * (seq_len // 4)
        self.embedding = nn.Embedding(n_tokens, embedding_dim)
        self.encoder = nn.Sequential(nn.Conv1d(embedding_dim, 128, 3, 1, 1), nn.ReLU(), nn.Conv1d(128, 64, 3, 2, 1),
                                     nn.ReLU(), nn.Conv1d(64, 32, 3, 2, 1), nn.ReLU())
        self.fc_mu, self.fc_logvar = nn.Linear(flat, latent_dim), nn.Linear(flat, latent_dim)
        self.fc_dec = nn.Linear(latent_dim, flat)
        self.decoder = nn.Sequential(nn.ConvTranspose1d(32, 64, 3, 2, 1, 1), nn.ReLU(),
                                     nn.ConvTranspose1d(64, 128, 3, 2, 1, 1), nn.ReLU(),
                                     nn.ConvTranspose1d(128, embedding_dim, 3, 1, 1))
        self.output_proj = nn.Linear(embedding_dim, n_tokens)

    @property
    def output_len(self) -> int:
        """Length of the decoded sequences (``seq_len - n_pad``)."""
        return self.seq_len - self.n_pad

    def encode(self, x) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and log-variance ``(n, latent_dim)`` of padded token sequences ``(n, seq_len)``."""
        tokens = tokens_tensor(x, self.n_tokens, self.seq_len, self.fc_mu.weight.device)
        h = self.encoder(self.embedding(tokens).transpose(1, 2)).flatten(1)
        return self.fc_mu(h), self.fc_logvar(h)

    def forward(self, x) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Logits ``(n, output_len, n_tokens)`` of ``D(mu)``, and ``mu``, ``logvar`` (as :class:`SeqVAE`)."""
        mu, logvar = self.encode(x)
        return self.decode(mu), mu, logvar

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Per-position logits ``(n, output_len, n_tokens)`` of latents ``(n, latent_dim)``."""
        if z.ndim != 2 or z.shape[1] != self.latent_dim:
            raise ValueError(f"z must have shape (n, {self.latent_dim}), got {tuple(z.shape)}")
        h = F.relu(self.fc_dec(z)).view(z.shape[0], 32, self.seq_len // 4)
        logits = self.output_proj(self.decoder(h).transpose(1, 2))
        return logits[:, :self.output_len]

    def embed(self, x) -> torch.Tensor:
        """E(x): the posterior mean."""
        with torch.no_grad():
            return self.encode(x)[0]

    def decode_tokens(self, z: torch.Tensor) -> np.ndarray:
        """Argmax decoding of latents to an ``(n, output_len)`` token array."""
        with torch.no_grad():
            return self.decode(z).argmax(-1).cpu().numpy()


def load_official_vae(path: str | Path, seq_len: int = 28, latent_dim: int = 16, n_pad: int = 0) -> ConvSeqVAE:
    """An official VAE checkpoint (``checkpoints/vae/vae_<split>.pt``) as a :class:`ConvSeqVAE` in our alphabet.

    AAV: ``seq_len=28, latent_dim=16``; GFP: ``seq_len=240, latent_dim=32, n_pad=3``. The embedding rows and the
    output projection rows are permuted from the official token order to ours.
    """
    state = _load_state_dict(path)
    vae = ConvSeqVAE(seq_len, latent_dim, n_pad)
    expected = {k: tuple(v.shape) for k, v in vae.state_dict().items()}
    _require(state, expected, path)
    state = dict(state)
    for key in ("embedding.weight", "output_proj.weight", "output_proj.bias"):
        state[key] = state[key][_PERM]
    vae.load_state_dict({k: state[k] for k in expected})
    return vae.eval()


# ------------------------------------------------------------------------------------- a whole release folder
RELEASE_TASKS = ("aav_medium", "aav_hard", "gfp_medium", "gfp_hard")
"""The four benchmark tasks of the official release (``<protein>_<difficulty>``)."""

OFFICIAL_SEEDS = (960, 931, 908, 994, 80)
"""The five sampling seeds of the released ``sample.py`` (``np.random.seed(41); np.random.randint(0, 1000, 5)``)."""


def release_files(root: str | Path, task: str, predictor: str = "unsmoothed") -> dict[str, Path]:
    """The files of ``task`` in a VLGPO release folder ``root`` (uzh-dqbm-cmi/VLGPO's layout), by role.

    ``train``: ``data/<task>.csv`` (the GGS training split, the base pool of novelty); ``ground_truth``:
    ``data/<protein>_ground_truth.csv`` (every measured sequence of the landscape); ``vae``:
    ``checkpoints/vae/vae_<task>.pt``; ``predictor``: ``checkpoints/predictor/<predictor>/predictor_<task>.ckpt``;
    ``oracle``: ``checkpoints/oracle/oracle_<protein>.ckpt``. Paths only; nothing is read.
    """
    if task not in RELEASE_TASKS:
        raise ValueError(f"task must be one of {', '.join(RELEASE_TASKS)}, got {task!r}")
    if predictor not in ("unsmoothed", "smoothed"):
        raise ValueError(f"predictor must be 'unsmoothed' or 'smoothed', got {predictor!r}")
    root, protein = Path(root).expanduser(), task.split("_")[0]
    return {"train": root / "data" / f"{task}.csv", "ground_truth": root / "data" / f"{protein}_ground_truth.csv",
            "vae": root / "checkpoints" / "vae" / f"vae_{task}.pt",
            "predictor": root / "checkpoints" / "predictor" / predictor / f"predictor_{task}.ckpt",
            "oracle": root / "checkpoints" / "oracle" / f"oracle_{protein}.ckpt"}


def load_vlgpo_release(root: str | Path, task: str = "aav_medium", predictor: str = "unsmoothed",
                       device: torch.device | str = "cpu") -> dict:
    """Read one task of the official VLGPO release (github.com/uzh-dqbm-cmi/VLGPO, commit 9909084) from ``root``.

    Layout (as in the repository; see :func:`release_files`)::

        <root>/data/<task>.csv                                    sequence,score (training split)
        <root>/data/<protein>_ground_truth.csv                    sequence,score (all measured sequences)
        <root>/checkpoints/vae/vae_<task>.pt                      {"state_dict": ...} (conv VAE)
        <root>/checkpoints/predictor/<predictor>/predictor_<task>.ckpt   Lightning .ckpt (GGS BaseCNN)
        <root>/checkpoints/oracle/oracle_<protein>.ckpt           Lightning .ckpt (GGS BaseCNN oracle)

    Every file is checked before any is read: a missing one raises one FileNotFoundError naming it and the layout.
    Only AAV is read (L = 28): the GFP VAE works on 240 positions, and the padding of the 237 residues that its
    encoder was trained with is not published, so the training split cannot be encoded for a flow prior (ValueError).

    Returns a dict: ``train_seqs`` (strings), ``train_scores`` (raw), ``gt_seqs`` / ``gt_scores`` (the landscape),
    ``vae`` (:class:`ConvSeqVAE`), ``predictor`` and ``oracle`` (:class:`FitnessCNN`, raw fitness scale),
    ``fitness_range`` (:data:`OFFICIAL_FITNESS_RANGE`), ``latent_dim``, ``step_settings`` ((J, alpha) of the
    official config).
    """
    files = release_files(root, task, predictor)
    protein, difficulty = task.split("_")
    if protein != "aav":
        raise ValueError(f"task {task!r}: only the AAV tasks are supported (the GFP VAE's 237 -> 240 input padding "
                         "is not published, so the training split cannot be encoded for the flow prior)")
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"missing {missing[0]} (and {len(missing) - 1} more); a VLGPO release folder holds "
                                f"data/{task}.csv, data/{protein}_ground_truth.csv, checkpoints/vae/vae_{task}.pt, "
                                f"checkpoints/predictor/{predictor}/predictor_{task}.ckpt and "
                                f"checkpoints/oracle/oracle_{protein}.ckpt (as github.com/uzh-dqbm-cmi/VLGPO)")
    seq_len = OFFICIAL_VAE_LENGTH[protein]
    train_seqs, train_scores = load_ggs_split(files["train"])
    gt_seqs, gt_scores = load_ggs_split(files["ground_truth"])
    for name, seqs in (("train", train_seqs), ("ground_truth", gt_seqs)):
        if len(seqs[0]) != seq_len:
            raise ValueError(f"{files[name]}: sequences have length {len(seqs[0])}, {protein.upper()} has {seq_len}")
    return {"train_seqs": train_seqs, "train_scores": train_scores, "gt_seqs": gt_seqs, "gt_scores": gt_scores,
            "vae": load_official_vae(files["vae"], seq_len, OFFICIAL_LATENT_DIM[protein]).to(device),
            "predictor": load_ggs_cnn(files["predictor"], seq_len).to(device),
            "oracle": load_ggs_cnn(files["oracle"], seq_len).to(device),
            "fitness_range": OFFICIAL_FITNESS_RANGE[protein], "latent_dim": OFFICIAL_LATENT_DIM[protein],
            "step_settings": official_step_settings(protein, difficulty, predictor)}
