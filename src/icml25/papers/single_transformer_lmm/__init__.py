"""HaploVL (Yang et al., ICML 2025, arXiv 2503.14694): a single-transformer early-fusion LMM whose
pre-decoder is distilled from a vision encoder and an LLM's embeddings, and whose post-decoder is the LLM.

This package is a tiny, CPU-trainable version of the architecture and the two-stage recipe, with the
scratch single-transformer and LLaVA-style compositional baselines, and a reader of the paper's instruction data
in LLaVA-1.5's format (``llava``).
"""

from icml25.papers.single_transformer_lmm.data import IMAGE_TOKEN_ID, VOCAB, make_vqa, render_scenes
from icml25.papers.single_transformer_lmm.llava import (
    compute_teacher_features,
    load_llava_records,
    load_paper_dataset,
    load_teacher_features,
)
from icml25.papers.single_transformer_lmm.model import (
    CompositionalLMM,
    DistillHeads,
    EarlyFusionLMM,
    HaploConfig,
    ScratchSingleTransformer,
    TinyLM,
    TinyViT,
    attention_mask_from_ids,
    build_attention_mask,
    current_token_prediction_loss,
    finetune_stage2,
    init_post_from_lm,
    pretrain_stage1,
    stage1_loss,
    train_teacher_lm,
    train_vision_teacher,
)

__all__ = [
    "CompositionalLMM", "DistillHeads", "EarlyFusionLMM", "HaploConfig", "IMAGE_TOKEN_ID",
    "ScratchSingleTransformer", "TinyLM", "TinyViT", "VOCAB", "attention_mask_from_ids", "build_attention_mask",
    "compute_teacher_features", "current_token_prediction_loss", "finetune_stage2", "init_post_from_lm",
    "load_llava_records", "load_paper_dataset", "load_teacher_features", "make_vqa", "pretrain_stage1",
    "render_scenes", "stage1_loss", "train_teacher_lm", "train_vision_teacher",
]
