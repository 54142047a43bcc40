"""Synthetic audio world, a tiny CLAP trained here, and a tiny causal LM (stand-ins for CLAP / LLaMA)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml25.common.checks import check_recipe

CONCEPTS = ("bark", "rain", "siren", "engine", "bell", "whistle", "drum", "hum", "chirp", "buzz", "knock", "wind")
"""Sound concepts; each is one parametric generator and one word."""
SPECIAL = ("<pad>", "<bos>", "<eos>", "<cap>", "<snd>", "a", "over", "with")
VOCAB = SPECIAL + CONCEPTS
WORD = {w: i for i, w in enumerate(VOCAB)}
CAPTION_PROMPT, SOUNDS_PROMPT = WORD["<cap>"], WORD["<snd>"]
SR = 8000
"""Sample rate (Hz)."""


def _concept_signal(c: int, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` clips of concept ``c`` with random phase / small frequency jitter, shape (n, length)."""
    t = np.arange(length) / SR
    j = rng.uniform(0.93, 1.07, (n, 1))
    ph = rng.uniform(0, 2 * np.pi, (n, 1))
    noise = rng.standard_normal((n, length))
    name = CONCEPTS[c]
    if name == "bark":
        gate = (np.sin(2 * np.pi * 3 * j * t + ph) > 0.5)
        return gate * sum(np.sin(2 * np.pi * 400 * h * j * t) / h for h in (1, 2, 3))
    if name == "rain":
        return 0.5 * noise
    if name == "siren":
        return np.sin(2 * np.pi * (900 * t + 300 / (2 * np.pi * 1.0) * np.sin(2 * np.pi * 1.0 * j * t + ph)))
    if name == "engine":
        return sum(np.sin(2 * np.pi * 80 * h * j * t + ph * h) / h for h in range(1, 6))
    if name == "bell":
        env = np.exp(-8 * ((t + ph / (2 * np.pi) * 0.5) % 0.5))
        return env * (np.sin(2 * np.pi * 1500 * j * t) + 0.6 * np.sin(2 * np.pi * 2400 * j * t))
    if name == "whistle":
        return np.sin(2 * np.pi * 2500 * j * t + ph)
    if name == "drum":
        env = np.exp(-30 * ((t + ph / (2 * np.pi) * 0.25) % 0.25))
        return env * np.sin(2 * np.pi * 120 * j * t)
    if name == "hum":
        return np.sin(2 * np.pi * 50 * j * t + ph) + 0.5 * np.sin(2 * np.pi * 100 * j * t + ph)
    if name == "chirp":
        tau = (t + ph / (2 * np.pi) * 0.2) % 0.2
        return np.sin(2 * np.pi * (1000 * tau + 5000 * tau ** 2) * j)
    if name == "buzz":
        return np.sign(np.sin(2 * np.pi * 200 * j * t + ph)) * 0.5
    if name == "knock":
        env = np.exp(-200 * ((t + ph / (2 * np.pi) * 0.5) % 0.5))
        return env * noise * 2
    # wind: low-passed noise with slow amplitude modulation
    k = np.ones(16) / 16
    low = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, noise) * 3
    return low * (1 + 0.8 * np.sin(2 * np.pi * 0.7 * j * t + ph))


def _mel_filterbank(n_fft: int, n_mels: int) -> np.ndarray:
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    inv = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    pts = inv(np.linspace(mel(0), mel(SR / 2), n_mels + 2))
    freqs = np.linspace(0, SR / 2, n_fft // 2 + 1)
    fb = np.zeros((n_mels, freqs.size))
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[i] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
    return fb


def log_mel_stats(audio: np.ndarray, n_fft: int = 256, hop: int = 128, n_mels: int = 32) -> np.ndarray:
    """Mean and std over time of the log-mel spectrogram (numpy STFT), shape (n, 2 * n_mels)."""
    if audio.ndim != 2 or audio.shape[1] < n_fft:
        raise ValueError(f"audio must be (n, length >= {n_fft}), got {audio.shape}")
    idx = np.arange(0, audio.shape[1] - n_fft + 1, hop)[:, None] + np.arange(n_fft)
    frames = audio[:, idx] * np.hanning(n_fft)
    power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    lm = np.log(power @ _mel_filterbank(n_fft, n_mels).T + 1e-6)
    return np.concatenate([lm.mean(1), lm.std(1)], axis=1).astype(np.float32)


@dataclass
class Scenes:
    """Scenes of 1-2 concepts: audio features, concept indicator, caption / sounds-answer tokens."""

    features: np.ndarray
    """(n, 64) log-mel statistics."""
    concepts: np.ndarray
    """(n, n_concepts) 0/1 presence."""
    caption: np.ndarray
    """(n, L) caption tokens followed by EOS, 0-padded."""
    sounds: np.ndarray
    """(n, L) answer to 'which sounds are present?' (concept words in index order) then EOS."""


def make_scenes(n: int, seed: int, duration: float = 0.5, n_concepts: int = len(CONCEPTS)) -> Scenes:
    """``n`` random scenes: one or two distinct concepts with gains in [0.4, 1] plus faint noise, captions from
    templates ("a bark", "bark over rain", "siren with hum"); the louder concept is named first."""
    if n < 1 or not 2 <= n_concepts <= len(CONCEPTS):
        raise ValueError(f"need n >= 1 and 2 <= n_concepts <= {len(CONCEPTS)}, got n={n}, n_concepts={n_concepts}")
    rng = np.random.default_rng(seed)
    length = int(SR * duration)
    two = rng.random(n) < 0.6
    first = rng.integers(0, n_concepts, n)
    second = (first + rng.integers(1, n_concepts, n)) % n_concepts
    gains = np.sort(rng.uniform(0.4, 1.0, (n, 2)), axis=1)[:, ::-1]
    audio = 0.02 * rng.standard_normal((n, length))
    for slot, which, active in ((0, first, np.ones(n, bool)), (1, second, two)):
        for c in range(n_concepts):
            sel = np.flatnonzero(active & (which == c))
            if sel.size:
                sig = _concept_signal(c, sel.size, length, rng)
                sig = sig / (np.sqrt((sig ** 2).mean(1, keepdims=True)) + 1e-9)
                audio[sel] += gains[sel, slot:slot + 1] * sig
    concepts = np.zeros((n, n_concepts), np.int64)
    concepts[np.arange(n), first] = 1
    concepts[two, second[two]] = 1
    L = 5
    caption = np.zeros((n, L), np.int64)
    sounds = np.zeros((n, L), np.int64)
    off = len(SPECIAL)
    one = ~two
    caption[one, 0], caption[one, 1], caption[one, 2] = WORD["a"], off + first[one], WORD["<eos>"]
    conj = np.where(rng.random(n) < 0.5, WORD["over"], WORD["with"])
    caption[two, 0], caption[two, 1], caption[two, 2], caption[two, 3] = (off + first[two], conj[two],
                                                                          off + second[two], WORD["<eos>"])
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    sounds[one, 0], sounds[one, 1] = off + first[one], WORD["<eos>"]
    sounds[two, 0], sounds[two, 1], sounds[two, 2] = off + lo[two], off + hi[two], WORD["<eos>"]
    return Scenes(log_mel_stats(audio), concepts, caption, sounds)


def concepts_in(tokens: Tensor | np.ndarray, n_concepts: int = len(CONCEPTS)) -> np.ndarray:
    """0/1 matrix (B, n_concepts) of the concept words in each generated token row (up to its EOS)."""
    tok = np.asarray(tokens)
    before_eos = np.cumsum(tok == WORD["<eos>"], axis=1) == 0
    out = np.zeros((tok.shape[0], n_concepts), np.int64)
    rows, cols = np.nonzero(before_eos & (tok >= len(SPECIAL)) & (tok < len(SPECIAL) + n_concepts))
    out[rows, tok[rows, cols] - len(SPECIAL)] = 1
    return out


def set_f1(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per-row F1 between predicted and true 0/1 concept sets (0 when the prediction is empty)."""
    tp = (pred * true).sum(1)
    denom = pred.sum(1) + true.sum(1)
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def check_token_ids(tokens: Tensor, vocab: int, name: str = "tokens") -> None:
    """Raise TypeError unless ``tokens`` is an integer tensor, ValueError unless its ids lie in [0, vocab).

    The range check needs values, so it is skipped for meta tensors (shape-only tracing).
    """
    if not isinstance(tokens, Tensor) or tokens.is_floating_point() or tokens.is_complex() \
            or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of token ids, got {getattr(tokens, 'dtype', type(tokens))}")
    if not tokens.is_meta and tokens.numel() and not bool(((tokens >= 0) & (tokens < vocab)).all()):
        raise ValueError(f"{name} must lie in [0, {vocab}), got values in [{int(tokens.min())}, {int(tokens.max())}]")


class TinyCLAP(nn.Module):
    """Contrastive audio-text pair: MLP on log-mel statistics; mean word embedding + MLP for text.

    Each encoder ends in a LayerNorm, like msclap's projection head (linear, GELU-linear residual,
    LayerNorm), and ``encode_audio`` / ``encode_text`` return that output *unnormalised* (norm about
    sqrt(dim)), as msclap's encoders do: this is the raw audio embedding the official Santa works on.
    ``forward(audio, text)`` gives the InfoNCE logits ``exp(log_scale) <a_i/|a_i|, t_j/|t_j|>`` (B_audio, B_text).
    """

    def __init__(self, n_audio_features: int = 64, vocab: int = len(VOCAB), dim: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.audio_net = nn.Sequential(nn.Linear(n_audio_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                       nn.ReLU(), nn.Linear(hidden, dim), nn.LayerNorm(dim))
        self.word = nn.Embedding(vocab, hidden, padding_idx=0)
        self.text_net = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, dim),
                                      nn.LayerNorm(dim))
        self.register_buffer("mu", torch.zeros(n_audio_features))
        self.register_buffer("sd", torch.ones(n_audio_features))
        self.log_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))

    def encode_audio(self, audio: Tensor) -> Tensor:
        """Raw (LayerNorm-output, not unit-norm) audio embeddings (B, dim) from log-mel statistics (B, n_features)."""
        if audio.dim() != 2 or audio.shape[1] != self.mu.shape[0]:
            raise ValueError(f"audio must have shape (B, {self.mu.shape[0]}), got {tuple(audio.shape)}")
        return self.audio_net((audio - self.mu) / self.sd)

    def encode_text(self, text: Tensor) -> Tensor:
        """Raw (LayerNorm-output) text embeddings (B, dim) from token ids (B, L), 0 = padding; EOS is ignored."""
        check_token_ids(text, self.word.num_embeddings, "text")
        if text.dim() != 2:
            raise ValueError(f"text must have shape (B, L), got {tuple(text.shape)}")
        words = self.word(text)
        mask = ((text != 0) & (text != WORD["<eos>"])).to(words.dtype).unsqueeze(-1)
        bag = (words * mask).sum(1) / mask.sum(1).clamp_min(1)
        return self.text_net(bag)

    def forward(self, audio: Tensor, text: Tensor) -> Tensor:
        """InfoNCE logits (B_audio, B_text): ``min(exp(log_scale), 100) * cos(E_A(audio), E_T(text))``."""
        a, t = F.normalize(self.encode_audio(audio), dim=-1), F.normalize(self.encode_text(text), dim=-1)
        return self.log_scale.exp().clamp(max=100) * a @ t.T


def train_clap(scenes: Scenes, steps: int, seed: int, dim: int = 32, batch: int = 128, lr: float = 2e-3,
               device: str | torch.device = "cpu") -> TinyCLAP:
    """Train :class:`TinyCLAP` with the symmetric InfoNCE loss (learnable temperature) and freeze it.

    The model is initialised on the CPU (the same weights on every device), then trained on ``device``.
    """
    check_recipe(steps=steps, batch=batch, lr=lr)
    torch.manual_seed(seed)
    g = torch.Generator(device=device).manual_seed(seed)
    model = TinyCLAP(scenes.features.shape[1], dim=dim).to(device)
    feats = torch.from_numpy(scenes.features).to(device)
    model.mu.copy_(feats.mean(0))
    model.sd.copy_(feats.std(0) + 1e-5)
    caps = torch.from_numpy(scenes.caption).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        i = torch.randint(0, len(feats), (batch,), generator=g, device=g.device)
        logits = model(feats[i], caps[i])
        same = (caps[i].unsqueeze(1) == caps[i].unsqueeze(0)).all(-1).to(logits.dtype)  # duplicates are positives
        target = same / same.sum(1, keepdim=True)
        loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.requires_grad_(False)
    return model.eval()


class TinyLM(nn.Module):
    """Causal transformer LM on ``inputs_embeds`` (the 'LLM'); ``embed`` maps token ids to embeddings."""

    def __init__(self, vocab: int = len(VOCAB), d: int = 64, n_layers: int = 2, n_heads: int = 4,
                 max_len: int = 64) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, n_heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.d = d

    def embed(self, tokens: Tensor) -> Tensor:
        """Token embeddings (B, L, d)."""
        check_token_ids(tokens, self.tok.num_embeddings)
        return self.tok(tokens)

    def forward(self, inputs_embeds: Tensor) -> Tensor:
        """Next-token logits (B, L, vocab) under a causal mask."""
        L = inputs_embeds.shape[1]
        if L > self.pos.shape[0]:
            raise ValueError(f"sequence length {L} exceeds max_len {self.pos.shape[0]}")
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=inputs_embeds.device, dtype=inputs_embeds.dtype)
        return self.head(self.norm(self.blocks(inputs_embeds + self.pos[:L], mask=mask, is_causal=True)))


def pretrain_lm(lm: TinyLM, scenes: Scenes, steps: int, seed: int, batch: int = 128, lr: float = 2e-3) -> TinyLM:
    """Language-model pretraining on the caption text alone: ``[BOS, prompt, answer, EOS]`` sequences.

    Runs on the device of ``lm``'s parameters.
    """
    check_recipe(steps=steps, batch=batch, lr=lr)
    device = lm.head.weight.device
    g = torch.Generator(device=device).manual_seed(seed)
    cap, snd = torch.from_numpy(scenes.caption).to(device), torch.from_numpy(scenes.sounds).to(device)
    opt = torch.optim.Adam(lm.parameters(), lr=lr)
    n = len(cap)
    for _ in range(steps):
        i = torch.randint(0, n, (batch,), generator=g, device=device)
        use_cap = torch.rand(batch, generator=g, device=device) < 0.5
        ans = torch.where(use_cap[:, None], cap[i], snd[i])
        head = torch.stack([torch.full((batch,), WORD["<bos>"], device=device),
                            torch.where(use_cap, CAPTION_PROMPT, SOUNDS_PROMPT)], 1)
        seq = torch.cat([head, ans], 1)
        logits = lm(lm.embed(seq))[:, 1:-1]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seq[:, 2:].reshape(-1), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lm


