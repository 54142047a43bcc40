"""MATS components: noise injection, the transformer mapper, Santa memory fusion, the MATS wrapper.

Shapes follow the paper's code with every size a parameter: CLAP embeddings of width
``dim_clip`` (1024 in the paper), ``prefix_len`` soft tokens (40) of the LM width ``dim_embed``.
:class:`MATSConfig` holds the method's settings (mapper, text-only fine-tuning, noise, Santa) and
:func:`train_mats` is the fine-tuning recipe. The paper's formulation is its Section 3.1 and Santa its
Section 3.4 (section numbers second-hand; the paper gives no pseudocode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml25.common.checks import ConfigError, check_fields
from icml25.papers.mats.data import CAPTION_PROMPT, SOUNDS_PROMPT, Scenes


@dataclass
class MATSConfig:
    """MATS's own settings: the mapper, the text-only fine-tuning recipe (:func:`train_mats`), noise injection
    and Santa (:class:`SantaMemory`). The defaults are the synthetic world's quick run; the paper's values are
    given per field (the official code's, where it has them).

    The experiments nest it whole as ``mats`` (``--set mats.noise_variance=0.02``). A value out of range raises
    :class:`~icml25.common.checks.ConfigError` (a ``ValueError``) naming the field.
    """

    prefix_len: int = 4
    """Soft tokens from the mapper, also its number of CLAP tokens ``clip_len`` (40 in the paper)."""
    mapper_layers: int = 2
    """Transformer layers of the mapper (8 in the paper)."""
    train_steps: int = 300
    """Fine-tuning steps of mapper + LM (Adam) per model."""
    lr: float = 1e-3
    """Adam learning rate of the fine-tuning."""
    batch_size: int = 128
    """Training examples per fine-tuning step."""
    noise_variance: float = 0.015
    """Per-coordinate variance of the Gaussian noise injected into the text embeddings in training and into
    Santa's memory items (the paper's 0.015)."""
    n_clusters: int = 100
    """Santa's k-means clusters of the training-text memory bank (the paper's 100; at most the bank's size is
    used)."""
    k: int = 32
    """Santa's neighbours per query (the paper's 32)."""
    temperature: float = 10.0
    """Santa's softmax temperature T (the paper's 10)."""
    lam: float = 0.3
    """Santa's mixing weight lambda of the retrieved text (the paper's 0.3)."""
    santa_normalize_query: bool = False
    """Santa on the L2-normalised audio embedding (True) instead of the raw encoder output (False, the official
    code)."""

    def __post_init__(self) -> None:
        # bounds: a run beyond these would need > ~100 GB or days
        check_fields(self, positive=("prefix_len", "mapper_layers", "lr", "batch_size", "n_clusters", "k",
                                     "temperature"),
                     nonnegative=("train_steps", "noise_variance"), finite=("lr", "noise_variance", "temperature"),
                     fraction=("lam",),
                     at_most={"prefix_len": 10**4, "mapper_layers": 10**3, "train_steps": 10**7, "batch_size": 10**6,
                              "n_clusters": 10**6, "k": 10**6})
        if not isinstance(self.santa_normalize_query, bool):
            raise ConfigError(f"MATSConfig.santa_normalize_query must be a bool, got {self.santa_normalize_query!r}")


def _check_variance(variance: float) -> None:
    if not (0.0 <= variance < float("inf")):
        raise ValueError(f"noise variance must be a finite number >= 0, got {variance!r}")


def _check_embeddings(x: Tensor, name: str, dims: int | None = 2, width: int | None = None) -> None:
    """Raise a clear error unless ``x`` is a floating tensor (of ``dims`` dims, last width ``width``) of finite values.

    The finiteness check needs values, so it is skipped for meta tensors (shape-only tracing).
    """
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    if (dims is not None and x.dim() != dims) or x.dim() < 1 or x.shape[-1] == 0 \
            or (width is not None and x.shape[-1] != width):
        want = "a non-empty last dimension" if dims is None else f"shape (B, {width if width else 'dim'})"
        raise ValueError(f"{name} must have {want}, got shape {tuple(x.shape)}")
    if not x.is_meta and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (it contains NaN or inf)")


def noise_injection(x: Tensor, variance: float = 0.015, uniform: bool = False,
                    generator: torch.Generator | None = None) -> Tensor:
    """Normalise each row, add zero-mean noise of per-coordinate ``variance``, re-normalise.

    ``t = normalize(x)``, ``t~ = normalize(t + eps)`` with ``eps ~ N(0, variance I)`` (or uniform with
    the same variance when ``uniform``), as ``noise_injection`` in the official MATS-LLaMA/models/utils.py
    (which normalises first, so the noise scale is relative to a unit vector whatever the input norm).
    With ``variance = 0`` this is ``normalize(x)`` (the official code returns ``x`` unchanged; the two agree
    on the unit-norm inputs it is called with). The official ``uniform_noise`` flag is ignored there (always
    Gaussian); here ``uniform=True`` really draws ``U(-a, a)`` with ``a^2 / 3 = variance``.
    """
    _check_variance(variance)
    _check_embeddings(x, "x", dims=None)
    x = F.normalize(x, dim=-1)
    if variance > 0:
        if uniform:  # U(-a, a) has variance a^2 / 3
            a = (3.0 * variance) ** 0.5
            eps = (torch.rand(x.shape, generator=generator, dtype=x.dtype, device=x.device) * 2 - 1) * a
        else:
            eps = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * variance ** 0.5
        x = x + eps
    return F.normalize(x, dim=-1)


@runtime_checkable
class ContrastiveEncoderPair(Protocol):
    """A CLAP-like model: text and audio encoders into one shared embedding space.

    Both return the encoders' projection outputs as they are (msclap's are LayerNorm outputs, not
    unit vectors); MATS normalises where the paper's code does (text before noise, audio after Santa)."""

    def encode_text(self, text: Tensor) -> Tensor:
        """Embed a batch of tokenised texts, shape (B, dim)."""
        ...

    def encode_audio(self, audio: Tensor) -> Tensor:
        """Embed a batch of audio inputs, shape (B, dim)."""
        ...


class TransformerMapper(nn.Module):
    """CLAP embedding -> ``prefix_len`` soft tokens for the LM (the paper's TransformerMapper).

    ``Linear(dim_clip -> clip_len * width)`` gives ``clip_len`` tokens; ``prefix_len`` learnable
    constants are appended; a pre-LN transformer (``n_heads`` heads, MLP ratio ``mlp_ratio``)
    runs over both; the outputs at the constants' positions are projected to ``dim_embed``.
    """

    def __init__(self, dim_clip: int, dim_embed: int, prefix_len: int = 40, clip_len: int = 40, n_layers: int = 8,
                 n_heads: int = 8, mlp_ratio: float = 2.0, width: int | None = None) -> None:
        super().__init__()
        width = dim_embed if width is None else width
        for name, v in dict(dim_clip=dim_clip, dim_embed=dim_embed, prefix_len=prefix_len, clip_len=clip_len,
                            n_layers=n_layers, n_heads=n_heads, width=width).items():
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if width % n_heads:
            raise ValueError(f"width {width} must be divisible by n_heads {n_heads}")
        self.dim_clip, self.prefix_len, self.clip_len, self.width = dim_clip, prefix_len, clip_len, width
        self.linear = nn.Linear(dim_clip, clip_len * width)
        self.prefix_const = nn.Parameter(torch.randn(prefix_len, width))
        layer = nn.TransformerEncoderLayer(width, n_heads, int(width * mlp_ratio), dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.proj = nn.Linear(width, dim_embed)

    def forward(self, x: Tensor) -> Tensor:
        """Map (B, dim_clip) embeddings to (B, prefix_len, dim_embed) soft tokens."""
        if x.dim() != 2 or x.shape[1] != self.dim_clip:
            raise ValueError(f"expected input of shape (B, {self.dim_clip}), got {tuple(x.shape)}")
        b = x.shape[0]
        tokens = self.linear(x).view(b, self.clip_len, self.width)
        seq = torch.cat([tokens, self.prefix_const.unsqueeze(0).expand(b, -1, -1)], dim=1)
        return self.proj(self.transformer(seq)[:, self.clip_len:])


def kmeans(x: Tensor, n_clusters: int, iters: int = 10, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Plain Lloyd k-means (random distinct points as initial centres); returns (centres, labels).

    Args:
        x: (N, dim) floating points; n_clusters: in [1, N]; iters: Lloyd iterations (>= 0);
        generator: random generator of the initial centres (on ``x``'s device).
    """
    _check_embeddings(x, "x")
    n = x.shape[0]
    if not 1 <= n_clusters <= n:
        raise ValueError(f"n_clusters must be in [1, {n}] (number of points), got {n_clusters}")
    if int(iters) != iters or iters < 0:
        raise ValueError(f"iters must be an integer >= 0, got {iters!r}")
    centres = x[torch.randperm(n, generator=generator, device=x.device)[:n_clusters]].clone()
    for _ in range(iters):
        labels = torch.cdist(x, centres).argmin(1)
        sums = torch.zeros_like(centres).index_add_(0, labels, x)
        counts = torch.bincount(labels, minlength=n_clusters).unsqueeze(1)
        centres = torch.where(counts > 0, sums / counts.clamp_min(1), centres)  # empty cluster keeps its centre
    return centres, torch.cdist(x, centres).argmin(1)


class SantaMemory(nn.Module):
    """Santa: fuse an audio embedding with noised nearby training-text embeddings.

    The bank (normalised text embeddings) is clustered by k-means. For a query a (the CLAP audio
    embedding as the audio encoder returns it, *not* L2-normalised, as in ``encode_audio`` of the official
    MATS-LLaMA/models/mats.py): nearest centre by Euclidean distance; inside that cluster the ``k`` nearest
    items (the cluster is first padded to ``k`` by repeating its first member); noise of ``noise_variance``
    is injected into them (m~_j); weights ``w = softmax(temperature * <a, m~_j>)``;
    ``f_Santa(a) = (1 - lam) a + lam sum_j w_j m~_j``, then ``normalize`` (the official connector
    normalises before the mapper). With ``normalize_query=True`` the query is first replaced by
    ``normalize(a)`` (the unit-sphere variant; identical to the default for unit-norm queries). On a raw
    embedding of norm |a| >> 1 (a LayerNorm output of width D has |a| ~ sqrt(D)) the text term is
    relatively weaker and the softmax sharper than on the unit sphere.

    The memory is built once, at construction, and kept in buffers (so it moves with ``.to(device)``, is
    cast by ``.double()`` and travels in the ``state_dict``): ``bank`` (N, dim), ``centres`` (n_clusters, dim)
    and ``members`` (n_clusters, W) bank indices per cluster, -1 for an empty slot, W the largest cluster.
    Loading a ``state_dict`` resizes these buffers to the stored memory's shapes.
    """

    _MEMORY = ("bank", "centres", "members")

    def __init__(self, text_embeddings: Tensor, n_clusters: int = 100, k: int = 32, temperature: float = 10.0,
                 lam: float = 0.3, noise_variance: float = 0.015, kmeans_iters: int = 10,
                 generator: torch.Generator | None = None, normalize_query: bool = False) -> None:
        super().__init__()
        if not isinstance(normalize_query, bool):
            raise ValueError(f"normalize_query must be a bool, got {normalize_query!r}")
        self.normalize_query = normalize_query
        _check_embeddings(text_embeddings, "text_embeddings")
        if int(k) != k or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam!r}")
        if not 0 < temperature < float("inf"):
            raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
        _check_variance(noise_variance)
        self.k, self.temperature, self.lam, self.noise_variance = int(k), float(temperature), float(lam), noise_variance
        bank = F.normalize(text_embeddings.detach(), dim=-1)
        centres, labels = kmeans(bank, n_clusters, kmeans_iters, generator)
        counts = torch.bincount(labels, minlength=n_clusters)
        width = int(counts.max())
        order = torch.argsort(labels, stable=True)
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.arange(len(labels), device=labels.device) - starts[labels[order]]
        members = torch.full((n_clusters, width), -1, dtype=torch.long, device=labels.device)
        members[labels[order], slot] = order  # (clusters, max size), -1 = empty
        self.register_buffer("bank", bank)
        self.register_buffer("centres", centres)
        self.register_buffer("members", members)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        # the memory's shapes depend on the data it was built from: take the stored ones
        for name in self._MEMORY:
            stored = state_dict.get(prefix + name)
            if isinstance(stored, Tensor) and stored.shape != getattr(self, name).shape:
                setattr(self, name, torch.empty_like(getattr(self, name)).resize_(stored.shape))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _queries(self, audio_emb: Tensor) -> Tensor:
        """The query Santa works with: the embedding as given, or its unit vector with ``normalize_query``."""
        _check_embeddings(audio_emb, "audio_emb", width=self.bank.shape[1])
        v = audio_emb.to(self.bank.dtype)
        return F.normalize(v, dim=-1) if self.normalize_query else v

    def neighbours(self, audio_emb: Tensor) -> Tensor:
        """Indices into the bank (B, k) of the items Santa uses for each query.

        Nearest centre by Euclidean distance; the cluster's members, padded to ``k`` by repeating the
        cluster's first member when it is smaller (as the official code does), ranked by distance to the query.
        """
        v = self._queries(audio_emb)
        cluster = torch.cdist(v, self.centres).argmin(1)
        cand = self.members[cluster]  # (B, W), -1 = empty slot
        if cand.shape[1] < self.k:
            cand = torch.cat([cand, cand.new_full((cand.shape[0], self.k - cand.shape[1]), -1)], dim=1)
        size = (cand >= 0).sum(1, keepdim=True)
        pos = torch.arange(cand.shape[1], device=cand.device)
        used = pos < torch.clamp(size, min=self.k)  # members, then copies of the first up to k in all
        cand = torch.where(cand >= 0, cand, cand[:, :1])
        dist = (v.unsqueeze(1) - self.bank[cand]).norm(dim=-1).masked_fill(~used, torch.inf)
        top = dist.topk(self.k, dim=1, largest=False).indices
        return cand.gather(1, top)

    def weights(self, audio_emb: Tensor, memory: Tensor) -> Tensor:
        """Softmax weights (B, k) = ``softmax(temperature * <v, m~_j>)`` over the (noised) memory items (B, k, dim)."""
        v = self._queries(audio_emb)
        return torch.softmax(self.temperature * torch.einsum("bd,bkd->bk", v, memory.to(v.dtype)), dim=1)

    def fuse(self, audio_emb: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Santa-fused, normalised embeddings (B, dim) for audio embeddings (B, dim) (raw or unit-norm)."""
        v = self._queries(audio_emb)
        idx = self.neighbours(v)
        mem = noise_injection(self.bank[idx], self.noise_variance, generator=generator)  # m~_j, unit rows
        w = self.weights(v, mem)  # softmax(T <v, m~_j>)
        fused = (1 - self.lam) * v + self.lam * (w.unsqueeze(-1) * mem).sum(1)  # f_Santa(v)
        return F.normalize(fused, dim=-1)  # the connector's normalisation before the mapper

    def forward(self, audio_emb: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Same as :meth:`fuse`: (B, dim) audio embeddings -> (B, dim) Santa-fused embeddings."""
        return self.fuse(audio_emb, generator)


class MATS(nn.Module):
    """Text-only-trained audio LM: frozen CLAP -> mapper -> LM (``lm(inputs_embeds) -> logits``).

    ``lm`` must expose ``embed(tokens) -> (B, L, D)`` and ``forward(inputs_embeds) -> (B, L, V)``;
    token id 1 is BOS, 2 is EOS, 0 is padding. Training (:meth:`loss`) never touches audio.
    ``forward(audio, tokens)`` gives the LM's logits over ``[BOS, soft prefix of the audio, tokens]``.
    A :class:`SantaMemory` is a submodule: its memory moves and is saved with the model.
    """

    PAD, BOS, EOS = 0, 1, 2

    def __init__(self, clap: ContrastiveEncoderPair, mapper: TransformerMapper, lm: nn.Module, use_santa: bool = True,
                 santa: SantaMemory | None = None, noise_variance: float = 0.015) -> None:
        super().__init__()
        if not isinstance(clap, ContrastiveEncoderPair):
            raise ValueError("clap must provide encode_text and encode_audio")
        if use_santa and santa is None:
            raise ValueError("use_santa=True needs a SantaMemory (santa=...)")
        _check_variance(noise_variance)
        self.clap, self.mapper, self.lm = clap, mapper, lm
        self.use_santa, self.santa, self.noise_variance = use_santa, santa, noise_variance

    def _logits_from_embedding(self, emb: Tensor, tokens: Tensor) -> Tensor:
        """LM logits (B, 1 + prefix_len + T, V) over ``[BOS, mapper(emb), tokens]``."""
        return self.lm(self._context(emb, tokens))

    def _loss_from_embedding(self, emb: Tensor, prompt: Tensor, answer: Tensor) -> Tensor:
        logits = self._logits_from_embedding(emb, torch.cat([prompt, answer], dim=1))
        n_ctx = logits.shape[1] - answer.shape[1]  # BOS, soft prefix and prompt
        pred = logits[:, n_ctx - 1:-1]  # positions predicting the answer tokens
        return F.cross_entropy(pred.reshape(-1, pred.shape[-1]), answer.reshape(-1), ignore_index=self.PAD)

    def forward(self, audio: Tensor, tokens: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Teacher-forced logits (B, 1 + prefix_len + T, V) of the LM for audio inputs and (B, T) tokens.

        The audio embedding is Santa-fused when ``use_santa``; position ``i`` predicts the next token.
        """
        emb = self.audio_embedding(audio, generator=generator)
        return self._logits_from_embedding(emb, _tokens_for(tokens, emb.shape[0], "tokens"))

    def loss(self, text_batch: tuple[Tensor, Tensor, Tensor], generator: torch.Generator | None = None) -> Tensor:
        """Text-only loss: ``(caption tokens, prompt tokens, answer tokens)``; the caption's CLAP text
        embedding, noised, conditions the LM; next-token cross-entropy on the answer (EOS included).

        The caption may also be given as its CLAP text embedding already computed, a floating (B, dim) tensor
        (e.g. msclap's ``get_text_embeddings`` outputs stored in a file): then ``clap.encode_text`` is not called.
        """
        caption, prompt, answer = text_batch
        with torch.no_grad():
            if isinstance(caption, Tensor) and caption.is_floating_point():
                _check_embeddings(caption, "caption embeddings")
                t = F.normalize(caption.detach(), dim=-1)
            else:
                t = F.normalize(self.clap.encode_text(caption), dim=-1)
        return self._loss_from_embedding(noise_injection(t, self.noise_variance, generator=generator), prompt, answer)

    def loss_from_audio(self, audio: Tensor, prompt: Tensor, answer: Tensor) -> Tensor:
        """Audio-supervised loss (the upper-bound baseline): condition on ``normalize(E_A(audio))``."""
        with torch.no_grad():
            v = F.normalize(self.clap.encode_audio(audio), dim=-1)
        return self._loss_from_embedding(v, prompt, answer)

    def audio_embedding(self, audio: Tensor, use_santa: bool | None = None,
                        generator: torch.Generator | None = None) -> Tensor:
        """The mapper's input for audio: ``normalize(f_Santa(E_A(audio)))`` when Santa is on, else
        ``normalize(E_A(audio))``. Santa receives the raw encoder output (see :class:`SantaMemory`)."""
        with torch.no_grad():
            a = self.clap.encode_audio(audio)
        santa = self.use_santa if use_santa is None else use_santa
        if santa and self.santa is None:
            raise ValueError("use_santa=True needs a SantaMemory (santa=...)")
        return self.santa.fuse(a, generator) if santa else F.normalize(a, dim=-1)

    @torch.no_grad()
    def generate_from_embedding(self, emb: Tensor, prompt: Tensor, max_new_tokens: int = 8) -> Tensor:
        """Greedy decoding from embeddings (B, dim) and prompt tokens (B, P) or (P,); returns (B, T), 0-padded
        after EOS (the paper uses 4-beam search; greedy suffices for the tiny LM)."""
        if int(max_new_tokens) != max_new_tokens or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        b = emb.shape[0]
        prompt = _tokens_for(prompt, b, "prompt")
        ctx = self._context(emb, prompt)
        out = torch.zeros(b, 0, dtype=torch.long, device=emb.device)
        done = torch.zeros(b, dtype=torch.bool, device=emb.device)
        for _ in range(max_new_tokens):
            nxt = self.lm(ctx)[:, -1].argmax(-1)
            nxt = torch.where(done, torch.zeros_like(nxt), nxt)
            out = torch.cat([out, nxt[:, None]], 1)
            done |= nxt == self.EOS
            if bool(done.all()):
                break
            ctx = torch.cat([ctx, self.lm.embed(nxt[:, None])], 1)
        return out

    def _context(self, emb: Tensor, tokens: Tensor) -> Tensor:
        """Input embeddings ``[BOS, mapper(emb), embed(tokens)]`` of the LM, (B, 1 + prefix_len + T, D)."""
        bos = torch.full((emb.shape[0], 1), self.BOS, dtype=torch.long, device=emb.device)
        return torch.cat([self.lm.embed(bos), self.mapper(emb), self.lm.embed(tokens)], dim=1)

    def generate(self, audio_batch: Tensor, prompt: Tensor, max_new_tokens: int = 8,
                 generator: torch.Generator | None = None) -> Tensor:
        """Answer ``prompt`` about each audio input (Santa-fused when ``use_santa``)."""
        return self.generate_from_embedding(self.audio_embedding(audio_batch, generator=generator), prompt,
                                            max_new_tokens)


def train_mats(model: MATS, scenes: Scenes, cfg: MATSConfig, seed: int, mode: str = "text",
               text_embeddings: Tensor | None = None) -> MATS:
    """Fine-tune ``model``'s mapper and LM (Adam, ``cfg.lr``) for ``cfg.train_steps`` steps; return it.

    Each step draws ``cfg.batch_size`` training scenes (with replacement) and, for each, with probability 1/2 the
    caption task (answer: the caption) or the "which sounds?" question (answer: the concept words in index order).
    ``mode="text"`` is MATS's text-only training (:meth:`MATS.loss`: the caption's CLAP text embedding, noised
    with ``model.noise_variance``; audio is never read); ``mode="audio"`` the audio-supervised upper bound
    (:meth:`MATS.loss_from_audio`). Runs on the device of the model's parameters, with a generator seeded by
    ``seed`` there. ``text_embeddings`` (one row per scene, floating), when given, are the captions' CLAP text
    embeddings already computed (the paper's data: a real CLAP's outputs read from a file); text mode then
    conditions on them instead of calling ``clap.encode_text`` on the caption tokens.

    Raises:
        ValueError: ``mode`` not ``"text"`` or ``"audio"``; ``text_embeddings`` not one row per scene.
    """
    if mode not in ("text", "audio"):
        raise ValueError(f"mode must be 'text' or 'audio', got {mode!r}")
    if text_embeddings is not None and (text_embeddings.dim() != 2 or len(text_embeddings) != len(scenes.caption)):
        raise ValueError(f"text_embeddings must have shape ({len(scenes.caption)}, dim) (one row per scene), got "
                         f"{tuple(text_embeddings.shape)}")
    device = model.lm.head.weight.device
    g = torch.Generator(device=device).manual_seed(seed)
    feats, cap, snd = (torch.from_numpy(x).to(device) for x in (scenes.features, scenes.caption, scenes.sounds))
    if text_embeddings is not None:
        text_embeddings = text_embeddings.to(device)
    params = list(model.mapper.parameters()) + list(model.lm.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    n, b = len(cap), cfg.batch_size
    for _ in range(cfg.train_steps):
        i = torch.randint(0, n, (b,), generator=g, device=device)
        use_cap = torch.rand(b, generator=g, device=device) < 0.5
        prompt = torch.where(use_cap, CAPTION_PROMPT, SOUNDS_PROMPT)[:, None]
        ans = torch.where(use_cap[:, None], cap[i], snd[i])
        if mode == "audio":
            loss = model.loss_from_audio(feats[i], prompt, ans)
        else:
            caption = cap[i] if text_embeddings is None else text_embeddings[i]
            loss = model.loss((caption, prompt, ans), generator=g)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def _tokens_for(tokens: Tensor, batch: int, name: str) -> Tensor:
    """(B, T) or (T,) integer tokens as (batch, T); a clear error for a float tensor or another batch size."""
    if not isinstance(tokens, Tensor) or tokens.is_floating_point() or tokens.is_complex() \
            or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of token ids, got {getattr(tokens, 'dtype', type(tokens))}")
    if tokens.dim() == 1:
        tokens = tokens.expand(batch, -1)
    if tokens.dim() != 2 or tokens.shape[0] != batch:
        raise ValueError(f"{name} must have shape ({batch}, T) or (T,), got {tuple(tokens.shape)}")
    return tokens
