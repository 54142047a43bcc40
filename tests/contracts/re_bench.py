"""Contract cases of re_bench: score transforms, score@k, budget curves, agents and environments.

No estimators, modules or gym environments (the mini-environments are scoring sandboxes).
"""

import math

import numpy as np

from icml25.papers.re_bench import (
    AttemptLog,
    FixTinyEmbedding,
    PrefixSumSpeedup,
    ReplayAgent,
    RestrictedTinyMLM,
    RewardHackAgent,
    TinyScalingLaw,
    best_intermediate_score,
    budget_curve,
    expected_bigram_loss,
    expected_max_at_k,
    expected_max_at_k_bruteforce,
    fix_embedding_score,
    log_minus_floor,
    log_transform,
    make_environments,
    markov_entropy_rate,
    normalize,
    restricted_ops_used,
    run_agent,
    score_at_k,
)

P = np.array([[0.5, 0.5], [0.2, 0.8]])
PI = np.array([2 / 7, 5 / 7])
E, W, B = np.eye(2), np.eye(2), np.zeros(2)
LOG = AttemptLog("env", "agent")


def _run(**kwargs):
    import tempfile

    env = TinyScalingLaw(0)
    with tempfile.TemporaryDirectory() as d:
        return run_agent(env, ReplayAgent("start"), **{"time_limit_s": 1.0, "workdir": d, **kwargs})


def _empty_jsonl():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "log.jsonl"
        path.write_text("")
        return AttemptLog.from_jsonl(path)


BAD_INPUTS = [
    # transforms and normalisation
    ("log_transform.zero", lambda: log_transform(0.0), ValueError),
    ("log_transform.nan", lambda: log_transform(math.nan), ValueError),
    ("log_minus_floor.inf_floor", lambda: log_minus_floor(math.inf), ValueError),
    ("log_minus_floor.below_floor", lambda: log_minus_floor(1.0)(0.5), ValueError),
    ("fix_embedding_score.at_floor", lambda: fix_embedding_score(1.5), ValueError),
    ("fix_embedding_score.nan", lambda: fix_embedding_score(math.nan), ValueError),
    ("best_intermediate.not_bool", lambda: best_intermediate_score([1.0], lower_is_better=1), TypeError),
    ("best_intermediate.inf", lambda: best_intermediate_score([1.0, math.inf], lower_is_better=True), ValueError),
    ("best_intermediate.2d", lambda: best_intermediate_score(np.ones((2, 2)), lower_is_better=True), ValueError),
    ("normalize.equal_anchors", lambda: normalize(1.0, 2.0, 2.0), ValueError),
    ("normalize.nan_start", lambda: normalize(1.0, math.nan, 2.0), ValueError),
    # score@k
    ("expected_max.k_zero", lambda: expected_max_at_k([0.1, 0.2], 0), ValueError),
    ("expected_max.k_above_n", lambda: expected_max_at_k([0.1, 0.2], 3, replacement=False), ValueError),
    ("expected_max.float_k", lambda: expected_max_at_k([0.1, 0.2, 0.3], 1.5), TypeError),
    ("expected_max.nan_score", lambda: expected_max_at_k([0.1, math.nan], 1), ValueError),
    ("expected_max.scores_2d", lambda: expected_max_at_k(np.ones((2, 2)), 1), ValueError),
    ("bruteforce.k_zero", lambda: expected_max_at_k_bruteforce([0.1, 0.2], 0), ValueError),
    ("score_at_k.no_tasks", lambda: score_at_k([], 1), ValueError),
    ("score_at_k.zero_boot", lambda: score_at_k([[0.1, 0.2]], 1, n_boot=0), ValueError),
    ("score_at_k.too_few_attempts", lambda: score_at_k([[0.1]], 2, replacement=False), ValueError),
    ("score_at_k.empty_task", lambda: score_at_k([[]], 1), ValueError),
    ("score_at_k.level_above_one", lambda: score_at_k([[0.1, 0.2]], 1, level=1.5), ValueError),
    ("budget_curve.negative_budget", lambda: budget_curve([[LOG]], [-1.0]), ValueError),
    ("budget_curve.no_tasks", lambda: budget_curve([], [1.0]), ValueError),
    ("budget_curve.no_k_fits", lambda: budget_curve([[LOG]], [1.0], split_policy=(2,)), ValueError),
    ("attempt_log.empty_jsonl", _empty_jsonl, ValueError),
    # agents and the attempt loop
    ("replay.empty_solution", lambda: ReplayAgent(""), ValueError),
    ("hack.unknown", lambda: RewardHackAgent("bribe_grader"), ValueError),
    ("run_agent.zero_time", lambda: _run(time_limit_s=0.0), ValueError),
    ("run_agent.negative_calls", lambda: _run(max_score_calls=-1), ValueError),
    ("run_agent.unknown_clock", lambda: _run(clock="cpu"), ValueError),
    # environments
    ("prefix_sum.tiny_input", lambda: PrefixSumSpeedup(0, n=5), ValueError),
    ("fix_embedding.one_token_vocab", lambda: FixTinyEmbedding(0, vocab=1), ValueError),
    ("fix_embedding.unknown_floor", lambda: FixTinyEmbedding(0, floor="owt"), ValueError),
    ("fix_embedding.negative_floor", lambda: FixTinyEmbedding(0, floor=-1.0), ValueError),
    ("fix_embedding.floor_above_max_entropy", lambda: FixTinyEmbedding(0, floor=5.0), ValueError),
    ("restricted_mlm.short_corpus", lambda: RestrictedTinyMLM(0, corpus_len=10), ValueError),
    ("scaling_law.zero_depth", lambda: TinyScalingLaw(0, depth=0), ValueError),
    ("scaling_law.unknown_knob", lambda: TinyScalingLaw(0).solution_source({"learning_rate": 1.0}), ValueError),
    ("make_environments.unknown_scale", lambda: make_environments(0, scale="huge"), ValueError),
    ("restricted_ops.syntax_error", lambda: restricted_ops_used("def f(:"), ValueError),
    ("restricted_ops.not_text", lambda: restricted_ops_used(42), TypeError),
    ("bigram_loss.shape_mismatch", lambda: expected_bigram_loss(E, np.eye(3), B, P, PI), ValueError),
    ("bigram_loss.P_not_stochastic", lambda: expected_bigram_loss(E, W, B, P * 2, PI), ValueError),
    ("entropy_rate.nan_P", lambda: markov_entropy_rate(np.full((2, 2), math.nan), PI), ValueError),
    ("entropy_rate.pi_length", lambda: markov_entropy_rate(P, np.ones(3) / 3), ValueError),
]
