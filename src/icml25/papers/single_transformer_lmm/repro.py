"""HaploVL-mini reproduction: does inheriting a vision teacher and an LM make an early-fusion
single transformer learn a VQA task faster than training it from scratch?

All models are tiny and trained here on procedural shape scenes (see ``data.py``). Every model gets
the same number of stage-2 (instruction) steps on the same data and batches; metrics are test answer
accuracies. Settings and thresholds were fixed before the first quick run.

``paper_data`` runs the same recipe and baselines on the paper's instruction data: a user's LLaVA-1.5 JSON file
(``data_path``) and images (``image_folder``), with the CLIP-ViT-L teacher's patch features precomputed into a file
(``teacher_features``, see :func:`~icml25.papers.single_transformer_lmm.llava.compute_teacher_features`); without
``data_path`` ``reproduce`` skips it with one line. Its claims repeat the mini claims' statistics, thresholds and tie
bands and were fixed before any run on the data.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

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
from icml25.papers.single_transformer_lmm.data import IMAGE_TOKEN_ID, VOCAB, make_vqa, text_only
from icml25.papers.single_transformer_lmm.figures import mini_figures, paper_data_figures
from icml25.papers.single_transformer_lmm.llava import IMAGE_TOKEN_ID as LLAVA_IMAGE_TOKEN_ID
from icml25.papers.single_transformer_lmm.llava import load_paper_dataset
from icml25.papers.single_transformer_lmm.model import (
    CompositionalLMM,
    EarlyFusionLMM,
    HaploConfig,
    PrecomputedVision,
    ScratchSingleTransformer,
    TinyLM,
    TinyViT,
    finetune_stage2,
    gather_rows,
    init_post_from_lm,
    pretrain_stage1,
    train_teacher_lm,
    train_vision_teacher,
)


@dataclass
class MiniConfig(TorchConfig):
    n_train: int = 10000
    """Training (scene, question, answer) examples."""
    n_test: int = 2000
    """Test examples."""
    img: int = 32
    """Image side in pixels."""
    patch: int = 16
    """Patch side (4 patches per image at 32 px: one per grid cell, to fit the CPU budget)."""
    d: int = 64
    """Width of every model (teachers, pre- and post-decoder)."""
    n_heads: int = 4
    """Attention heads."""
    vit_layers: int = 2
    """Vision-teacher blocks."""
    vit_steps: int = 300
    """Vision-teacher training steps (per-cell colour/shape/size classification)."""
    lm_layers: int = 2
    """Teacher-LM blocks (= post-decoder blocks)."""
    lm_steps: int = 200
    """Teacher-LM training steps on question/answer text only."""
    haplo: HaploConfig = field(default_factory=HaploConfig)
    """The recipe's settings (``haplo.n_pre``, ``haplo.s1_steps``, ``haplo.s2_steps``, ``haplo.batch``,
    ``haplo.lr``, ``haplo.distill_loss``, ``haplo.visual_distill_loss``, ``haplo.ctp_logit_scale``); the teachers
    and the baselines train with the same batch and learning rate, and every model gets ``haplo.s2_steps``."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_train", "n_test", "img", "patch", "d", "n_heads", "vit_layers", "lm_layers"),
                     nonnegative=("vit_steps", "lm_steps"))
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"n_train": 10**7, "n_test": 10**6, "img": 10**3, "patch": 10**3, "d": 10**4,
                                    "n_heads": 10**3, "vit_layers": 10**3, "vit_steps": 10**7, "lm_layers": 10**3,
                                    "lm_steps": 10**7})
        if self.img % 2 or self.img < 16:
            raise ConfigError(f"MiniConfig.img must be an even number >= 16 (a 2x2 grid of cells), got {self.img}")
        if self.img % self.patch:
            raise ConfigError(f"MiniConfig.patch must divide img={self.img}, got {self.patch}")
        if self.d % self.n_heads or (self.d // self.n_heads) % 2:
            raise ConfigError(f"MiniConfig.n_heads must split d={self.d} into heads of even size, got {self.n_heads}")


@torch.no_grad()
def _accuracy(model: torch.nn.Module, test: dict) -> tuple[float, float]:
    """Overall and fine-grained (exists size+colour+shape) answer accuracy."""
    model.eval()
    pred = model(test["input_ids"], test["pixel_values"], IMAGE_TOKEN_ID)[:, -1].argmax(-1)
    model.train()
    ok = (pred == test["answers"]).float()
    return float(ok.mean()), float(ok[test["qtype"] == 3].mean())


def _majority_accuracy(train: dict, test: dict) -> float:
    """Test accuracy of the trivial predictor that answers each question type's most frequent training answer."""
    pred = torch.empty_like(test["answers"])
    for q in range(4):
        sel = train["qtype"] == q
        top = torch.mode(train["answers"][sel]).values if bool(sel.any()) else train["answers"].mode().values
        pred[test["qtype"] == q] = top
    return float((pred == test["answers"]).float().mean())


def run_mini(cfg: MiniConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Teachers, then the four models with equal stage-2 budgets; accuracies and paired differences.

    Models are initialised on the CPU (the same weights on every device) and trained on ``cfg.device``. For a
    :class:`PaperDataConfig` the same models run on the paper's instruction data (:func:`run_paper_data`).
    """
    if isinstance(cfg, PaperDataConfig):
        return run_paper_data(cfg, seed, progress)
    device = torch.device(cfg.device)
    torch.manual_seed(seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    to_device = lambda data: {k: v.to(device) for k, v in data.items()}  # noqa: E731
    train = to_device(make_vqa(cfg.n_train, seed, cfg.patch, cfg.img))
    test = to_device(make_vqa(cfg.n_test, 10_000 + seed, cfg.patch, cfg.img))
    P = (cfg.img // cfg.patch) ** 2
    out: Metrics = {}
    vit = TinyViT(cfg.d, cfg.vit_layers, cfg.n_heads, cfg.patch, cfg.img).to(device)
    hc = cfg.haplo
    out["teacher_vit_attr_acc"] = train_vision_teacher(vit, train, cfg.vit_steps, hc.lr, hc.batch, gen)
    vit.requires_grad_(False).eval()
    lm = TinyLM(VOCAB, cfg.d, cfg.lm_layers, cfg.n_heads).to(device)
    out["teacher_lm_loss"] = train_teacher_lm(lm, text_only(train, P), cfg.lm_steps, hc.lr, hc.batch, gen)
    progress(1, 5)

    study = _Study(teacher=vit, encoder=vit, image_token=IMAGE_TOKEN_ID, accuracy=_accuracy)
    return _compare_models(cfg, out, lm, study, train, test, seed, progress)


@dataclass
class _Study:
    """What differs between the generated study and the paper's data: the stage-1 vision ``teacher`` (None: the
    precomputed ``teacher_features``), the compositional LMM's ``encoder``, the image token, the accuracy reader and
    ``view(name, data)``, the data a model reads."""

    teacher: torch.nn.Module | None
    encoder: torch.nn.Module
    image_token: int
    accuracy: Callable
    view: Callable[[str, dict], dict] = lambda name, data: data


def _compare_models(cfg: MiniConfig, out: Metrics, lm: TinyLM, study: _Study, train: dict, test: dict, seed: int,
                    progress: ProgressFn) -> Metrics:
    """HaploVL (stage 1 distilling from the study's teacher and the LM's embeddings, then stage 2), the same without
    stage 1, a scratch single transformer and the compositional LMM on the study's encoder, each fine-tuned with the
    same stage-2 budget; their accuracies and the paired differences, into ``out``."""
    hc, device, vocab_size = cfg.haplo, lm.embed.weight.device, lm.embed.num_embeddings
    teacher, image_token, view = study.teacher, study.image_token, study.view

    def single() -> EarlyFusionLMM:
        return EarlyFusionLMM(vocab_size, cfg.d, cfg.d, hc.n_pre, cfg.lm_layers, cfg.n_heads, cfg.patch,
                              cfg.img).to(device)

    models = {}
    haplo = init_post_from_lm(single(), copy.deepcopy(lm))
    s1 = pretrain_stage1(haplo, teacher, lm.embed, train, hc.s1_steps, image_token, hc.lr, hc.batch,
                         hc.distill_loss, seed=seed, visual_loss=hc.visual_distill_loss,
                         logit_scale=hc.ctp_logit_scale)
    out["stage1_loss_first"], out["stage1_loss_last"] = s1[0] if s1 else float("nan"), s1[-1] if s1 else float("nan")
    models["haplo"] = haplo
    models["no_stage1"] = init_post_from_lm(single(), copy.deepcopy(lm))
    models["scratch"] = ScratchSingleTransformer(vocab_size, cfg.d, cfg.d, hc.n_pre, cfg.lm_layers, cfg.n_heads,
                                                 cfg.patch, cfg.img).to(device)
    models["compositional"] = CompositionalLMM(study.encoder, copy.deepcopy(lm)).to(device)
    for i, (name, m) in enumerate(models.items()):
        params = [p for p in m.parameters() if p.requires_grad]
        curve = finetune_stage2(m, view(name, train), hc.s2_steps, image_token, hc.lr, hc.batch, seed=seed + 1,
                                params=params)
        out[f"s2_final_loss_{name}"] = float(sum(curve[-20:]) / max(len(curve[-20:]), 1))
        out[f"acc_{name}"], out[f"fine_acc_{name}"] = study.accuracy(m, view(name, test))
        progress(i + 2, 5)
    out["acc_majority"] = _majority_accuracy(train, test)
    _differences(out)
    return out


def _differences(out: Metrics) -> None:
    """The paired differences the claims read, from the models' accuracies in ``out`` (in place)."""
    out["haplo_minus_majority"] = out["acc_haplo"] - out["acc_majority"]
    out["haplo_minus_scratch"] = out["acc_haplo"] - out["acc_scratch"]
    out["haplo_minus_compositional_fine"] = out["fine_acc_haplo"] - out["fine_acc_compositional"]
    out["haplo_minus_scratch_fine"] = out["fine_acc_haplo"] - out["fine_acc_scratch"]
    out["stage1_gain"] = out["acc_haplo"] - out["acc_no_stage1"]
    out["gap_to_compositional_haplo"] = out["acc_compositional"] - out["acc_haplo"]
    out["gap_to_compositional_scratch"] = out["acc_compositional"] - out["acc_scratch"]
    out["gap_difference"] = out["gap_to_compositional_haplo"] - out["gap_to_compositional_scratch"]


@dataclass
class PaperDataConfig(MiniConfig):
    """The mini experiment's settings on the paper's instruction data (LLaVA-1.5 format) from the user's files.

    The vision teacher is the CLIP-ViT-L whose patch features the user computed into ``teacher_features``, so
    ``vit_layers`` and ``vit_steps`` are not used; ``img`` / ``patch`` set the single transformer's input and the
    grid the teacher features are pooled to.
    """

    data_path: str = ""
    """A LLaVA-1.5 instruction JSON file (e.g. llava_v1_5_mix665k.json); empty: the experiment does not run."""
    image_folder: str = ""
    """The folder the records' ``image`` paths are relative to (LLaVA's --image_folder); empty: data_path's folder."""
    teacher_features: str = ""
    """The vision teacher's features file written by ``llava.compute_teacher_features`` (needed with data_path)."""
    q_len: int = 24
    """Question words kept (the first ones; shorter questions are padded)."""
    vocab_size: int = 8000
    """Word vocabulary (4 special tokens + the most frequent training words)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("q_len",), at_least={"vocab_size": 5},
                     at_most={"q_len": 10**3, "vocab_size": 10**6})
        for name, kind in (("data_path", "file"), ("image_folder", "folder"), ("teacher_features", "file")):
            value = getattr(self, name)
            path = Path(value).expanduser() if isinstance(value, str) else None
            if path is None or (value and not (path.is_file() if kind == "file" else path.is_dir())):
                raise ConfigError(f"PaperDataConfig.{name} must be an existing {kind} (or empty), got {value!r}")


@torch.no_grad()
def _accuracy_rows(model: torch.nn.Module, data: dict, batch: int = 256) -> tuple[float, float]:
    """Overall and fine-grained (question type 3) answer accuracy on a split with per-image tables, in batches."""
    model.eval()
    n = len(data["input_ids"])
    preds = []
    for start in range(0, n, batch):
        idx = torch.arange(start, min(n, start + batch), device=data["input_ids"].device)
        logits = model(data["input_ids"][idx], gather_rows(data, "pixel_values", idx), LLAVA_IMAGE_TOKEN_ID)
        preds.append(logits[:, -1].argmax(-1))
    model.train()
    ok = (torch.cat(preds) == data["answers"]).float()
    return float(ok.mean()), float(ok[data["qtype"] == 3].mean())


def run_paper_data(cfg: PaperDataConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """The mini experiment's models and metrics on the one-word-answer turns of a LLaVA-1.5 instruction file.

    Teachers: the CLIP features file (vision; also the compositional model's frozen encoder output) and a TinyLM
    trained here on the training questions and answers (the stated substitution for the paper's 7B LLM).
    """
    if not cfg.teacher_features:
        raise ValueError("PaperDataConfig.teacher_features is empty: the paper_data experiment needs the vision "
                         "teacher's features of the images (--set teacher_features=/path/to/clip_features.pt, "
                         "written by single_transformer_lmm.llava.compute_teacher_features)")
    device = torch.device(cfg.device)
    torch.manual_seed(seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    folder = cfg.image_folder or str(Path(cfg.data_path).expanduser().parent)
    train, test, vocab = load_paper_dataset(cfg.data_path, folder, cfg.teacher_features,
                                            sizes=(cfg.n_train, cfg.n_test), img=cfg.img, patch=cfg.patch,
                                            q_len=cfg.q_len, vocab_size=cfg.vocab_size, seed=seed)
    out: Metrics = {"n_train_examples": float(len(train["answers"])), "n_test_examples": float(len(test["answers"])),
                    "n_train_images": float(len(train["images"])), "n_test_images": float(len(test["images"])),
                    "vocab_words": float(len(vocab)),
                    "test_answer_in_vocab": float((test["answers"] >= 0).float().mean()),
                    "test_fine_fraction": float((test["qtype"] == 3).float().mean())}
    train, test = ({k: v.to(device) for k, v in split.items() if isinstance(v, torch.Tensor)}
                   for split in (train, test))
    V, P, C = len(vocab), (cfg.img // cfg.patch) ** 2, train["teacher_features"].shape[-1]
    hc = cfg.haplo
    lm = TinyLM(V, cfg.d, cfg.lm_layers, cfg.n_heads).to(device)
    out["teacher_lm_loss"] = train_teacher_lm(lm, text_only(train, P), cfg.lm_steps, hc.lr, hc.batch, gen)
    progress(1, 5)

    # the compositional model reads the frozen teacher's features where the others read pixels
    def view(name: str, data: dict) -> dict:
        return {**data, "pixel_values": data["teacher_features"]} if name == "compositional" else dict(data)

    study = _Study(teacher=None, encoder=PrecomputedVision(C), image_token=LLAVA_IMAGE_TOKEN_ID,
                   accuracy=_accuracy_rows, view=view)
    return _compare_models(cfg, out, lm, study, train, test, seed, progress)


_STANDIN = ("procedural shape-scene VQA with a tiny ViT and LM trained here stands in for CLIP-ViT-L + a 7B LLM on "
            "LLaVA-style data and the paper's benchmarks")

_PAPER_STUDY = ("the paper's instruction data (the one-word-answer VQA turns of a LLaVA-1.5 instruction file, split by "
                "image and scored by exact match as VQAv2/GQA are) and its vision teacher (the user's CLIP-ViT-L patch "
                "features, pooled to the patch grid); substitutions: a small LM trained here on the data's questions "
                "and answers with a word vocabulary stands in for the 7B LLM, stage 1 distils on the same turns (not "
                "the paper's pre-training mixture), held-out turns stand in for the paper's benchmarks, and "
                "'fine-grained' is our question-word proxy for MMVP's visual patterns")
_PAPER_DATA_NOTE = (
    "The paper's data: `icml25 reproduce single_transformer_lmm --preset quick --set "
    "data_path=/path/to/llava_v1_5_mix665k.json --set image_folder=/path/to/playground/data --set "
    "teacher_features=/path/to/clip_features.pt` (--set device=cuda for a GPU); without data_path the experiment is "
    "skipped with one line, with data_path but no teacher_features the run stops with one error. Layout: LLaVA-1.5's "
    "instruction JSON (llava_v1_5_mix665k.json or llava_instruct_150k.json from the liuhaotian/LLaVA-Instruct-150K "
    "dataset repository: a list of {id, image, conversations: [{from: human, value: '<image>\\n...'}, {from: gpt, "
    "value}...]}) and its images under image_folder at the records' relative paths (e.g. coco/train2017/*.jpg, "
    "gqa/images/*.jpg; LLaVA's --image_folder; empty = the JSON's folder). teacher_features: the CLIP-ViT-L/14-336 "
    "patch features of those images, written once by single_transformer_lmm.llava.compute_teacher_features("
    "data_path, image_folder, encoder, out_path) with the user's encoder (any object with open_clip's encode_image, "
    "or a callable returning (B, T, C) tokens; the docs give the open_clip and transformers snippets; nothing is "
    "downloaded here). Read: every human->gpt turn of an image record whose reply is one word; images padded to a "
    "square with the CLIP mean and resized (LLaVA-1.5's pad mode). The study and what differs from the paper: "
    + _PAPER_STUDY + ". Cost: one seed of the quick preset (its training steps do not depend on the file's "
    "size) took 400 s wall on 1 CPU thread of the loaded shared 2-core machine, on a generated 300-image file in "
    "this layout; reading the images adds about 25 s per 1,000 COCO-size JPEGs (2-3k images per seed at quick), so "
    "quick is about 25 CPU minutes for its 3 seeds; the full preset (width 256, 6 blocks, 3000 steps per stage, 200k "
    "turns, ~5 GB of image and feature tables) is estimated at hours per seed on a CPU, a GPU job (--set "
    "device=cuda). The smoke preset runs in seconds on the tests' tiny files.")

EXPERIMENTS = [
    Experiment(
        name="mini",
        description="Shape-scene VQA with tiny models: HaploVL-mini (LM-initialised post-decoder + stage-1 "
                    "distillation + stage 2) vs no-stage-1, scratch single transformer and a LLaVA-style "
                    "compositional model, equal stage-2 steps; test answer accuracy.",
        config=MiniConfig,
        run=run_mini,
        presets={"smoke": {"n_train": 256, "n_test": 128, "vit_steps": 5, "lm_steps": 5, "haplo.s1_steps": 5,
                           "haplo.s2_steps": 5, "d": 32, "haplo.batch": 32, "patch": 16},
                 "quick": {}, "full": {"n_train": 200000, "n_test": 5000, "vit_steps": 3000, "lm_steps": 2000,
                                       "haplo.s1_steps": 3000, "haplo.s2_steps": 3000, "d": 256, "patch": 8,
                                       "vit_layers": 6, "lm_layers": 6, "haplo.n_pre": 4}},
        seeds={"smoke": 1, "quick": 3, "full": 5},
        figures=mini_figures,
        fidelity={
            "smoke": Fidelity("mechanism", _STANDIN + "; 256 scenes, 5 steps per stage, width 32"),
            "quick": Fidelity("mechanism", _STANDIN + "; 10k scenes, 200 stage-1 / 250 stage-2 steps, width 64"),
            "full": Fidelity("mechanism", _STANDIN + "; 200k scenes, 3000 steps per stage, width 256"),
        },
        full_requirements="The paper's scale (CLIP-ViT-L/14-336 teacher, a 7B LLM post-decoder, LLaVA-style data, "
                          "MMBench/MMStar/SEED/POPE) needs downloaded weights and datasets and is not provided; "
                          "'full' here only enlarges the synthetic setting. The paper's instruction data (LLaVA-1.5 "
                          "JSON + images + the user's CLIP-ViT-L features) is the paper_data experiment's.",
    ),
    Experiment(
        name="paper_data",
        description="The paper's instruction data: the one-word-answer turns of a LLaVA-1.5 instruction file "
                    "(data_path, image_folder), split by image, with the CLIP-ViT-L teacher's patch features from "
                    "the user's file (teacher_features); HaploVL-mini vs no-stage-1, scratch and a LLaVA-style "
                    "compositional model on those features, equal stage-2 steps; exact-match answer accuracy on "
                    "held-out images, overall and on fine-grained questions.",
        config=PaperDataConfig,
        run=run_mini,
        presets={"smoke": {"n_train": 64, "n_test": 8, "lm_steps": 5, "haplo.s1_steps": 5, "haplo.s2_steps": 5,
                           "d": 32, "haplo.batch": 16, "img": 16, "patch": 8, "q_len": 12},
                 "quick": {"patch": 8},
                 "full": {"n_train": 200000, "n_test": 5000, "lm_steps": 2000, "haplo.s1_steps": 3000,
                          "haplo.s2_steps": 3000, "d": 256, "img": 64, "patch": 16, "lm_layers": 6,
                          "haplo.n_pre": 4}},
        seeds={"smoke": 1, "quick": 3, "full": 5},
        figures=paper_data_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "a harness run on the given files: 16-pixel images (4 patches), width "
                                           "32, 5 steps per stage"),
            "quick": Fidelity("reduced", _PAPER_STUDY + "; 10k training turns, 2k test turns, 32-pixel images (16 "
                                                        "patches), width 64, 200 stage-1 / 250 stage-2 steps"),
            "full": Fidelity("reduced", _PAPER_STUDY + "; 200k training turns, 5k test turns, 64-pixel images (16 "
                                                       "patches), width 256, 6-block LM, 3000 steps per stage"),
        },
        data_setting="data_path",
        full_requirements=_PAPER_DATA_NOTE,
    ),
]

_NOTE = "mini synthetic analogue; the paper's benchmark numbers were not retrieved first-hand"
_FAIR_INHERIT = ("the recipe's advantage comes from what it inherits from pre-trained teachers (a real LLM and "
                 "CLIP-ViT-L): the paper's recipe and teachers at a smaller data budget test its direction, tiny "
                 "teachers trained on a toy task need not carry that knowledge")
_TIE_ACC = "accuracy in [0, 1]; the paper gives no margin, a gap under 1 point does not matter"
CLAIMS = [
    # the trivial predictor answers each question type's most frequent training answer, and 5 points above it is
    # the least that shows the recipe read the image (fixed before this run)
    Claim(id="learned", kind="check",
          statement="(ours, beyond the paper: a sanity check) HaploVL-mini's test accuracy beats the "
                    "per-question-type majority answer by >= 5 points.",
          paper_value="no such number in the paper",
          experiment="mini", metric="haplo_minus_majority", op=">=", threshold=0.05, resolution=0.02,
          resolution_reason="accuracy in [0, 1]; within 2 points of the 5-point bar is moot"),
    # what is tested: the same single-transformer network initialised two ways (recipe vs scratch) at an equal
    # stage-2 budget, not the paper's comparison with other published single-transformer LMMs; beats_scratch
    # reads the same metric with a 10-point bar
    Claim(id="superior_to_scratch", kind="paper", source="abstract", fair_at="reduced",
          fair_at_reason=_FAIR_INHERIT, requires=("learned",),
          statement="The recipe (LLM-initialised post-decoder + stage-1 distillation) beats the same single "
                    "transformer trained from scratch at an equal instruction-tuning budget.",
          paper_value="superior to other single-transformer LMMs, narrowing the gap to compositional ones (abstract; "
                      f"{_NOTE})",
          experiment="mini", metric="haplo_minus_scratch", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason=_TIE_ACC),
    Claim(id="beats_scratch", kind="ours", fair_at="reduced", fair_at_reason=_FAIR_INHERIT, requires=("learned",),
          statement="(ours, beyond the paper: the 10-point margin is our spec card's) At an equal "
                    "instruction-tuning budget, the recipe beats the scratch single transformer by >= 10 accuracy "
                    "points.",
          paper_value=f"HaploVL far more data/compute-efficient than native LMMs trained from scratch ({_NOTE})",
          experiment="mini", metric="haplo_minus_scratch", op=">=", threshold=0.10, resolution=0.02,
          resolution_reason="accuracy in [0, 1]; 1/5 of the claimed 10-point gain (no paper number retrieved)"),
    Claim(id="stage1_helps", kind="paper",
          source="second-hand: a summary reporting an ablation in Table 5 (-4.3 points without the pre-training stage)",
          fair_at="reduced", fair_at_reason=_FAIR_INHERIT, requires=("learned",),
          statement="Stage-1 distillation (vision teacher + current-token prediction against the LM embeddings) "
                    "improves accuracy over LM initialisation alone.",
          paper_value="the pre-training stage helps (ablation; a second-hand summary reports -4.3 points without it, "
                      "Table 5, not confirmed first-hand)",
          experiment="mini", metric="stage1_gain", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="accuracy in [0, 1], no first-hand ablation number; a gain under 1 point does not matter"),
    Claim(id="fine_grained", kind="ours", fair_at="reduced", fair_at_reason=_FAIR_INHERIT, requires=("learned",),
          statement="(ours, beyond the paper: the paper compares fine-grained perception with compositional models, "
                    "see fine_grained_vs_compositional) The recipe also beats the scratch model on fine-grained "
                    "questions (size+colour+shape existence).",
          paper_value=f"gains largest on fine-grained perception ({_NOTE})", experiment="mini",
          metric="haplo_minus_scratch_fine", op=">=", threshold=0.0, resolution=0.02,
          resolution_reason="accuracy in [0, 1]; 1/5 of the 10-point gain claimed overall"),
    Claim(id="fine_grained_vs_compositional", kind="paper",
          source="second-hand: a summary reporting MMVP +5.4 points over LLaVA-1.5-7B; a TL;DR on fine-grained "
                 "gains",
          fair_at="reduced",
          fair_at_reason="early fusion versus a frozen-ViT compositional model, both with the paper's pre-trained "
                         "teachers: a smaller data budget tests its direction, tiny toy teachers need not",
          requires=("learned",),
          statement="On fine-grained questions the early-fusion recipe is at least as accurate as the compositional "
                    "(frozen ViT + projector + LM) model.",
          paper_value="early fusion helps fine-grained perception; a second-hand summary reports MMVP +5.4 points "
                      "over LLaVA-1.5-7B (not confirmed first-hand)",
          experiment="mini", metric="haplo_minus_compositional_fine", op=">=", threshold=0.0, resolution=0.02,
          resolution_reason="accuracy in [0, 1]; a fine-grained difference under 2 points does not matter"),
]

_FAIR_PAPER_DATA = ("the paper's data with its vision teacher (the user's CLIP-ViT-L features) at a smaller budget, "
                    "with a small LM trained on the data's text in place of the 7B LLM (stated in the fidelity "
                    "note): a reduced run tests the recipe's direction on real images and the real vision teacher")
CLAIMS += [
    # the paper's data (paper_data): twins of the mini claims and their gate, pre-registered before any run on it
    Claim(id="paper_data_learned", kind="check",
          statement="(ours, beyond the paper: a sanity check) On held-out images of the LLaVA-1.5 instruction data "
                    "(one-word-answer turns), HaploVL-mini's test accuracy beats the per-question-type majority "
                    "answer (yes/no, wh-, other, fine-grained) by >= 5 points.",
          paper_value="no such number in the paper",
          experiment="paper_data", metric="haplo_minus_majority", op=">=", threshold=0.05, resolution=0.02,
          resolution_reason="as learned: accuracy in [0, 1]; within 2 points of the 5-point bar is moot"),
    Claim(id="paper_data_superior_to_scratch", kind="paper", source="abstract", fair_at="reduced",
          fair_at_reason=_FAIR_PAPER_DATA, requires=("paper_data_learned",),
          statement="On the LLaVA-1.5 instruction data (one-word-answer turns, held-out images) the recipe "
                    "(LM-initialised post-decoder + stage-1 distillation from CLIP-ViT-L features and the LM's "
                    "embeddings) beats the same single transformer trained from scratch at an equal "
                    "instruction-tuning budget.",
          paper_value="superior to other single-transformer LMMs, narrowing the gap to compositional ones (abstract; "
                      f"{_NOTE})",
          experiment="paper_data", metric="haplo_minus_scratch", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as superior_to_scratch: " + _TIE_ACC),
    Claim(id="paper_data_stage1_helps", kind="paper",
          source="second-hand: a summary reporting an ablation in Table 5 (-4.3 points without the pre-training stage)",
          fair_at="reduced", fair_at_reason=_FAIR_PAPER_DATA, requires=("paper_data_learned",),
          statement="On the LLaVA-1.5 instruction data (one-word-answer turns, held-out images) stage-1 distillation "
                    "(CLIP-ViT-L features + current-token prediction against the LM embeddings) improves accuracy "
                    "over LM initialisation alone.",
          paper_value="the pre-training stage helps (ablation; a second-hand summary reports -4.3 points without it, "
                      "Table 5, not confirmed first-hand)",
          experiment="paper_data", metric="stage1_gain", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as stage1_helps: accuracy in [0, 1], no first-hand ablation number; a gain under 1 "
                            "point does not matter"),
    Claim(id="paper_data_fine_grained_vs_compositional", kind="paper",
          source="second-hand: a summary reporting MMVP +5.4 points over LLaVA-1.5-7B; a TL;DR on fine-grained "
                 "gains",
          fair_at="reduced",
          fair_at_reason="early fusion versus a compositional model on the same frozen CLIP-ViT-L features and the "
                         "same small LM, on the paper's data: a reduced run tests the direction",
          requires=("paper_data_learned",),
          statement="On the fine-grained questions of the LLaVA-1.5 instruction data (held-out images; questions "
                    "about colour, count, position, size or shape) the early-fusion recipe is at least as accurate "
                    "as the compositional (frozen CLIP-ViT-L features + projector + LM) model.",
          paper_value="early fusion helps fine-grained perception; a second-hand summary reports MMVP +5.4 points "
                      "over LLaVA-1.5-7B (not confirmed first-hand)",
          experiment="paper_data", metric="haplo_minus_compositional_fine", op=">=", threshold=0.0, resolution=0.02,
          resolution_reason="as fine_grained_vs_compositional: accuracy in [0, 1]; a fine-grained difference under "
                            "2 points does not matter"),
]

API_EXAMPLE = """
import torch
from icml25.papers.single_transformer_lmm import EarlyFusionLMM, build_attention_mask

model = EarlyFusionLMM(vocab=40, d_pre=32, d_post=32, n_pre=1, n_post=1, n_heads=2, patch=8, img=32)
ids = torch.tensor([[1] * 16 + [3, 7, 2]])          # 16 image placeholders (id 1), then text
logits = model(ids, torch.rand(1, 3, 32, 32), image_token_id=1)
mask = build_attention_mask((ids == 1).long(), [[(0, 16)]])
print(logits.shape, "image token 0 sees image token 15:", bool(mask[0, 0, 15]), "| sees text:", bool(mask[0, 0, 16]))
"""
