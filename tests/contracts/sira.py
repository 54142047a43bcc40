"""Contract cases of sira: n-gram LMs, green-list watermarks and the rewrite attacks.

No estimators or modules (the LMs are NumPy n-gram tables with their own ``fit``). The experiments are NumPy only;
torch is imported by ``markllm_green_lists`` alone (MarkLLM's green lists, on the CPU), which they do not use.
"""

import numpy as np

from icml25.papers.sira import (
    KGW,
    ConceptRewriter,
    EntropyGatedKGW,
    FullParaphrase,
    HighSIMaskRewrite,
    KneserNeyLM,
    LowSIMaskRewrite,
    RandomMaskRewrite,
    SIRAAttack,
    Unigram,
    WordSubstitution,
    blank_mask,
    blank_template,
    build_lexicon,
    green_list_matrix,
    load_prompts,
    markllm_green_lists,
    reference_paraphrase,
    sample_corpus,
    sample_prompts,
    self_information,
)

CPU_ONLY = {
    "synthetic": "NumPy n-gram LMs and green lists; torch is used only by the optional MarkLLM green lists "
                 "(green_lists='markllm'), which the experiment does not use",
    "synthetic_c4": "NumPy n-gram LMs and green lists; torch is used only by the optional MarkLLM green lists "
                    "(green_lists='markllm'), which the experiment does not use",
}

LEX = build_lexicon()
V = LEX.vocab_size
LM = KneserNeyLM(V, order=2, pad_id=LEX.end_id).fit(sample_corpus(LEX, 200, seed=0))
TEXT = LEX.encode("the big dog saw a cat .")
REF = reference_paraphrase(LEX, TEXT)
REWRITER = ConceptRewriter(LEX, LM, seed=0)


def _with(tokens, i, value):
    t = np.array(tokens, dtype=object if isinstance(value, float) else np.int64)
    t[i] = value
    return t


BAD_INPUTS = [
    # token ids (fixed earlier; kept as battery cases)
    ("self_information.negative_id", lambda: self_information(LM, _with(TEXT, 2, -1)), ValueError),
    ("self_information.float_ids", lambda: self_information(LM, TEXT.astype(float)), TypeError),
    ("self_information.id_out_of_vocab", lambda: self_information(LM, _with(TEXT, 2, V)), ValueError),
    ("self_information.one_token", lambda: self_information(LM, TEXT[:1]), ValueError),
    ("sira.attack_negative_id", lambda: SIRAAttack(LM, REWRITER).attack(_with(TEXT, 1, -3), REF), ValueError),
    ("wordsub.float_ids", lambda: WordSubstitution(LEX, 0.5).attack(TEXT + 0.5), TypeError),
    ("lm.fit_negative_id", lambda: KneserNeyLM(V, order=2).fit(_with(TEXT, 0, -1)), ValueError),
    ("lm.next_probs_out_of_vocab", lambda: LM.next_probs([[V + 5]]), ValueError),
    ("kgw.detect_out_of_vocab", lambda: KGW().detect(_with(TEXT, 3, V), vocab_size=V), ValueError),
    ("lexicon.decode_out_of_vocab", lambda: LEX.decode([V]), ValueError),
    ("reference.negative_id", lambda: reference_paraphrase(LEX, _with(TEXT, 0, -1)), ValueError),
    # self-information masks
    ("blank_mask.percentile_above_100", lambda: blank_mask(np.ones(5), 150.0), ValueError),
    ("blank_mask.nan_si", lambda: blank_mask(np.array([1.0, np.nan, 2.0])), ValueError),
    ("blank_mask.empty_si", lambda: blank_mask(np.array([])), ValueError),
    ("blank_template.si_length", lambda: blank_template(TEXT, np.ones(len(TEXT))), ValueError),
    # attacks and the rewriter
    ("rewriter.zero_temperature", lambda: ConceptRewriter(LEX, LM, temperature=0.0), ValueError),
    ("rewriter.fill_shape_mismatch", lambda: REWRITER.fill(TEXT, np.ones(len(TEXT) - 1, bool), REF), ValueError),
    ("rewriter.fill_concept_out_of_range",
     lambda: REWRITER.fill(TEXT, np.ones(len(TEXT), bool), np.full(len(TEXT), LEX.n_concepts)), ValueError),
    ("rewriter.fill_float_reference", lambda: REWRITER.fill(TEXT, np.ones(len(TEXT), bool), REF + 0.5), TypeError),
    ("sira.negative_percentile", lambda: SIRAAttack(LM, REWRITER, percentile=-1.0), ValueError),
    ("sira.reference_length", lambda: SIRAAttack(LM, REWRITER).attack(TEXT, REF[:-1]), ValueError),
    ("random_mask.rate_above_one", lambda: RandomMaskRewrite(REWRITER, 1.5), ValueError),
    ("random_mask.float_ids", lambda: RandomMaskRewrite(REWRITER, 0.5).blanks(TEXT + 0.5), TypeError),
    ("lowsi.nan_rate", lambda: LowSIMaskRewrite(LM, REWRITER, np.nan), ValueError),
    ("highsi.negative_id", lambda: HighSIMaskRewrite(LM, REWRITER, 0.5).blanks(_with(TEXT, 2, -1)), ValueError),
    ("fullpara.float_ids", lambda: FullParaphrase(REWRITER).attack(TEXT + 0.5, REF), TypeError),
    ("wordsub.negative_rate", lambda: WordSubstitution(LEX, -0.1), ValueError),
    # language model
    ("lm.order_four", lambda: KneserNeyLM(V, order=4), ValueError),
    ("lm.discount_one", lambda: KneserNeyLM(V, discount=1.0), ValueError),
    ("lm.pad_out_of_vocab", lambda: KneserNeyLM(V, pad_id=V), ValueError),
    ("lm.float_vocab_size", lambda: KneserNeyLM(10.5), TypeError),
    ("lm.not_fitted", lambda: KneserNeyLM(V).next_probs([[0]]), ValueError),
    ("lm.stream_too_short", lambda: KneserNeyLM(V, order=3).fit(TEXT[:2]), ValueError),
    # watermarks
    ("kgw.gamma_zero", lambda: KGW(gamma=0.0), ValueError),
    ("kgw.inf_delta", lambda: KGW(delta=np.inf), ValueError),
    ("kgw.generate_zero_tokens", lambda: KGW().generate(LM, [[LEX.end_id]], 0), ValueError),
    ("kgw.generate_float_length", lambda: KGW().generate(LM, [[LEX.end_id]], 2.5), TypeError),
    ("kgw.detect_one_token", lambda: KGW().detect(TEXT[:1], vocab_size=V), ValueError),
    ("kgw.detect_without_vocab", lambda: KGW().detect(TEXT), ValueError),
    ("kgw.green_flags_float_ids", lambda: KGW().green_flags(TEXT + 0.5, V), TypeError),
    ("unigram.negative_delta", lambda: Unigram(delta=-1.0), ValueError),
    ("gated.negative_threshold", lambda: EntropyGatedKGW(threshold=-1.0), ValueError),
    ("gated.detect_without_lm", lambda: EntropyGatedKGW().detect(TEXT, vocab_size=V), ValueError),
    ("green_list.gamma_above_one", lambda: green_list_matrix(V, 1.5, 0), ValueError),
    ("green_list.zero_vocab", lambda: green_list_matrix(0, 0.25, 0), ValueError),
    ("markllm_lists.unknown_scheme", lambda: markllm_green_lists(V, 0.5, 0, "unigram"), ValueError),
    ("markllm_lists.zero_vocab", lambda: markllm_green_lists(0, 0.5, 0), ValueError),
    ("kgw.unknown_green_lists", lambda: KGW(green_lists="torch"), ValueError),
    ("corpus.zero_sentences", lambda: sample_corpus(LEX, 0, seed=0), ValueError),
    ("lexicon.unknown_word", lambda: LEX.encode("the unicorn"), ValueError),
    # prompts
    ("prompts.unknown_style", lambda: sample_prompts(LEX, 3, 10, "wikitext"), ValueError),
    ("prompts.zero_length", lambda: sample_prompts(LEX, 3, 0), ValueError),
    ("prompts.float_count", lambda: sample_prompts(LEX, 2.5, 10), ValueError),
    ("prompts.missing_file", lambda: load_prompts("/nonexistent/prompts.jsonl", LEX, 1, 4), FileNotFoundError),
]
