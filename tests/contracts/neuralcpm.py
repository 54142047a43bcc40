"""Contract cases of neuralcpm: the three Hamiltonians (nn.Modules) and bad input to the CPM API."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.neuralcpm import (
    CellsortHamiltonian,
    ClosureHamiltonian,
    NeuralHamiltonian,
    SymbolicHamiltonian,
    cell_shape_stats,
    checkerboard_cpm,
    contact_matrix,
    metropolis_cpm,
    parallel_cellsort_cpm,
    parallel_cpm,
    permute_cell_ids,
    random_init,
    sorting_index,
    train_ebm,
    volumes,
)

ESTIMATORS: list = []  # no scikit-learn estimators: the Hamiltonians are nn.Modules trained by train_ebm


def _lattices(n: int = 2, size: int = 6, n_cells: int = 4):
    sigma = torch.stack([torch.from_numpy(random_init(size, size, n_cells, [1, 2, 1, 2], 1.5, seed=s)[0])
                         for s in range(n)])
    return sigma, torch.tensor([0, 1, 2, 1, 2])


def _nh() -> NeuralHamiltonian:
    return NeuralHamiltonian(2, node_dims=(2, 3), edge_dims=(2, 3), pools=(1, 2), mlp_dims=(4,))


MODULES = {
    "SymbolicHamiltonian": lambda: (SymbolicHamiltonian(2, v_star=9.0, learn_v_star=True), _lattices()),
    "NeuralHamiltonian": lambda: (_nh(), _lattices()),
    "ClosureHamiltonian": lambda: (ClosureHamiltonian(SymbolicHamiltonian(2, v_star=9.0), _nh()), _lattices()),
}

_SIGMA, _CT = _lattices()
_J = np.array([[0.0, 2.5, 1.0], [2.5, 1.0, 4.5], [1.0, 4.5, 1.0]])
_H = CellsortHamiltonian(_J, 0.5, 9.0)
_SYM = SymbolicHamiltonian(2, v_star=9.0)


def _short_type_table():
    sigma, types = random_init(20, 20, 4, [1, 2, 1, 2], 3.0)
    return sigma, types[:2]  # types of ids 0 and 1 only; sigma holds ids up to 4


BAD_INPUTS = [
    ("cellsort_asymmetric_J", lambda: CellsortHamiltonian(np.array([[0.0, 1.0], [2.0, 0.0]]), 0.5, 9.0), ValueError),
    ("cellsort_nan_lam", lambda: CellsortHamiltonian(_J, float("nan"), 9.0), ValueError),
    ("random_init_too_many_cells", lambda: random_init(3, 3, 10, [1] * 10, 1.0), ValueError),
    ("random_init_type_zero", lambda: random_init(6, 6, 2, [0, 1], 1.0), ValueError),
    ("random_init_nan_radius", lambda: random_init(20, 20, 4, [1, 2, 1, 2], np.nan), ValueError),
    ("volumes_float_lattice", lambda: volumes(np.zeros((3, 3)), 1), TypeError),
    ("volumes_id_out_of_range", lambda: volumes(np.full((3, 3), 5), 2), ValueError),
    ("contact_matrix_bad_cell_types", lambda: contact_matrix(np.zeros((3, 3), int), np.array([1, 1])), ValueError),
    ("contact_matrix_short_cell_types", lambda: contact_matrix(*_short_type_table()), ValueError),
    ("sorting_index_1d_lattice", lambda: sorting_index(np.zeros(9, int), np.array([0])), ValueError),
    ("shape_stats_negative_cells", lambda: cell_shape_stats(np.zeros((3, 3), int), -1), ValueError),
    ("metropolis_nan_temperature", lambda: metropolis_cpm(_H, _SIGMA[0].numpy(), _CT.numpy(), 5, T=float("nan")),
     ValueError),
    ("checkerboard_bad_side", lambda: checkerboard_cpm(_H, np.zeros((4, 4), int), np.array([0]), 1.0), ValueError),
    ("symbolic_zero_types", lambda: SymbolicHamiltonian(0), ValueError),
    ("symbolic_nan_v_star", lambda: SymbolicHamiltonian(2, v_star=float("nan")), ValueError),
    ("symbolic_float_lattice", lambda: _SYM(_SIGMA.double(), _CT), TypeError),
    ("symbolic_id_out_of_range", lambda: _SYM(_SIGMA + 10, _CT), ValueError),
    ("symbolic_2d_cell_types", lambda: _SYM(_SIGMA, _CT[None]), ValueError),
    ("neural_pools_length_mismatch", lambda: NeuralHamiltonian(2, node_dims=(4,), edge_dims=(4, 8)), ValueError),
    ("neural_circular_lattice_not_multiple_of_stride",
     lambda: NeuralHamiltonian(2, (2, 3), (2, 3), (1, 2), (4,), padding="circular")(
         torch.zeros(1, 7, 7, dtype=torch.long), _CT), ValueError),
    ("neural_lattice_too_small_for_stride", lambda: _nh()(torch.zeros(1, 5, 5, dtype=torch.long), _CT), ValueError),
    ("neural_float_lattice", lambda: _nh()(_SIGMA.float(), _CT), TypeError),
    ("neural_2d_lattice", lambda: _nh()(_SIGMA[0], _CT), ValueError),
    ("closure_not_modules", lambda: ClosureHamiltonian(_H, _nh()), TypeError),
    ("parallel_negative_steps", lambda: parallel_cpm(_SYM, _SIGMA, _CT, -1, 2), ValueError),
    ("parallel_nan_temperature", lambda: parallel_cpm(_SYM, _SIGMA, _CT, 1, 2, T=float("nan")), ValueError),
    ("parallel_id_out_of_range", lambda: parallel_cpm(_SYM, _SIGMA + 10, _CT, 1, 2), ValueError),
    ("permute_float_lattice", lambda: permute_cell_ids(_SIGMA.float()), TypeError),
    ("train_2d_data", lambda: train_ebm(_SYM, _SIGMA[0], _CT, 1), ValueError),
    ("train_nonpositive_lr", lambda: train_ebm(_SYM, _SIGMA, _CT, 1, lr=0.0), ValueError),
    ("train_zero_chains", lambda: train_ebm(_SYM, _SIGMA, _CT, 1, n_chains=0), ValueError),
    ("train_bad_chain_init", lambda: train_ebm(_SYM, _SIGMA, _CT, 1, chain_init="fresh"), ValueError),
    ("parallel_bad_proposal", lambda: parallel_cpm(_SYM, _SIGMA, _CT, 1, 2, proposal="swap"), ValueError),
    ("metropolis_bad_proposal", lambda: metropolis_cpm(_H, _SIGMA[0].numpy(), _CT.numpy(), 5, proposal="x"),
     ValueError),
    ("parallel_cellsort_too_many_flips", lambda: parallel_cellsort_cpm(_H, _SIGMA.numpy(), _CT.numpy(), 1, 1000),
     ValueError),
    ("neural_bad_padding", lambda: NeuralHamiltonian(2, padding="reflect"), ValueError),
    ("neural_type_out_of_range", lambda: _nh()(_SIGMA, torch.tensor([0, 1, 2, 3, 2])), ValueError),
    ("symbolic_bad_J_init_length", lambda: SymbolicHamiltonian(2, J_init=[1.0, 2.0]), ValueError),
]
