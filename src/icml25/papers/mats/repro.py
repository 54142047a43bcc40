"""MATS reproduction in a synthetic audio world: text-only training, noise injection, Santa.

Per seed: scenes, a tiny CLAP trained here (InfoNCE), a tiny LM pretrained on caption text, then three
mapper+LM fine-tunes on the same steps: (a) text-only, no noise; (b)/(c) text-only with noise (evaluated
on raw audio embeddings, and with Santa); (d) trained on real audio embeddings (upper bound).
Settings and thresholds were fixed before the first quick run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    Fidelity,
    Metrics,
    ProgressFn,
    TorchConfig,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.mats.data import (
    CAPTION_PROMPT,
    SOUNDS_PROMPT,
    TinyLM,
    concepts_in,
    make_scenes,
    pretrain_lm,
    set_f1,
    train_clap,
)
from icml25.papers.mats.figures import world_figures
from icml25.papers.mats.model import MATS, MATSConfig, SantaMemory, TransformerMapper, train_mats

MAX_PREFIX_LEN = 57
"""Longest mapper prefix the tiny LM (max_len 64) can read: 1 BOS + prefix + 1 prompt + up to 5 answer tokens."""


@dataclass
class WorldConfig(TorchConfig):
    n_train: int = 2000
    """Training scenes (their captions are the text-only training data and the Santa memory bank)."""
    n_test: int = 400
    """Test scenes (audio only at test time)."""
    clip_dim: int = 32
    """Width of the tiny CLAP's shared space (1024 in the paper)."""
    clap_steps: int = 300
    """InfoNCE steps for the tiny CLAP."""
    lm_pretrain_steps: int = 200
    """Text-only LM pretraining steps (stand-in for a pretrained LLM)."""
    mats: MATSConfig = field(default_factory=MATSConfig)
    """The method's settings (``mats.train_steps``, ``mats.prefix_len``, ``mats.mapper_layers``,
    ``mats.noise_variance``, ``mats.n_clusters``, ``mats.k``, ``mats.temperature``, ``mats.lam``,
    ``mats.santa_normalize_query``, ``mats.lr``, ``mats.batch_size``); every condition trains with them, (a) and
    (d) without noise."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"n_train": 10**6, "n_test": 10**6, "clip_dim": 10**4, "clap_steps": 10**7,
                                    "lm_pretrain_steps": 10**7})
        check_fields(self, positive=("n_train", "n_test", "clip_dim"), nonnegative=("clap_steps", "lm_pretrain_steps"))
        if self.mats.prefix_len > MAX_PREFIX_LEN:
            raise ConfigError(f"WorldConfig.mats.prefix_len must be <= {MAX_PREFIX_LEN} (the tiny LM's 64 positions "
                              f"hold BOS, the prefix, a prompt and 5 answer tokens), got {self.mats.prefix_len}")


def _evaluate(model: MATS, emb: torch.Tensor, truth: np.ndarray) -> tuple[float, float]:
    """(caption concept-set F1, exact-set accuracy of the 'which sounds?' answer) from embeddings."""
    def answer(prompt: int) -> np.ndarray:
        tokens = model.generate_from_embedding(emb, torch.tensor([prompt], device=emb.device), 6)
        return concepts_in(tokens.cpu().numpy())

    f1 = set_f1(answer(CAPTION_PROMPT), truth)
    ans = answer(SOUNDS_PROMPT)
    return float(f1.mean()), float((ans == truth).all(1).mean())


def run_world(cfg: WorldConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """One seed of the four conditions plus the no-gap control; returns F1/accuracy and paired differences.

    Every model is initialised on the CPU and trained and evaluated on ``cfg.device``.
    """
    device = torch.device(cfg.device)
    torch.manual_seed(seed)
    train, test = make_scenes(cfg.n_train, seed=10 * seed + 1), make_scenes(cfg.n_test, seed=10 * seed + 2)
    clap = train_clap(train, cfg.clap_steps, seed, dim=cfg.clip_dim, device=device)
    progress(1, 6)
    lm0 = pretrain_lm(TinyLM().to(device), train, cfg.lm_pretrain_steps, seed)
    progress(2, 6)
    on_device = lambda x: torch.from_numpy(x).to(device)  # noqa: E731
    with torch.no_grad():  # raw encoder outputs (LayerNorm, not unit-norm), as msclap's
        bank = clap.encode_text(on_device(train.caption))
        a_test = clap.encode_audio(on_device(test.features))
        t_raw = clap.encode_text(on_device(test.caption))
    v, t_test = F.normalize(a_test, dim=-1), F.normalize(t_raw, dim=-1)  # what the mapper sees without Santa
    mc = cfg.mats
    santa = SantaMemory(bank, min(mc.n_clusters, len(bank)), mc.k, mc.temperature, mc.lam, mc.noise_variance,
                        generator=torch.Generator(device=device).manual_seed(seed),
                        normalize_query=mc.santa_normalize_query)
    g_eval = torch.Generator(device=device).manual_seed(seed + 99)
    v_santa = santa.fuse(a_test, generator=g_eval)  # Santa on the raw audio embedding (official encode_audio)

    def new_model(noise: float) -> MATS:
        torch.manual_seed(seed + 7)
        mapper = TransformerMapper(cfg.clip_dim, lm0.d, mc.prefix_len, mc.prefix_len, mc.mapper_layers, n_heads=4)
        return MATS(clap, mapper.to(device), copy.deepcopy(lm0), use_santa=False, noise_variance=noise)

    models = {}
    for j, (name, noise, mode) in enumerate((("a", 0.0, "text"), ("b", mc.noise_variance, "text"),
                                             ("d", 0.0, "audio"))):
        models[name] = train_mats(new_model(noise), train, mc, seed, mode)
        progress(3 + j, 6)
    truth = test.concepts
    # trivial predictor: the most frequent training concept set, answered for every test clip
    rows, counts = np.unique(train.concepts, axis=0, return_counts=True)
    majority = np.broadcast_to(rows[counts.argmax()], truth.shape)
    res = {"a": _evaluate(models["a"], v, truth), "b": _evaluate(models["b"], v, truth),
           "c": _evaluate(models["b"], v_santa, truth), "d": _evaluate(models["d"], v, truth)}
    ctrl_raw = _evaluate(models["b"], t_test, truth)[0]
    ctrl_santa = _evaluate(models["b"], santa.fuse(t_raw, generator=g_eval), truth)[0]
    nearest = lambda x: float((1 - (F.normalize(x, dim=-1) @ santa.bank.T).max(1).values).mean())  # noqa: E731
    m: Metrics = {}
    for c, (f1, acc) in res.items():
        m[f"f1_{c}"], m[f"acc_{c}"] = f1, acc
    m.update({
        "f1_noise_minus_plain": res["b"][0] - res["a"][0], "acc_noise_minus_plain": res["b"][1] - res["a"][1],
        "f1_santa_minus_noise": res["c"][0] - res["b"][0], "acc_santa_minus_noise": res["c"][1] - res["b"][1],
        "f1_santa_over_audio": res["c"][0] / max(res["d"][0], 1e-9),
        "f1_majority": float(set_f1(majority, truth).mean()),
        "acc_majority": float((majority == truth).all(1).mean()),
        "f1_santa_minus_majority": res["c"][0] - float(set_f1(majority, truth).mean()),
        "paired_cosine": float((v * t_test).sum(1).mean()),
        "audio_norm": float(a_test.norm(dim=-1).mean()),
        "text_dist_raw": nearest(v), "text_dist_santa": nearest(v_santa),
        "text_dist_ratio": nearest(v_santa) / max(nearest(v), 1e-9),
        "control_f1_text": ctrl_raw, "control_f1_santa_minus_text": ctrl_santa - ctrl_raw,
    })
    return m


_STANDIN = ("a synthetic 12-concept audio world with a 32-d CLAP and a tiny LM trained here stands in for msclap "
            "(1024-d) + LLaMA/LoRA on AudioTIA-5M")

EXPERIMENTS = [
    Experiment(
        name="world",
        description="Synthetic 12-concept audio world: tiny CLAP + tiny LM; text-only training with/without noise, "
                    "with/without Santa, versus an audio-supervised mapper; caption concept-F1 and close-ended "
                    "accuracy on test audio.",
        config=WorldConfig,
        run=run_world,
        presets={"smoke": {"n_train": 300, "n_test": 60, "clap_steps": 40, "lm_pretrain_steps": 30,
                           "mats.train_steps": 30, "mats.n_clusters": 20},
                 "quick": {}, "full": {"n_train": 6000, "n_test": 1000, "clap_steps": 1000,
                                       "mats.train_steps": 2000, "mats.prefix_len": 10, "mats.mapper_layers": 8}},
        seeds={"smoke": 1, "quick": 3, "full": 5},
        figures=world_figures,
        fidelity={
            "smoke": Fidelity("mechanism", _STANDIN + "; 300 scenes, 30 training steps"),
            "quick": Fidelity("mechanism", _STANDIN + "; 2000 scenes, 300 training steps, 2-layer mapper"),
            "full": Fidelity("mechanism", _STANDIN + "; 6000 scenes, 2000 training steps, 8-layer mapper"),
        },
        full_requirements="The paper's full setting needs LAION/MS CLAP weights, Vicuna/LLaMA-7B with LoRA, "
                          "AudioTIA-5M and the ESC-50/AudioCaps/Clotho/AIR-Bench/MMAU test sets, plus a GPU; "
                          "'full' here only scales up the synthetic world.",
    ),
]

_P = "text-only MATS competitive with audio-supervised LALMs (abstract); exact numbers not retrieved"
_TIE_DIFF = "difference in [0, 1], no paper number; under 1 point does not matter"
_NOISE_SRC = "Sec. 3 (section number second-hand: reproducibility summary)"
_NOISE_FAIR = ("noise in the shared CLAP space is the paper's means to cover the audio-text modality gap (its bound's "
               "discrepancy term): any text-only mapper on a contrastive space with a gap must show it")
_SANTA_SRC = "second-hand: the claim card's summary of the paper's ablation (not retrieved)"
_SANTA_FAIR = ("an ablation on the paper's benchmarks with the real CLAP gap: the paper's models with less training "
               "data would test its direction, a synthetic 32-d world need not")
CLAIMS = [
    # the trivial predictor answers the most frequent training concept set for every clip, and 0.1 F1 above it is
    # the least that shows the model reads the audio (fixed before this run)
    Claim(id="learned", kind="check",
          statement="(ours, beyond the paper: a sanity check) MATS's caption concept-F1 on test audio beats the "
                    "trivial most-frequent-set predictor by >= 0.1.",
          paper_value="no such number in the paper",
          experiment="world", metric="f1_santa_minus_majority", op=">=", threshold=0.1, resolution=0.02,
          resolution_reason="F1 in [0, 1]; within 2 points of the 0.1 bar is moot"),
    Claim(id="noise_helps_f1", kind="paper", source=_NOISE_SRC, fair_at="mechanism", fair_at_reason=_NOISE_FAIR,
          requires=("learned",),
          statement="Noise injection improves text-only training's caption concept-F1 on audio.",
          paper_value="noise injection bridges the modality gap (Sec. 3)", experiment="world",
          metric="f1_noise_minus_plain", op=">=", threshold=0.0, resolution=0.01, resolution_reason="F1 " + _TIE_DIFF),
    Claim(id="noise_helps_acc", kind="paper", source=_NOISE_SRC, fair_at="mechanism", fair_at_reason=_NOISE_FAIR,
          requires=("learned",),
          statement="Noise injection improves close-ended accuracy on audio.",
          paper_value="noise injection bridges the modality gap (Sec. 3)", experiment="world",
          metric="acc_noise_minus_plain", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="accuracy " + _TIE_DIFF),
    Claim(id="santa_helps_f1", kind="paper", source=_SANTA_SRC, fair_at="reduced", fair_at_reason=_SANTA_FAIR,
          requires=("learned",),
          statement="Santa improves caption concept-F1 over noise injection alone.",
          paper_value="Santa improves over noise-only (ablation)", experiment="world", metric="f1_santa_minus_noise",
          op=">=", threshold=0.0, resolution=0.01, resolution_reason="F1 " + _TIE_DIFF),
    Claim(id="santa_helps_acc", kind="paper", source=_SANTA_SRC, fair_at="reduced", fair_at_reason=_SANTA_FAIR,
          requires=("learned",),
          statement="Santa improves close-ended accuracy over noise injection alone.",
          paper_value="Santa improves over noise-only (ablation)", experiment="world", metric="acc_santa_minus_noise",
          op=">=", threshold=0.0, resolution=0.01, resolution_reason="accuracy " + _TIE_DIFF),
    # in the synthetic world text-only training alone already reaches ~0.96 of the audio-supervised F1, so a PASS
    # here says little about the paper's 'competitive' (hence fair_at "paper")
    Claim(id="near_audio_supervised", kind="paper", source="abstract", fair_at="paper",
          fair_at_reason="'competitive' compares the paper's text-only model with LALMs trained on large-scale "
                         "audio-language pairs, on its benchmarks at its data scale",
          requires=("learned",),
          statement="Text-only MATS reaches >= 80% of the audio-supervised mapper's F1 (the 80% bar is ours: the "
                    "paper says 'competitive' without a ratio).",
          paper_value=_P, experiment="world", metric="f1_santa_over_audio", op=">=", threshold=0.8, resolution=0.02,
          resolution_reason="F1 ratio, 2.5% of the 0.8 bar"),
    # a check: holds by construction (Santa mixes retrieved text embeddings into the audio embedding)
    Claim(id="santa_closer_to_text", kind="check",
          statement="Santa moves audio embeddings toward the training text (nearest-text cosine distance ratio <= 1).",
          paper_value="Santa reduces the modality discrepancy (Sec. 4)", experiment="world",
          metric="text_dist_ratio", op="<=", threshold=1.0, resolution=0.02,
          resolution_reason="distance ratio; a change under 2% is no move toward the text"),
]

API_EXAMPLE = """
import torch
from icml25.papers.mats import noise_injection, SantaMemory, TransformerMapper

g = torch.Generator().manual_seed(0)
text = torch.nn.functional.normalize(torch.randn(500, 32, generator=g), dim=-1)
audio = torch.nn.functional.normalize(text[:4] + 0.5, dim=-1)          # a shifted 'modality'
santa = SantaMemory(text, n_clusters=20, k=8, temperature=10.0, lam=0.3, generator=g)
fused = santa.fuse(audio, generator=g)
print("nearest-text cosine, raw  :", (audio @ text.T).max(1).values)
print("nearest-text cosine, Santa:", (fused @ text.T).max(1).values)
mapper = TransformerMapper(dim_clip=32, dim_embed=64, prefix_len=4, clip_len=4, n_layers=2, n_heads=4)
print(mapper(noise_injection(text[:2], 0.015, generator=g)).shape)
"""
