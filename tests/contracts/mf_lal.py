"""Contract cases of mf_lal: the MFLAL model, its SVGP surrogate and a bad-input battery (no docking here)."""

from __future__ import annotations

import torch

from icml25.papers.mf_lal import (
    MFLAL,
    SVGP,
    LassoOracle,
    MFLALSettings,
    MultiFidelityOracle,
    SelfiesVocab,
    canonical_smiles,
    docking_ladder,
    ligand_pdbqt,
    make_level_data,
    mean_pairwise_tanimoto,
    qed,
    receptors,
    run_active_learning,
    sa_score,
)


def _mflal():
    model = MFLAL(vocab_size=7, max_len=10, n_levels=3, latent_dim=4, embedding_dim=3, hidden=8,
                  kernel_widths=(6, 3), n_inducing=5)
    return model, (torch.randint(0, 7, (4, 10)), 2)


MODULES = {
    "MFLAL": _mflal,
    "SVGP": lambda: (SVGP(3, 6, feature_widths=(5, 2)), (torch.randn(4, 3),)),
}

CPU_ONLY = {
    "docking_ladder": "the cost is AutoDock Vina docking, which runs on CPU only; the model is a few small MLPs "
                      "and 32-point SVGPs, run on one CPU thread next to the docking",
}

_VOCAB = SelfiesVocab(["CCO", "c1ccccc1"])
_ORACLE = MultiFidelityOracle([len], [1.0])

BAD_INPUTS = [
    ("canonical_invalid", lambda: canonical_smiles("C1CC"), ValueError),
    ("canonical_empty", lambda: canonical_smiles(""), ValueError),
    ("qed_invalid", lambda: qed("xyz"), ValueError),
    ("sa_invalid", lambda: sa_score("C1CC"), ValueError),
    ("tanimoto_invalid", lambda: mean_pairwise_tanimoto(["CCO", "C1CC"]), ValueError),
    ("vocab_invalid", lambda: SelfiesVocab(["CCO", "C1CC"]), ValueError),
    ("ligand_invalid", lambda: ligand_pdbqt("C1CC"), ValueError),
    ("lasso_alpha_zero", lambda: LassoOracle(alpha=0.0), ValueError),
    ("lasso_unfitted", lambda: LassoOracle()("CCO"), ValueError),
    ("lasso_length_mismatch", lambda: LassoOracle().fit(["CCO", "CCN"], [1.0]), ValueError),
    ("lasso_nan_score", lambda: LassoOracle().fit(["CCO", "CCN"], [1.0, float("nan")]), ValueError),
    ("lasso_invalid_query", lambda: LassoOracle().fit(["CCO", "CCN"], [1.0, 2.0])("C1CC"), ValueError),
    ("receptors_unknown_target", lambda: receptors("egfr"), ValueError),
    ("receptors_missing_dir", lambda: receptors("brd4_bd2", "/nonexistent/mf_lal"), ValueError),
    ("ladder_too_many_structures", lambda: docking_ladder("cmet", n_l2_structures=6), ValueError),
    ("ladder_top_below_low", lambda: docking_ladder("cmet", exhaustiveness=4, top_exhaustiveness=2), ValueError),
    ("oracle_cost_count", lambda: MultiFidelityOracle([len, len], [1.0]), ValueError),
    ("oracle_bad_level", lambda: _ORACLE.query("CCO", 1), ValueError),
    ("model_vocab_one", lambda: MFLAL(vocab_size=1, max_len=5), ValueError),
    ("model_zero_levels", lambda: MFLAL(vocab_size=5, max_len=5, n_levels=0), ValueError),
    ("model_bad_level", lambda: MFLAL(5, 5, 2, 2, 2, 4, (3,), 2)(torch.zeros(2, 5, dtype=torch.long), 2),
     ValueError),
    ("model_float_tokens", lambda: MFLAL(5, 5, 2, 2, 2, 4, (3,), 2)(torch.zeros(2, 5), 0), ValueError),
    ("model_wrong_length", lambda: MFLAL(5, 5, 2, 2, 2, 4, (3,), 2).encode(torch.zeros(2, 4, dtype=torch.long)),
     ValueError),
    ("svgp_wrong_dim", lambda: SVGP(3, 4, ())(torch.zeros(2, 2)), ValueError),
    ("svgp_no_inducing", lambda: SVGP(3, 0), ValueError),
    ("settings_zero_M", lambda: MFLALSettings(M=0), ValueError),
    ("settings_negative_lr", lambda: MFLALSettings(lr=-1.0), ValueError),
    ("level_data_mismatch", lambda: make_level_data(["CCO"], [1.0, 2.0], _VOCAB, 10), ValueError),
    ("run_zero_budget", lambda: run_active_learning(MFLAL(len(_VOCAB), 10, 1, 2, 2, 4, (3,), 2), _VOCAB, _ORACLE,
                                                    [make_level_data(["CCO"], [1.0], _VOCAB, 10)], 0.0,
                                                    MFLALSettings()), ValueError),
]
