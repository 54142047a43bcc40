"""HaploVL-mini reproduction: does inheriting a vision teacher and an LM make an early-fusion
single transformer learn a VQA task faster than training it from scratch?

All models are tiny and trained here on procedural shape scenes (see ``data.py``). Every model gets
the same number of stage-2 (instruction) steps on the same data and batches; metrics are test answer
accuracies. Settings and thresholds were fixed before the first quick run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

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
from icml25.papers.single_transformer_lmm.figures import mini_figures
from icml25.papers.single_transformer_lmm.model import (
    CompositionalLMM,
    EarlyFusionLMM,
    HaploConfig,
    ScratchSingleTransformer,
    TinyLM,
    TinyViT,
    finetune_stage2,
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

    Models are initialised on the CPU (the same weights on every device) and trained on ``cfg.device``.
    """
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

    def single() -> EarlyFusionLMM:
        return EarlyFusionLMM(VOCAB, cfg.d, cfg.d, hc.n_pre, cfg.lm_layers, cfg.n_heads, cfg.patch, cfg.img).to(device)

    models = {}
    haplo = init_post_from_lm(single(), copy.deepcopy(lm))
    s1 = pretrain_stage1(haplo, vit, lm.embed, train, hc.s1_steps, IMAGE_TOKEN_ID, hc.lr, hc.batch,
                         hc.distill_loss, seed=seed, visual_loss=hc.visual_distill_loss,
                         logit_scale=hc.ctp_logit_scale)
    out["stage1_loss_first"], out["stage1_loss_last"] = s1[0] if s1 else float("nan"), s1[-1] if s1 else float("nan")
    models["haplo"] = haplo
    models["no_stage1"] = init_post_from_lm(single(), copy.deepcopy(lm))
    models["scratch"] = ScratchSingleTransformer(VOCAB, cfg.d, cfg.d, hc.n_pre, cfg.lm_layers, cfg.n_heads,
                                                 cfg.patch, cfg.img).to(device)
    models["compositional"] = CompositionalLMM(vit, copy.deepcopy(lm)).to(device)
    for i, (name, m) in enumerate(models.items()):
        params = [p for p in m.parameters() if p.requires_grad]
        curve = finetune_stage2(m, train, hc.s2_steps, IMAGE_TOKEN_ID, hc.lr, hc.batch, seed=seed + 1, params=params)
        out[f"s2_final_loss_{name}"] = float(sum(curve[-20:]) / max(len(curve[-20:]), 1))
        out[f"acc_{name}"], out[f"fine_acc_{name}"] = _accuracy(m, test)
        progress(i + 2, 5)
    out["acc_majority"] = _majority_accuracy(train, test)
    out["haplo_minus_majority"] = out["acc_haplo"] - out["acc_majority"]
    out["haplo_minus_scratch"] = out["acc_haplo"] - out["acc_scratch"]
    out["haplo_minus_compositional_fine"] = out["fine_acc_haplo"] - out["fine_acc_compositional"]
    out["haplo_minus_scratch_fine"] = out["fine_acc_haplo"] - out["fine_acc_scratch"]
    out["stage1_gain"] = out["acc_haplo"] - out["acc_no_stage1"]
    out["gap_to_compositional_haplo"] = out["acc_compositional"] - out["acc_haplo"]
    out["gap_to_compositional_scratch"] = out["acc_compositional"] - out["acc_scratch"]
    out["gap_difference"] = out["gap_to_compositional_haplo"] - out["gap_to_compositional_scratch"]
    return out


_STANDIN = ("procedural shape-scene VQA with a tiny ViT and LM trained here stands in for CLIP-ViT-L + a 7B LLM on "
            "LLaVA-style data and the paper's benchmarks")

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
                          "'full' here only enlarges the synthetic setting.",
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

API_EXAMPLE = """
import torch
from icml25.papers.single_transformer_lmm import EarlyFusionLMM, build_attention_mask

model = EarlyFusionLMM(vocab=40, d_pre=32, d_post=32, n_pre=1, n_post=1, n_heads=2, patch=8, img=32)
ids = torch.tensor([[1] * 16 + [3, 7, 2]])          # 16 image placeholders (id 1), then text
logits = model(ids, torch.rand(1, 3, 32, 32), image_token_id=1)
mask = build_attention_mask((ids == 1).long(), [[(0, 16)]])
print(logits.shape, "image token 0 sees image token 15:", bool(mask[0, 0, 15]), "| sees text:", bool(mask[0, 0, 16]))
"""
