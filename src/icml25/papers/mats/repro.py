"""MATS reproduction in a synthetic audio world: text-only training, noise injection, Santa.

Per seed: scenes, a tiny CLAP trained here (InfoNCE), a tiny LM pretrained on caption text, then three
mapper+LM fine-tunes on the same steps: (a) text-only, no noise; (b)/(c) text-only with noise (evaluated
on raw audio embeddings, and with Santa); (d) trained on real audio embeddings (upper bound).
Settings and thresholds were fixed before the first quick run.

``paper_data`` runs the same conditions on the paper's data: Clotho v2 (or AudioCaps) captions and audio embedded by
the user's CLAP into the file that ``paper_data.embed_dataset`` writes (``data_path``); without it ``reproduce``
skips the experiment with one line. Its claims repeat the world's paper claims' statistics, thresholds and tie
bands and were fixed before any run on the data.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

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
    CONCEPTS,
    SOUNDS_PROMPT,
    Scenes,
    TinyLM,
    concepts_in,
    make_scenes,
    pretrain_lm,
    set_f1,
    train_clap,
)
from icml25.papers.mats.figures import paper_data_figures, world_figures
from icml25.papers.mats.model import (
    MATS,
    ContrastiveEncoderPair,
    MATSConfig,
    SantaMemory,
    TransformerMapper,
    train_mats,
)
from icml25.papers.mats.paper_data import (
    TRAIN_TEST,
    EmbeddingCLAP,
    build_vocabulary,
    caption_scenes,
    load_embeddings,
    reference_concepts,
    stored_tensor,
)

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


@dataclass
class PaperDataConfig(WorldConfig):
    """The world's four conditions on the paper's data: Clotho v2 or AudioCaps captions and audio embedded by the
    user's CLAP (msclap), read from the file that :func:`~icml25.papers.mats.paper_data.embed_dataset` writes.

    The training split's captions (Clotho: development; AudioCaps: train) train text-only through their stored text
    embeddings (``n_train`` of them drawn by seed when there are more); the test split's clips (Clotho: evaluation;
    AudioCaps: test) are answered from their stored audio embeddings (``n_test`` drawn by seed). ``clip_dim`` and
    ``clap_steps`` do not apply (the CLAP is the user's; the width is the file's).
    """

    data_path: str = ""
    """The embeddings file (``.npz``) written by ``icml25.papers.mats.paper_data.embed_dataset`` from Clotho v2 or
    AudioCaps with the user's CLAP. The experiment runs only when it is set."""
    n_concepts: int = 30
    """Concepts: the most frequent content words of the training captions (fewer if they have fewer); the
    caption F1 and the 'which sounds?' answer are over them."""
    vocab_size: int = 1000
    """Tokens of the tiny LM (specials, concepts, the most frequent other words, ``<unk>``)."""
    max_words: int = 20
    """Caption words kept (longer captions are cut; the concept sets use every word)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_concepts", "vocab_size", "max_words"),
                     at_most={"n_concepts": 10**4, "vocab_size": 10**6, "max_words": 500})
        if self.vocab_size < self.n_concepts + 9:
            raise ConfigError(f"PaperDataConfig.vocab_size must be >= n_concepts + 9 (8 special tokens and <unk>), "
                              f"got {self.vocab_size}")
        if not isinstance(self.data_path, str) or (self.data_path and not Path(self.data_path).expanduser().is_file()):
            raise ConfigError(f"PaperDataConfig.data_path must be an existing embeddings file (.npz written by "
                              f"icml25.papers.mats.paper_data.embed_dataset; empty: the experiment does not run), "
                              f"got {self.data_path!r}")


def run_paper_data(cfg: PaperDataConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """The world's conditions on the paper's data (see :class:`PaperDataConfig`); extra metrics: the counts used."""
    if not cfg.data_path:
        raise ValueError("PaperDataConfig.data_path is empty: the paper_data experiment needs the embeddings file")
    device = torch.device(cfg.device)
    emb = load_embeddings(cfg.data_path)
    train_split, test_split = TRAIN_TEST[emb.dataset]
    rng = np.random.default_rng(seed)
    caps = np.flatnonzero(emb.split[emb.caption_clip] == train_split)
    if len(caps) > cfg.n_train:
        caps = np.sort(rng.choice(caps, cfg.n_train, replace=False))
    if not len(caps):
        raise ValueError(f"{cfg.data_path}: no captions of {emb.dataset}'s training split {train_split!r}")
    vocab = build_vocabulary(emb.caption[caps].tolist(), cfg.n_concepts, cfg.vocab_size)
    train = caption_scenes(emb.caption[caps].tolist(), emb.audio_embeddings[emb.caption_clip[caps]], vocab,
                           cfg.max_words)
    clips = np.flatnonzero(emb.split == test_split)
    refs = [emb.caption[emb.caption_clip == i].tolist() for i in clips]
    truth = reference_concepts(refs, vocab)
    keep = truth.any(1)  # a clip whose references agree on no concept has no answer to score
    clips, truth, refs = clips[keep], truth[keep], [r for r, k in zip(refs, keep) if k]
    if len(clips) > cfg.n_test:
        pick = np.sort(rng.choice(len(clips), cfg.n_test, replace=False))
        clips, truth, refs = clips[pick], truth[pick], [refs[i] for i in pick]
    if not len(clips):
        raise ValueError(f"{cfg.data_path}: no clip of {emb.dataset}'s test split {test_split!r} whose reference "
                         f"captions agree on a concept")
    first_ref = np.array([np.flatnonzero(emb.caption_clip == i)[0] for i in clips])
    torch.manual_seed(seed)
    progress(1, 6)
    max_len = max(64, 3 + cfg.mats.prefix_len + cfg.max_words + 1)
    lm0 = pretrain_lm(TinyLM(vocab=len(vocab.words), max_len=max_len).to(device), train, cfg.lm_pretrain_steps,
                      seed)
    progress(2, 6)
    bank = stored_tensor(emb.text_embeddings[caps], device)
    inputs = _Inputs(EmbeddingCLAP(bank.shape[1]), lm0, train, bank, stored_tensor(emb.audio_embeddings[clips], device),
                     stored_tensor(emb.text_embeddings[first_ref], device), truth, text_embeddings=bank,
                     max_new_tokens=cfg.max_words + 1)
    m = _conditions(cfg, seed, inputs, progress)
    m.update({"n_train_captions": float(len(caps)), "n_test_clips": float(len(clips)),
              "n_concepts_used": float(vocab.n_concepts), "embedding_dim": float(bank.shape[1])})
    return m


def _evaluate(model: MATS, emb: torch.Tensor, truth: np.ndarray, max_new_tokens: int = 6,
              n_concepts: int = len(CONCEPTS)) -> tuple[float, float]:
    """(caption concept-set F1, exact-set accuracy of the 'which sounds?' answer) from embeddings."""
    def answer(prompt: int) -> np.ndarray:
        tokens = model.generate_from_embedding(emb, torch.tensor([prompt], device=emb.device), max_new_tokens)
        return concepts_in(tokens.cpu().numpy(), n_concepts)

    f1 = set_f1(answer(CAPTION_PROMPT), truth)
    ans = answer(SOUNDS_PROMPT)
    return float(f1.mean()), float((ans == truth).all(1).mean())


def run_world(cfg: WorldConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """One seed of the four conditions plus the no-gap control; returns F1/accuracy and paired differences.

    Every model is initialised on the CPU and trained and evaluated on ``cfg.device``. A :class:`PaperDataConfig`
    runs the same conditions on the paper's data (:func:`run_paper_data`).
    """
    if isinstance(cfg, PaperDataConfig):
        return run_paper_data(cfg, seed, progress)
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
    return _conditions(cfg, seed, _Inputs(clap, lm0, train, bank, a_test, t_raw, test.concepts), progress)


@dataclass
class _Inputs:
    """What the four conditions start from: a frozen CLAP's raw outputs and the pretrained LM."""

    clap: ContrastiveEncoderPair
    lm0: TinyLM
    train: Scenes
    bank: torch.Tensor
    """The training captions' text embeddings (Santa's memory)."""
    a_test: torch.Tensor
    """The test clips' audio embeddings."""
    t_raw: torch.Tensor
    """A reference caption's text embedding per test clip (the no-gap control)."""
    truth: np.ndarray
    """The test clips' concept sets."""
    text_embeddings: torch.Tensor | None = None
    """The training captions' stored embeddings (the paper's data), else the CLAP encodes the tokens."""
    max_new_tokens: int = 6


def _conditions(cfg: WorldConfig, seed: int, inputs: _Inputs, progress: ProgressFn) -> Metrics:
    """The four conditions and the no-gap control (see :class:`_Inputs`)."""
    clap, lm0, train, bank, a_test, t_raw, truth = (inputs.clap, inputs.lm0, inputs.train, inputs.bank, inputs.a_test,
                                                    inputs.t_raw, inputs.truth)
    text_embeddings, max_new_tokens = inputs.text_embeddings, inputs.max_new_tokens
    device = bank.device
    n_concepts = truth.shape[1]
    v, t_test = F.normalize(a_test, dim=-1), F.normalize(t_raw, dim=-1)  # what the mapper sees without Santa
    mc = cfg.mats
    santa = SantaMemory(bank, min(mc.n_clusters, len(bank)), mc.k, mc.temperature, mc.lam, mc.noise_variance,
                        generator=torch.Generator(device=device).manual_seed(seed),
                        normalize_query=mc.santa_normalize_query)
    g_eval = torch.Generator(device=device).manual_seed(seed + 99)
    v_santa = santa.fuse(a_test, generator=g_eval)  # Santa on the raw audio embedding (official encode_audio)

    def new_model(noise: float) -> MATS:
        torch.manual_seed(seed + 7)
        mapper = TransformerMapper(bank.shape[1], lm0.d, mc.prefix_len, mc.prefix_len, mc.mapper_layers, n_heads=4)
        return MATS(clap, mapper.to(device), copy.deepcopy(lm0), use_santa=False, noise_variance=noise)

    models = {}
    for j, (name, noise, mode) in enumerate((("a", 0.0, "text"), ("b", mc.noise_variance, "text"),
                                             ("d", 0.0, "audio"))):
        models[name] = train_mats(new_model(noise), train, mc, seed, mode, text_embeddings)
        progress(3 + j, 6)
    # trivial predictor: the most frequent training concept set, answered for every test clip
    rows, counts = np.unique(train.concepts, axis=0, return_counts=True)
    majority = np.broadcast_to(rows[counts.argmax()], truth.shape)
    evaluate = lambda model, emb: _evaluate(model, emb, truth, max_new_tokens, n_concepts)  # noqa: E731
    res = {"a": evaluate(models["a"], v), "b": evaluate(models["b"], v), "c": evaluate(models["b"], v_santa),
           "d": evaluate(models["d"], v)}
    ctrl_raw = evaluate(models["b"], t_test)[0]
    ctrl_santa = evaluate(models["b"], santa.fuse(t_raw, generator=g_eval))[0]
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


_PAPER_DATA = ("the paper's data (Clotho v2 development captions text-only -> evaluation audio, or AudioCaps train "
               "-> test) embedded by the user's msclap; substitutions: a 2-layer 64-d LM trained from scratch on "
               "the captions for Vicuna/LLaMA-7B + LoRA (full fine-tuning), the data set's own captions for "
               "AudioTIA-5M, greedy decoding, concept-F1 / exact-set accuracy over the 30 most frequent caption "
               "words for CIDEr/SPIDEr and the benchmarks' QA")
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
                          "'full' here only scales up the synthetic world; the paper's data run in paper_data.",
    ),
    Experiment(
        name="paper_data",
        description="The world's four conditions on the paper's data: Clotho v2 (or AudioCaps) captions train "
                    "text-only through the user's CLAP text embeddings (with/without noise, with/without Santa, "
                    "versus a mapper trained on the real audio embeddings); concept-F1 of the captions and "
                    "exact-set accuracy of 'which sounds?' on the test split's audio embeddings.",
        config=PaperDataConfig,
        run=run_world,
        presets={"smoke": {"n_train": 300, "n_test": 60, "lm_pretrain_steps": 30, "mats.train_steps": 30,
                           "mats.n_clusters": 20},
                 "quick": {"n_train": 20000, "n_test": 1000, "lm_pretrain_steps": 1000, "mats.train_steps": 2000,
                           "mats.prefix_len": 10, "mats.mapper_layers": 8},
                 "full": {"n_train": 10**6, "n_test": 10**6, "lm_pretrain_steps": 2000, "vocab_size": 5000,
                          "mats.train_steps": 5000, "mats.prefix_len": 40, "mats.mapper_layers": 8}},
        seeds={"smoke": 1, "quick": 3, "full": 5},
        figures=paper_data_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "the paper's data through the user's CLAP at 300 training captions / 60 "
                                           "test clips and 30 training steps: a harness check"),
            "quick": Fidelity("reduced", _PAPER_DATA + "; up to 20000 training captions (all of Clotho's 19195) "
                                         "and 1000 test clips drawn by seed; 10 soft tokens, 8 mapper layers, "
                                         "2000 steps"),
            "full": Fidelity("reduced", _PAPER_DATA + "; every training caption and test clip; the paper's 40 soft "
                                        "tokens and 8 mapper layers, 5000 steps"),
        },
        data_setting="data_path",
        full_requirements=(
            "The paper's data embedded by the user's CLAP, one .npz file: run once, with msclap installed "
            "(pip install msclap; its weights download on first use, outside icml25), "
            "`from msclap import CLAP; from icml25.papers.mats.paper_data import embed_dataset; "
            "embed_dataset(CLAP(version='2023', use_cuda=True), '/data/clotho', '/data/clotho/msclap.npz', "
            "dataset='clotho', encoder='msclap 2023')`, where /data/clotho holds Clotho v2's "
            "clotho_captions_{development,evaluation}.csv and the WAVs in development/ and evaluation/ "
            "(dataset='audiocaps': train.csv / test.csv of cdjkim/audiocaps and the clips as "
            "<split>/<audiocap_id>.wav, as audiocaps-download names them, or naming='youtube_id' for "
            "<split>/<youtube_id>.wav); then `icml25 reproduce mats --preset quick --set "
            "data_path=/data/clotho/msclap.npz` (add --set device=cuda on a GPU). What still differs from the "
            "paper: a tiny 2-layer LM trained from scratch on the captions stands in for Vicuna/LLaMA-7B with "
            "LoRA, the data set's own training captions for AudioTIA-5M, greedy decoding for beam search, and "
            "concept-set F1 / exact-set accuracy over the 30 most frequent caption words for CIDEr/SPIDEr and the "
            "benchmarks' questions. Cost: the embedding pass is one msclap forward per caption and clip (minutes "
            "on a GPU for Clotho). Measured on a Clotho-sized file of random 1024-d embeddings (19195 training "
            "captions, 1000 test clips) on 2 heavily shared CPU cores (load ~8): 2.75 s per step (one LM "
            "pretraining step and three fine-tuning steps) plus 50 s per seed, so about 1.5 h per quick seed "
            "there (less on free cores); full (40 soft tokens, 5000 steps, 5 seeds) is estimated at several "
            "times that per seed: a GPU job."),
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

# the paper's data (experiment paper_data): twins of the paper claims above, same metric / threshold / tie band,
# pre-registered before any run on the data
_DATA = ("Clotho v2 evaluation audio (or AudioCaps test) embedded by the user's msclap, text-only training on its "
         "captions")
_DATA_FAIR = ("the paper's data and CLAP with its real modality gap; the tiny LM standing in for LLaMA changes the "
              "scale, not the mechanism the ablation tests")
CLAIMS += [
    # as learned: the trivial predictor answers the most frequent training concept set for every clip
    Claim(id="paper_data_learned", kind="check",
          statement=f"(ours, beyond the paper: a sanity check) On {_DATA}: MATS's caption concept-F1 beats the "
                    "trivial most-frequent-set predictor by >= 0.1.",
          paper_value="no such number in the paper",
          experiment="paper_data", metric="f1_santa_minus_majority", op=">=", threshold=0.1, resolution=0.02,
          resolution_reason="as learned: F1 in [0, 1]; within 2 points of the 0.1 bar is moot"),
    Claim(id="paper_data_noise_helps_f1", kind="paper", source=_NOISE_SRC, fair_at="reduced",
          fair_at_reason=_DATA_FAIR, requires=("paper_data_learned",),
          statement=f"On {_DATA}: noise injection improves text-only training's caption concept-F1 on audio.",
          paper_value="noise injection bridges the modality gap (Sec. 3)", experiment="paper_data",
          metric="f1_noise_minus_plain", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as noise_helps_f1: F1 " + _TIE_DIFF),
    Claim(id="paper_data_noise_helps_acc", kind="paper", source=_NOISE_SRC, fair_at="reduced",
          fair_at_reason=_DATA_FAIR, requires=("paper_data_learned",),
          statement=f"On {_DATA}: noise injection improves close-ended ('which sounds?') accuracy on audio.",
          paper_value="noise injection bridges the modality gap (Sec. 3)", experiment="paper_data",
          metric="acc_noise_minus_plain", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as noise_helps_acc: accuracy " + _TIE_DIFF),
    Claim(id="paper_data_santa_helps_f1", kind="paper", source=_SANTA_SRC, fair_at="reduced",
          fair_at_reason=_DATA_FAIR, requires=("paper_data_learned",),
          statement=f"On {_DATA}: Santa improves caption concept-F1 over noise injection alone.",
          paper_value="Santa improves over noise-only (ablation)", experiment="paper_data",
          metric="f1_santa_minus_noise", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as santa_helps_f1: F1 " + _TIE_DIFF),
    Claim(id="paper_data_santa_helps_acc", kind="paper", source=_SANTA_SRC, fair_at="reduced",
          fair_at_reason=_DATA_FAIR, requires=("paper_data_learned",),
          statement=f"On {_DATA}: Santa improves close-ended accuracy over noise injection alone.",
          paper_value="Santa improves over noise-only (ablation)", experiment="paper_data",
          metric="acc_santa_minus_noise", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as santa_helps_acc: accuracy " + _TIE_DIFF),
    Claim(id="paper_data_near_audio_supervised", kind="paper", source="abstract", fair_at="paper",
          fair_at_reason="as near_audio_supervised: 'competitive' compares the paper's text-only model with LALMs "
                         "trained on large-scale audio-language pairs, on its benchmarks at its data scale (a tiny LM "
                         "is not that model)",
          requires=("paper_data_learned",),
          statement=f"On {_DATA}: text-only MATS reaches >= 80% of the F1 of the same mapper trained on the real "
                    "audio embeddings (the 80% bar is ours: the paper says 'competitive' without a ratio).",
          paper_value=_P, experiment="paper_data", metric="f1_santa_over_audio", op=">=", threshold=0.8,
          resolution=0.02, resolution_reason="as near_audio_supervised: F1 ratio, 2.5% of the 0.8 bar"),
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
