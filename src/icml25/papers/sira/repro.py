"""SIRA reproduction on a synthetic language with known meaning (offline stand-in).

Target LM (Kneser-Ney trigram) generates watermarked texts under KGW, Unigram and an
entropy-gated KGW (SWEET-like); the attacker owns a different LM (Kneser-Ney bigram
trained on a disjoint corpus sample) and a concept-constrained rewriter standing in
for the attack LLM. All attacks share the rewriter and the texts of a seed. Settings and
claim thresholds were fixed before the first quick run; the official settings (gamma 0.5,
SWEET gate 0.9 nat, 200 new tokens after OpenGen- or C4-style prompts) and the resolutions
scaled to the new text length (issue 13) were fixed before the run that followed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    ExperimentConfig,
    Fidelity,
    Metrics,
    ProgressFn,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.sira.attack import (
    ConceptRewriter,
    FullParaphrase,
    LowSIMaskRewrite,
    RandomMaskRewrite,
    SIRAAttack,
    SIRAConfig,
    WordSubstitution,
    reference_paraphrase,
)
from icml25.papers.sira.data import PROMPT_STYLES, build_lexicon, load_prompts, sample_corpus, sample_prompts
from icml25.papers.sira.figures import synthetic_figures
from icml25.papers.sira.lm import KneserNeyLM
from icml25.papers.sira.watermarks import KGW, EntropyGatedKGW, Unigram, entropy

SCHEMES = ("kgw", "unigram", "gated")
"""Watermark schemes: KGW, Unigram and the entropy-gated KGW (SWEET-like)."""
ATTACKS = ("none", "sira", "random", "lowsi", "wordsub", "fullpara")
"""Attacks: none, SIRA and the rewrite baselines (random mask, low-SI mask, word substitution, full paraphrase)."""


@dataclass
class SyntheticConfig(ExperimentConfig):
    n_sentences: int = 50_000
    """Grammar sentences for each LM (target and surrogate use disjoint samples)."""
    n_texts: int = 300
    """Watermarked (and unwatermarked) texts per scheme."""
    text_len: int = 200
    """New tokens per generated text (official ``max_new_tokens=200``)."""
    prompt_style: str = "opengen"
    """Prompts: ``"opengen"`` (end at a sentence end, as the OpenGen prefixes the official
    generation script reads) or ``"c4"`` (cut anywhere, as MarkLLM's C4 prompts)."""
    prompt_len: int = 30
    """Tokens per prompt (official ``min_length=230`` with 200 new tokens leaves about 30)."""
    prompts_path: str = ""
    """Optional JSONL of prompts (``prefix`` or ``prompt`` field, words of the lexicon) replacing
    the generated ones; empty = generate them from held-out grammar text."""
    include_prompt: bool = True
    """Detect and attack prompt + continuation, as MarkLLM's ``generate_watermarked_text`` returns
    it in the official pipeline; False = the continuation only."""
    gamma: float = 0.5
    """Green-list fraction of every scheme (MarkLLM configs of the official code: 0.5)."""
    delta: float = 2.0
    """Green logit bias of every scheme (MarkLLM configs: 2.0)."""
    entropy_threshold: float = 0.9
    """Entropy gate (nats) of the SWEET-like scheme (MarkLLM ``SWEET.json``: 0.9)."""
    z_threshold: float = 4.0
    """Detection threshold on the z-score; an attack succeeds when z < this (MarkLLM: 4.0)."""
    sira: SIRAConfig = field(default_factory=SIRAConfig)
    """The attack's settings (``sira.percentile``, official 30; ``sira.rewriter_temperature``, 1); the rewrite
    baselines share its rewriter."""
    substitution_rate: float = 0.7
    """Share of words the word-substitution baseline replaces."""
    matched_rates: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    """Mask rates of the random / low-SI baselines, interpolated to SIRA's edit rate."""

    OPEN_FIELDS: ClassVar[tuple[str, ...]] = ("z_threshold",)
    """Any real z-score is a valid detection threshold (NaN is still rejected)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_sentences", "n_texts", "prompt_len"),
                     nonnegative=("delta", "entropy_threshold"),
                     open_fraction=("gamma",), fraction=("substitution_rate", "matched_rates"),
                     nonempty=("matched_rates",), at_least={"text_len": 2},
                     choices={"prompt_style": PROMPT_STYLES})
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"n_sentences": 10**7, "n_texts": 10**5, "text_len": 10**5, "prompt_len": 10**5})
        if self.prompts_path and not Path(self.prompts_path).is_file():
            raise ConfigError(f"SyntheticConfig.prompts_path must be an existing JSONL file, "
                              f"got {self.prompts_path!r}")


def make_prompts(cfg: SyntheticConfig, lex, seed: int) -> np.ndarray:
    """``(n_texts, prompt_len)`` prompts: from ``cfg.prompts_path`` if set, else generated in ``cfg.prompt_style``."""
    if cfg.prompts_path:
        return load_prompts(cfg.prompts_path, lex, cfg.n_texts, cfg.prompt_len)
    return sample_prompts(lex, cfg.n_texts, cfg.prompt_len, cfg.prompt_style, seed=seed)


def _matched_z(edits: list[float], zs: list[float], target: float) -> float:
    """Mean z of a baseline interpolated (linearly in edit rate) at the edit rate ``target``."""
    order = np.argsort(edits)
    return float(np.interp(target, np.asarray(edits)[order], np.asarray(zs)[order]))


def run_synthetic(cfg: SyntheticConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Generate, attack and detect for the three schemes; per-seed ASR, z, edit and meaning metrics."""
    lex = build_lexicon()
    V, end = lex.vocab_size, lex.end_id
    target = KneserNeyLM(V, order=3, pad_id=end).fit(sample_corpus(lex, cfg.n_sentences, seed=2 * seed))
    surrogate = KneserNeyLM(V, order=2, pad_id=end).fit(sample_corpus(lex, cfg.n_sentences, seed=2 * seed + 1))
    key = 1_000_003 * (seed + 1)
    schemes = {"kgw": KGW(cfg.gamma, cfg.delta, key), "unigram": Unigram(cfg.gamma, cfg.delta, key),
               "gated": EntropyGatedKGW(cfg.entropy_threshold, cfg.gamma, cfg.delta, key)}
    prompt = make_prompts(cfg, lex, seed)

    def generate(scheme, gen_seed: int) -> np.ndarray:  # the text handed to detector and attacker
        y = scheme.generate(target, prompt, cfg.text_len, seed=gen_seed)
        return np.concatenate([prompt, y], axis=1) if cfg.include_prompt else y

    plain = generate(KGW(cfg.gamma, 0.0, key), 10_000 + seed)
    m: Metrics = {}
    # the LMs learned: per-token NLL of held-out grammar text against the uniform (chance) predictor
    held_out = sample_corpus(lex, 2000, seed=10_000_019 + seed)[None, :]
    m["target_lm_nll"] = float(-target.token_logprobs(held_out).mean())
    m["surrogate_lm_nll"] = float(-surrogate.token_logprobs(held_out).mean())
    m["uniform_nll"] = float(np.log(V))
    total = len(SCHEMES) * (6 + 2 * len(cfg.matched_rates))
    done = 0
    for s_i, name in enumerate(SCHEMES):
        wm = schemes[name]
        x = generate(wm, 100 * seed + s_i)
        ref = reference_paraphrase(lex, x)
        rw = ConceptRewriter(lex, surrogate, cfg.sira.rewriter_temperature, seed=1000 * seed + s_i)
        sira = SIRAAttack(surrogate, rw, cfg.sira.percentile)
        blanks = sira.blanks(x)
        rate = float(blanks[:, 1:].mean())
        attacks = {"none": lambda t, r: t, "sira": sira.attack,
                   "random": RandomMaskRewrite(rw, rate, seed=seed).attack,
                   "lowsi": LowSIMaskRewrite(surrogate, rw, rate).attack,
                   "wordsub": WordSubstitution(lex, cfg.substitution_rate, seed=seed).attack,
                   "fullpara": FullParaphrase(rw).attack}
        nll_wm = -target.token_logprobs(x).mean()
        for a in ATTACKS:
            y = attacks[a](x, ref)
            z = wm.detect(y, lm=target)
            m[f"{name}_{a}_z"] = float(z.mean())
            m[f"{name}_{a}_asr"] = float((z < cfg.z_threshold).mean())
            m[f"{name}_{a}_edit"] = float((y != x).mean())
            m[f"{name}_{a}_concept_acc"] = float((lex.concept_of[y] == ref).mean())
            m[f"{name}_{a}_nll_increase"] = float(-target.token_logprobs(y).mean() - nll_wm)
            done += 1
            progress(done, total)
        m[f"{name}_tpr"] = 1.0 - m[f"{name}_none_asr"]
        m[f"{name}_fpr"] = float((wm.detect(plain, lm=target) >= cfg.z_threshold).mean())
        m[f"{name}_sira_blank_rate"] = rate
        # entropy profile: watermark evidence carried by the tokens SIRA blanks
        green = wm.green_flags(x, V).astype(float)
        scored = wm.scored_mask(x, target)
        excess = (green - cfg.gamma) * scored
        m[f"{name}_green_excess_share_blanked"] = float(excess[blanks[:, 1:]].sum() / excess.sum())
        ent = entropy(target.sequence_probs(x))
        m[f"{name}_entropy_blanked"] = float(ent[blanks[:, 1:]].mean())
        m[f"{name}_entropy_kept"] = float(ent[~blanks[:, 1:]].mean())
        # matched edit rate: sweep the baselines' mask rate, interpolate mean z at SIRA's edit rate
        for base in ("random", "lowsi"):
            edits, zs = [], []
            for r in cfg.matched_rates:
                att = RandomMaskRewrite(rw, r, seed=seed) if base == "random" else LowSIMaskRewrite(surrogate, rw, r)
                y = att.attack(x, ref)
                edits.append(float((y != x).mean()))
                zs.append(float(wm.detect(y, lm=target).mean()))
                done += 1
                progress(done, total)
            m[f"{name}_{base}_matched_edit_z"] = _matched_z(edits, zs, m[f"{name}_sira_edit"])
            m[f"{name}_sira_minus_{base}_z_matched_edit"] = m[f"{name}_sira_z"] - m[f"{name}_{base}_matched_edit_z"]
            m[f"{name}_sira_minus_{base}_z_matched_blanks"] = m[f"{name}_sira_z"] - m[f"{name}_{base}_z"]
    m["min_tpr"] = min(m[f"{s}_tpr"] for s in SCHEMES)
    m["max_fpr"] = max(m[f"{s}_fpr"] for s in SCHEMES)
    m["min_sira_asr"] = min(m[f"{s}_sira_asr"] for s in SCHEMES)
    m["min_sira_concept_acc"] = min(m[f"{s}_sira_concept_acc"] for s in SCHEMES)
    for base in ("random", "lowsi"):
        for match in ("matched_edit", "matched_blanks"):
            m[f"max_sira_minus_{base}_z_{match}"] = max(m[f"{s}_sira_minus_{base}_z_{match}"] for s in SCHEMES)
    return m


_DESCRIPTION = ("Synthetic concept grammar; KN-trigram target LM watermarked with KGW, Unigram and an "
                "entropy-gated KGW (gamma 0.5, delta 2, gate 0.9 nat), 30-token prompts in the {style} style + "
                "200 new tokens; attacker = KN-bigram surrogate on disjoint data + concept-constrained rewriter "
                "(stand-in for the attack LLM); SIRA (p=30) vs random-mask, low-SI-mask, word substitution and "
                "full-paraphrase rewrites on the same texts.")
_FULL = ("The paper's setting (OPT-1.3B/2.7B watermarked generation on OpenGen and C4 prompts via MarkLLM, "
         "Llama-3-8B-Instruct as paraphraser/scorer/attacker, S-BERT quality) needs model weights, the prompt "
         "files and a GPU; it is not implemented here. 'full' only scales the synthetic study (prompts_path takes "
         "a JSONL of prompts in the lexicon's words).")
_STANDIN = ("Kneser-Ney n-gram LMs on a 149-word synthetic concept language and a concept-constrained rewriter stand "
            "in for OPT text under MarkLLM and a Llama-3-8B attacker")


def _fidelity(style: str) -> dict[str, Fidelity]:
    return {"smoke": Fidelity("mechanism", f"{_STANDIN}; {style} prompts, 40 texts x 80 tokens"),
            "quick": Fidelity("mechanism", f"{_STANDIN}; {style} prompts, 300 texts x 200 tokens"),
            "full": Fidelity("mechanism", f"{_STANDIN}; {style} prompts, 1000 texts x 200 tokens")}


_SMOKE = {"n_sentences": 5000, "n_texts": 40, "text_len": 80, "prompt_len": 10, "matched_rates": (0.6, 0.9)}

EXPERIMENTS = [
    Experiment(
        name="synthetic",
        description=_DESCRIPTION.format(style="OpenGen (ends at a sentence end)"),
        config=SyntheticConfig,
        run=run_synthetic,
        presets={"smoke": dict(_SMOKE), "quick": {}, "full": {"n_texts": 1000}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        figures=synthetic_figures,
        fidelity=_fidelity("OpenGen-style"),
        full_requirements=_FULL,
    ),
    Experiment(
        name="synthetic_c4",
        description=_DESCRIPTION.format(style="C4 (cut mid-sentence)"),
        config=SyntheticConfig,
        run=run_synthetic,
        presets={"smoke": {**_SMOKE, "prompt_style": "c4"}, "quick": {"prompt_style": "c4"},
                 "full": {"n_texts": 1000, "prompt_style": "c4"}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        figures=synthetic_figures,
        fidelity=_fidelity("C4-style"),
        full_requirements=_FULL,
    ),
]

_ASR_PAPER = "nearly 100% ASR on seven schemes (abstract)"
_FAIR_ASR = ("the ASR is a per-text rate of the paper's pipeline (OPT text under MarkLLM schemes, an LLM attacker): "
             "that pipeline on fewer prompts tests it, a stand-in language and rewriter do not")
_TIE_Z = "no paper number; one green token in a 230-token text moves z by 1/sqrt(T g (1-g)) = 0.13"

CLAIMS = [
    # every seed: a setup precondition (detection works on clean watermarked text) that must hold in every run
    Claim(id="detectable", kind="check",
          statement="Before attack, every scheme detects its watermarked texts (TPR >= 0.99 at z >= 4) "
                    "(setup check, ours beyond the paper).",
          paper_value="z threshold 4 (MarkLLM configs)", experiment="synthetic", metric="min_tpr",
          op=">=", threshold=0.99, aggregate="every_seed"),
    # every seed: a setup precondition (the z >= 4 detector rarely flags plain text) that must hold in every run
    Claim(id="low_fpr", kind="check",
          statement="Unwatermarked texts are rarely flagged (FPR <= 0.01 at z >= 4, every scheme) "
                    "(setup check, ours beyond the paper).",
          paper_value="z threshold 4 (MarkLLM configs)", experiment="synthetic", metric="max_fpr",
          op="<=", threshold=0.01, aggregate="every_seed"),
    # every seed: the paper reports ~100% ASR per evaluation run; ">= 90% on every scheme" is a per-run claim
    Claim(id="sira_asr", kind="paper", source="abstract", fair_at="reduced", fair_at_reason=_FAIR_ASR,
          requires=("detectable",),
          statement="SIRA (p=30) removes the watermark: attack success >= 0.9 on every scheme, OpenGen-style "
                    "prompts.",
          paper_value=_ASR_PAPER, experiment="synthetic", metric="min_sira_asr", op=">=", threshold=0.9,
          aggregate="every_seed"),
    # every seed: meaning preservation holds by construction of the rewriter, so it must hold in every run
    Claim(id="sira_meaning", kind="check",
          statement="SIRA keeps the meaning: concept-sequence accuracy >= 0.95 on every scheme "
                    "(true by construction of the concept-constrained rewriter).",
          paper_value="semantics preserved (abstract)",
          experiment="synthetic", metric="min_sira_concept_acc", op=">=", threshold=0.95, aggregate="every_seed"),
    Claim(id="high_si_beats_random", kind="ours",
          statement="At SIRA's edit rate, masking high-SI tokens leaves a lower mean z than random masking, for "
                    "every scheme (max over schemes of the gap <= 0) (ours, beyond the paper).",
          paper_value="watermarks sit on high-entropy tokens (abstract)", experiment="synthetic",
          metric="max_sira_minus_random_z_matched_edit", op="<=", threshold=0.0, aggregate="mean", resolution=0.13,
          resolution_reason=_TIE_Z),
    Claim(id="high_si_beats_low_si", kind="ours",
          statement="At SIRA's edit rate, masking high-SI tokens leaves a lower mean z than masking low-SI tokens, "
                    "for every scheme (ours, beyond the paper).",
          paper_value="watermarks sit on high-entropy tokens (abstract)", experiment="synthetic",
          metric="max_sira_minus_lowsi_z_matched_edit", op="<=", threshold=0.0, aggregate="mean", resolution=0.13,
          resolution_reason=_TIE_Z + " (as high_si_beats_random)"),
    # every seed: the C4-prompt pipeline (README) repeats the setup and the ASR claim
    Claim(id="detectable_c4", kind="check",
          statement="As detectable, C4-style prompts (setup check, ours beyond the paper).",
          paper_value="z threshold 4 (MarkLLM configs)", experiment="synthetic_c4", metric="min_tpr", op=">=",
          threshold=0.99, aggregate="every_seed"),
    Claim(id="low_fpr_c4", kind="check", statement="As low_fpr, C4-style prompts (setup check, ours beyond the paper).",
          paper_value="z threshold 4 (MarkLLM configs)", experiment="synthetic_c4", metric="max_fpr", op="<=",
          threshold=0.01, aggregate="every_seed"),
    Claim(id="sira_asr_c4", kind="paper", source="abstract", fair_at="reduced", fair_at_reason=_FAIR_ASR,
          requires=("detectable_c4",),
          statement="SIRA (p=30) attack success >= 0.9 on every scheme, C4-style prompts.", paper_value=_ASR_PAPER,
          experiment="synthetic_c4", metric="min_sira_asr", op=">=", threshold=0.9, aggregate="every_seed"),
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.sira import (KGW, ConceptRewriter, KneserNeyLM, SIRAAttack, build_lexicon,
                                reference_paraphrase, sample_corpus, sample_prompts)

lex = build_lexicon()
target = KneserNeyLM(lex.vocab_size, order=3, pad_id=lex.end_id).fit(sample_corpus(lex, 5000, seed=0))
surrogate = KneserNeyLM(lex.vocab_size, order=2, pad_id=lex.end_id).fit(sample_corpus(lex, 5000, seed=1))
wm = KGW(gamma=0.5, delta=2.0, key=42)
prompt = sample_prompts(lex, 20, 30, "opengen", seed=0)
x = np.concatenate([prompt, wm.generate(target, prompt, 200, seed=0)], axis=1)  # prompt + continuation
sira = SIRAAttack(surrogate, ConceptRewriter(lex, surrogate, seed=0), percentile=30)
y = sira.attack(x, reference_paraphrase(lex, x))
print("z before:", wm.detect(x, lm=target).mean().round(2), " z after:", wm.detect(y, lm=target).mean().round(2))
print(lex.decode(y[0][:40]))
"""
