"""RE-Bench (Wijk et al., ICML 2025, arXiv 2411.15114): an offline harness for its evaluation methodology.

Score transforms and normalisation (start -> 0, reference -> 1), score@k over attempts,
budget curves, timestamped attempt logs, a scoring sandbox that rejects tampering, scripted
agents, and four CPU mini-environments with the structure of RE-Bench tasks (our own content).
"""

from icml25.papers.re_bench.agents import (
    HACKS,
    Agent,
    HillClimbAgent,
    LLMSolutionAgent,
    NullAgent,
    RandomSearchAgent,
    ReplayAgent,
    RewardHackAgent,
    extract_code,
    run_agent,
)
from icml25.papers.re_bench.environments import (
    BaseEnvironment,
    Environment,
    FixTinyEmbedding,
    InvalidSubmission,
    PrefixSumSpeedup,
    RestrictedTinyMLM,
    TinyScalingLaw,
    expected_bigram_loss,
    make_environments,
    markov_entropy_rate,
    restricted_ops_used,
    verify_output,
)
from icml25.papers.re_bench.scoring import (
    METR_PUBLISHED_SCORES,
    OPENWEBTEXT_LOSS_FLOOR,
    AttemptLog,
    ScoreRecord,
    best_intermediate_score,
    budget_curve,
    expected_max_at_k,
    expected_max_at_k_bruteforce,
    fix_embedding_score,
    identity_transform,
    log_minus_floor,
    log_transform,
    normalize,
    published_score_deviation,
    score_at_k,
)

__all__ = [
    "HACKS", "METR_PUBLISHED_SCORES", "OPENWEBTEXT_LOSS_FLOOR", "Agent", "AttemptLog", "BaseEnvironment", "Environment", "FixTinyEmbedding", "HillClimbAgent", "LLMSolutionAgent",
    "InvalidSubmission", "NullAgent", "PrefixSumSpeedup", "RandomSearchAgent", "ReplayAgent", "RestrictedTinyMLM",
    "RewardHackAgent", "ScoreRecord", "TinyScalingLaw", "best_intermediate_score", "budget_curve", "expected_bigram_loss", "expected_max_at_k",
    "expected_max_at_k_bruteforce", "extract_code", "fix_embedding_score", "identity_transform", "log_minus_floor", "log_transform", "make_environments",
    "markov_entropy_rate", "normalize", "published_score_deviation", "restricted_ops_used", "run_agent", "score_at_k", "verify_output",
]
