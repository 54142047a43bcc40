"""icml25.common.graphs: homophily, PATTERN recipe, RWSE against dense matrix powers and PyG, seeds, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import AddRandomWalkPE

from icml25.common.graphs import (
    contextual_sbm,
    edge_homophily,
    planted_pattern_graphs,
    random_sparse_graph,
    random_walk_pe,
)


@pytest.mark.parametrize("homophily", [0.0, 0.2, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("degree_corrected", [False, True])
def test_csbm_homophily_matches_request(homophily, degree_corrected):
    data = contextual_sbm(3000, 4, homophily, 8, 1.0, degree_corrected=degree_corrected, seed=3)
    assert edge_homophily(data.edge_index, data.y) == pytest.approx(homophily, abs=0.02)


def test_csbm_structure_and_features():
    data = contextual_sbm(2000, 5, 0.7, 16, 3.0, avg_degree=8.0, seed=0)
    ei = data.edge_index
    assert not bool((ei[0] == ei[1]).any()), "self-loops"
    flipped = {(int(a), int(b)) for a, b in ei.t()}
    assert all((b, a) in flipped for a, b in flipped), "not undirected"
    assert ei.size(1) / data.num_nodes == pytest.approx(8.0, rel=0.05)
    assert torch.bincount(data.y).tolist() == [400] * 5  # balanced classes
    # class means have norm feature_signal; the empirical class-mean norm ~ sqrt(3^2 + 16/400)
    norms = torch.stack([data.x[data.y == c].mean(0) for c in range(5)]).norm(dim=1)
    assert torch.allclose(norms, torch.full((5,), (9 + 16 / 400) ** 0.5), atol=0.15)


def test_csbm_degree_correction_gives_heavy_tail():
    plain = contextual_sbm(4000, 2, 0.5, 2, 0.0, seed=1)
    corrected = contextual_sbm(4000, 2, 0.5, 2, 0.0, degree_corrected=True, seed=1)
    deg = lambda d: torch.bincount(d.edge_index[0], minlength=d.num_nodes).float()  # noqa: E731
    assert deg(corrected).max() > 2 * deg(plain).max()


def test_csbm_deterministic_per_seed():
    a, b = contextual_sbm(300, 3, 0.4, 4, 1.0, seed=7), contextual_sbm(300, 3, 0.4, 4, 1.0, seed=7)
    c = contextual_sbm(300, 3, 0.4, 4, 1.0, seed=8)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not torch.equal(a.x, c.x)


@pytest.mark.parametrize("kwargs", [
    dict(n_classes=1), dict(n_nodes=2, n_classes=3), dict(homophily=1.5), dict(homophily=-0.1),
    dict(feature_dim=0), dict(feature_signal=-1.0), dict(avg_degree=0.0), dict(avg_degree=1000.0),
])
def test_csbm_bad_input(kwargs):
    args = dict(n_nodes=100, n_classes=3, homophily=0.5, feature_dim=4, feature_signal=1.0) | kwargs
    with pytest.raises(ValueError):
        contextual_sbm(**args)


def test_planted_pattern_recipe():
    graphs = planted_pattern_graphs(40, seed=0)
    assert all(40 <= g.num_nodes <= 150 for g in graphs)
    assert all(int(g.y.sum()) == 20 for g in graphs)
    assert all(torch.equal(g.x.sum(1), torch.ones(g.num_nodes)) for g in graphs)  # one-hot symbols
    # edge densities: pattern-pattern ~ p_pattern, pattern-rest ~ p_pattern_out, rest ~ between p_out and p_in
    pp, pr, rr = [], [], []
    for g in graphs:
        a = torch.zeros(g.num_nodes, g.num_nodes)
        a[g.edge_index[0], g.edge_index[1]] = 1
        pat = g.y.bool()
        pp.append(a[pat][:, pat].sum() / (20 * 19))
        pr.append(a[pat][:, ~pat].mean())
        rr.append(a[~pat][:, ~pat].sum() / ((~pat).sum() * ((~pat).sum() - 1)))
    assert float(np.mean(pp)) == pytest.approx(0.5, abs=0.02)
    assert float(np.mean(pr)) == pytest.approx(0.5, abs=0.02)
    assert 0.35 < float(np.mean(rr)) < 0.5


def test_planted_pattern_deterministic_and_bad_input():
    a, b = planted_pattern_graphs(3, seed=5), planted_pattern_graphs(3, seed=5)
    assert all(torch.equal(x.edge_index, y.edge_index) and torch.equal(x.y, y.y) for x, y in zip(a, b))
    with pytest.raises(ValueError):
        planted_pattern_graphs(2, min_nodes=20, pattern_size=20)
    with pytest.raises(ValueError):
        planted_pattern_graphs(2, p_in=1.2)
    with pytest.raises(ValueError):
        planted_pattern_graphs(0)


def _dense_rwse(edge_index, n, k):
    a = np.zeros((n, n))
    np.add.at(a, (edge_index[0].numpy(), edge_index[1].numpy()), 1.0)
    deg = a.sum(1)
    p = np.divide(a, deg[:, None], out=np.zeros_like(a), where=deg[:, None] > 0)
    return np.stack([np.diag(np.linalg.matrix_power(p, t)) for t in range(1, k + 1)], 1)


def test_rwse_matches_dense_matrix_powers_and_pyg():
    ei = random_sparse_graph(60, avg_degree=3.0, seed=2)  # sparse: some isolated nodes likely
    pe = random_walk_pe(ei, 60, 6)
    np.testing.assert_allclose(pe.numpy(), _dense_rwse(ei, 60, 6), atol=1e-6)
    ref = AddRandomWalkPE(walk_length=6)(Data(edge_index=ei, num_nodes=60)).random_walk_pe
    np.testing.assert_allclose(pe.numpy(), ref.numpy(), atol=1e-5)


def test_rwse_closed_form_cycle_and_batch_blocks():
    # cycle C_4: return probability after t steps is 0 for odd t, 1/2 for even t (t >= 2)
    ring = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]])
    pe = random_walk_pe(ring, 4, 4)
    np.testing.assert_allclose(pe.numpy(), np.tile([0, 0.5, 0, 0.5], (4, 1)), atol=1e-7)
    # a disjoint union (a PyG batch) gives each block its own encoding
    both = torch.cat([ring, ring + 4], 1)
    np.testing.assert_allclose(random_walk_pe(both, 8, 4).numpy(), np.tile([0, 0.5, 0, 0.5], (8, 1)), atol=1e-7)


def test_rwse_bad_input():
    ei = torch.tensor([[0, 1], [1, 5]])
    with pytest.raises(ValueError, match="outside"):
        random_walk_pe(ei, 3, 4)
    with pytest.raises(ValueError):
        random_walk_pe(torch.tensor([[0, 1], [1, 0]]), 2, 0)
    with pytest.raises(ValueError):
        random_walk_pe(torch.tensor([0, 1]), 2, 2)


def test_random_sparse_graph_degree_and_determinism():
    ei = random_sparse_graph(20000, avg_degree=10.0, seed=0)
    assert ei.size(1) / 20000 == pytest.approx(10.0, rel=0.01)
    assert torch.equal(ei, random_sparse_graph(20000, avg_degree=10.0, seed=0))
    with pytest.raises(ValueError):
        random_sparse_graph(1)
