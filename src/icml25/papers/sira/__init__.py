"""SIRA: Self-Information Rewrite Attack on LLM text watermarks (Cheng, Guo, Li & Sigal, ICML 2025).

Watermark evidence sits on high-entropy tokens; SIRA blanks the tokens whose
self-information under a surrogate LM exceeds the 30th percentile and has an attack
model rewrite the blanks from a reference paraphrase. Here with offline stand-ins:
Kneser-Ney n-gram LMs and a concept-constrained rewriter on a synthetic language.
"""

from icml25.papers.sira.attack import (
    ConceptRewriter,
    FullParaphrase,
    HighSIMaskRewrite,
    LowSIMaskRewrite,
    RandomMaskRewrite,
    SIRAAttack,
    SIRAConfig,
    WordSubstitution,
    blank_mask,
    blank_template,
    reference_paraphrase,
    self_information,
)
from icml25.papers.sira.data import Lexicon, build_lexicon, load_prompts, sample_corpus, sample_prompts
from icml25.papers.sira.lm import KneserNeyLM
from icml25.papers.sira.watermarks import KGW, EntropyGatedKGW, Unigram, green_list_matrix, markllm_green_lists

__all__ = [
    "KGW", "ConceptRewriter", "EntropyGatedKGW", "FullParaphrase", "HighSIMaskRewrite", "KneserNeyLM", "Lexicon",
    "LowSIMaskRewrite", "RandomMaskRewrite", "SIRAAttack", "SIRAConfig", "Unigram", "WordSubstitution", "blank_mask",
    "blank_template", "build_lexicon", "green_list_matrix", "load_prompts", "markllm_green_lists",
    "reference_paraphrase", "sample_corpus", "sample_prompts", "self_information",
]
