"""AutoGFM: exact reductions, invariances, brute-force checks, bad input, smoke run.

The method's defining elements (the paper's equations, as docs/papers/autogfm.md, "Sources and verification", lists
them) and the tests that fail when one is removed or altered (each checked by a mutation of a scratch copy):

1. NOI graphs, the union of the hops-hop ego graphs of a task's nodes (Eq. 1):
   ``test_noi_subgraph_matches_brute_force_bfs``.
2. The weight-sharing super-network, ``H' = sum_i alpha_i GNN_i(H, A)`` with each graph's own alpha (Eq. 11):
   ``test_one_hot_alpha_is_the_plain_pyg_op``, ``test_mixed_layer_is_linear_in_alpha``,
   ``test_mixed_layer_batch_isolation_with_per_graph_alpha``.
3. The two-channel disentangled encoder, a separate GIN, readout and MLP per channel (Eqs. 5-7):
   ``test_encoder_channels_are_two_separate_gin_readout_mlp_stacks``.
4. L_dis: the channel prior p(k | G) (Eq. 8) and Eq. 9's denominator of one candidate per data set, summed (Eq. 10):
   ``test_disentangled_loss_matches_loop_implementation``.
5. psi_I, a softmax over l2-normalised prototypes without temperature (Eq. 12):
   ``test_architecture_predictor_formula``, ``test_default_architecture_softmax_has_no_temperature``.
6. L_inv, ``sum_{i,j} ||A_I,i - psi_E(z_I,i, z_V,j)||_F`` with z_V of one graph of every data set (Eqs. 13-15), in
   the objective of Eq. 19: ``test_paper_loss_form_sums_over_data_sets``,
   ``test_invariance_loss_fuses_each_graph_with_the_variant_part_of_other_data_sets_and_curriculum_enters``.
7. The task loss under psi_I's architecture (Eq. 16): ``test_task_loss_uses_the_invariant_architecture``,
   ``test_paper_loss_form_sums_over_data_sets``.
8. The curriculum, gamma = 1 - t/t_e on the CV of the mean alphas, added to the objective (Eqs. 17-18):
   ``test_curriculum_weight_schedule``, ``test_cv_zero_when_uniform_and_closed_form_for_one_hot``,
   ``test_invariance_loss_fuses_each_graph_with_the_variant_part_of_other_data_sets_and_curriculum_enters``.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data

from icml25.papers.autogfm import (
    OPS,
    ArchitecturePredictor,
    AutoGFM,
    DisentangledEncoder,
    GNNEncoder,
    MixedOpLayer,
    SharedDARTS,
    TaskSpec,
    coefficient_of_variation,
    curriculum_loss,
    curriculum_weight,
    dataset_partners,
    disentangled_contrastive_loss,
    invariance_loss,
    make_op,
    noi_subgraph,
    repro,
    roc_auc,
    unify_features,
)

torch.set_num_threads(1)


F32_REORDERED = {"rtol": 1e-5, "atol": 1e-5}
"""float32 results whose sums are reordered (batched vs alone, mixture vs its terms): about 80 ulps at unit scale,
so the comparisons hold on any CPU's kernels (AVX2, AVX-512, portable) and thread count."""

def _graph(n: int, m: int, dim: int, seed: int) -> Data:
    g = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (m,), generator=g), torch.randint(0, n, (m,), generator=g)
    keep = src != dst
    ei = torch.stack([torch.cat([src[keep], dst[keep]]), torch.cat([dst[keep], src[keep]])])
    ei = torch.unique(ei, dim=1)
    return Data(x=torch.randn(n, dim, generator=g), edge_index=ei)


@pytest.mark.parametrize("k", range(len(OPS)))
def test_one_hot_alpha_is_the_plain_pyg_op(k):
    torch.manual_seed(k)
    layer = MixedOpLayer(8)
    g = _graph(12, 30, 8, seed=k)
    plain = make_op(OPS[k], 8)
    plain.load_state_dict(layer.ops[k].state_dict())
    alpha = torch.zeros(len(OPS))
    alpha[k] = 1.0
    assert torch.equal(layer(g.x, g.edge_index, alpha), plain(g.x, g.edge_index))
    # per-graph alpha rows give the same thing
    assert torch.equal(layer(g.x, g.edge_index, alpha.unsqueeze(0)), plain(g.x, g.edge_index))


def test_mixed_layer_is_linear_in_alpha():
    torch.manual_seed(0)
    layer, g = MixedOpLayer(6), _graph(10, 25, 6, seed=1)
    alpha = torch.softmax(torch.randn(len(OPS)), 0)
    expected = sum(alpha[i] * layer.ops[i](g.x, g.edge_index) for i in range(len(OPS)))
    torch.testing.assert_close(layer(g.x, g.edge_index, alpha), expected, **F32_REORDERED)


def test_mixed_layer_permutation_equivariance():
    torch.manual_seed(0)
    layer, g = MixedOpLayer(8), _graph(15, 40, 8, seed=2)
    alpha = torch.softmax(torch.randn(len(OPS)), 0)
    perm = torch.randperm(15)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(15)
    out = layer(g.x, g.edge_index, alpha)
    out_p = layer(g.x[perm], inv[g.edge_index], alpha)
    torch.testing.assert_close(out_p, out[perm], rtol=1e-5, atol=1e-5)


def test_mixed_layer_batch_isolation_with_per_graph_alpha():
    torch.manual_seed(0)
    layer = MixedOpLayer(8)
    a, b = _graph(9, 20, 8, seed=3), _graph(14, 35, 8, seed=4)
    alphas = torch.softmax(torch.randn(2, len(OPS)), -1)
    alone = layer(a.x, a.edge_index, alphas[:1])
    batch = Batch.from_data_list([a, b])
    together = layer(batch.x, batch.edge_index, alphas, batch.batch)
    torch.testing.assert_close(together[: a.num_nodes], alone, **F32_REORDERED)
    # and b's output uses b's own architecture
    torch.testing.assert_close(together[a.num_nodes:], layer(b.x, b.edge_index, alphas[1]), **F32_REORDERED)


def _bfs_ball(adj: list[set[int]], sources: list[int], hops: int) -> set[int]:
    seen = set(sources)
    queue = deque((s, 0) for s in sources)
    while queue:
        v, d = queue.popleft()
        if d == hops:
            continue
        for u in adj[v]:
            if u not in seen:
                seen.add(u)
                queue.append((u, d + 1))
    return seen


@pytest.mark.parametrize("hops", [0, 1, 2, 3])
def test_noi_subgraph_matches_brute_force_bfs(hops):
    g = _graph(40, 50, 3, seed=5)
    adj = [set() for _ in range(40)]
    for u, v in g.edge_index.T.tolist():
        adj[u].add(v)
    rng = np.random.default_rng(hops)
    for nodes in ([int(rng.integers(40))], rng.choice(40, 2, replace=False).tolist()):
        sub = noi_subgraph(g, nodes, hops)
        ball = _bfs_ball(adj, nodes, hops)
        assert sorted(sub.node_id.tolist()) == sorted(ball)
        ids = sub.node_id.tolist()
        induced = {(u, v) for u, v in g.edge_index.T.tolist() if u in ball and v in ball}
        assert {(ids[u], ids[v]) for u, v in sub.edge_index.T.tolist()} == induced
        assert [ids[c] for c in sub.center_index.tolist()] == nodes
        torch.testing.assert_close(sub.x, g.x[sub.node_id])


def test_architecture_rows_sum_to_one():
    psi = ArchitecturePredictor(16, n_layers=3, n_ops=5, temperature=0.3)
    alpha = psi(torch.randn(7, 16))
    assert alpha.shape == (7, 3, 5)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(7, 3))
    darts = SharedDARTS(4, 8, [TaskSpec("t", "graph", 2)])
    torch.testing.assert_close(darts.architecture(Batch.from_data_list([_graph(5, 6, 4, 0)])).sum(-1), torch.ones(2))


def test_architecture_predictor_formula():
    psi = ArchitecturePredictor(4, n_layers=1, n_ops=3)
    z = torch.randn(2, 4)
    p = psi.prototypes.detach()[0]
    expected = torch.softmax(z @ (p / p.norm(dim=1, keepdim=True)).T, dim=-1)
    torch.testing.assert_close(psi(z)[:, 0], expected)


def _model(seed=0):
    torch.manual_seed(seed)
    return AutoGFM(6, 8, [TaskSpec("n", "node", 3), TaskSpec("g", "graph", 2)], lam=0.5, beta=0.5, t_e=2.0)


def test_customised_architecture_ignores_the_variant_channel():
    model = _model()
    batch = Batch.from_data_list([_graph(8, 15, 6, s) for s in range(4)])
    before = model.customize(batch).detach().clone()
    with torch.no_grad():
        for p in model.encoder.channels[1].parameters():
            p.add_(torch.randn_like(p))
    torch.testing.assert_close(model.customize(batch), before, rtol=0, atol=0)
    with torch.no_grad():  # control: the invariant channel does matter
        for p in model.encoder.channels[0].parameters():
            p.add_(torch.randn_like(p))
    assert not torch.allclose(model.customize(batch), before)


def test_curriculum_weight_schedule():
    assert curriculum_weight(0.0, 5.0) == 1.0
    assert curriculum_weight(2.5, 5.0) == 0.5
    assert curriculum_weight(5.0, 5.0) == 0.0
    assert curriculum_weight(9.0, 5.0) == 0.0
    with pytest.raises(ValueError, match="t_e"):
        curriculum_weight(1.0, -1.0)


def test_cv_zero_when_uniform_and_closed_form_for_one_hot():
    uniform = torch.full((2, 5), 0.2)
    torch.testing.assert_close(coefficient_of_variation(uniform), torch.zeros(2))
    one_hot = torch.eye(5)[:1]
    torch.testing.assert_close(coefficient_of_variation(one_hot), torch.tensor([2.0]))  # sqrt(O - 1)
    # two domains with opposite one-hot choices: abar = (1/2, 1/2, 0, 0, 0)
    alphas = torch.stack([torch.eye(5)[0], torch.eye(5)[1]]).unsqueeze(1)  # (2, 1, 5)
    abar = torch.tensor([0.5, 0.5, 0, 0, 0])
    expected = 0.7 * abar.std(unbiased=False) / abar.mean()
    torch.testing.assert_close(curriculum_loss(alphas, torch.tensor([0, 1]), gamma=0.7), expected)
    assert float(curriculum_loss(torch.full((4, 2, 5), 0.2), torch.tensor([0, 0, 1, 1]), 1.0)) == 0.0


def test_encoder_readout_is_permutation_invariant():
    torch.manual_seed(0)
    enc, g = DisentangledEncoder(5, 8), _graph(11, 25, 5, seed=6)
    perm = torch.randperm(11)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(11)
    z_i, z_v = enc(g.x, g.edge_index)
    z_ip, z_vp = enc(g.x[perm], inv[g.edge_index])
    torch.testing.assert_close(z_ip, z_i, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(z_vp, z_v, rtol=1e-5, atol=1e-5)


class _TakeInvariantHalf(nn.Module):
    def forward(self, pairs):
        return pairs[:, : pairs.size(1) // 2]


def test_invariance_loss_zero_when_env_predictor_ignores_variant():
    torch.manual_seed(0)
    model = _model()
    z_i, z_v = torch.randn(5, 8), torch.randn(5, 8)
    model.psi_env.mlp = _TakeInvariantHalf()
    a_i = model.psi_inv(z_i)
    # zero up to float32 rounding of the softmaxes and the squared differences (~100 ulps of 1)
    tol = 100 * torch.finfo(torch.float32).eps
    assert float(invariance_loss(a_i, model.psi_env(z_i, z_v, model.psi_inv))) == pytest.approx(0.0, abs=tol)
    # a psi_E that does use z_V gives a positive loss
    model.psi_env.mlp = nn.Linear(16, 8)
    assert float(invariance_loss(a_i, model.psi_env(z_i, z_v, model.psi_inv))) > 1e-3


def _loop_dis_loss(z_i, z_v, protos, domain, tau, negatives):
    """Eqs. 8-10 written out per anchor; ``negatives(i, same)`` lists the anchor's negative candidates."""
    cos = torch.nn.functional.cosine_similarity
    per_anchor = []
    for i in range(domain.numel()):
        same = [j for j in range(domain.numel()) if domain[j] == domain[i]]
        pos = same[(same.index(i) + 1) % len(same)]
        zs = (z_i, z_v)
        ch = torch.softmax(torch.stack([cos(zs[k][i], protos[k], dim=0) for k in range(2)]) / tau, 0)
        mix = 0.0
        for k in range(2):
            num = math.exp(float(cos(zs[k][i], zs[k][pos], dim=0)) / tau)
            den = num + sum(math.exp(float(cos(zs[k][i], zs[k][j], dim=0)) / tau) for j in negatives(i, same))
            mix += float(ch[k]) * num / den
        per_anchor.append(-math.log(mix))
    return per_anchor


def test_disentangled_loss_matches_loop_implementation():
    torch.manual_seed(0)
    z_i, z_v, protos = torch.randn(7, 4), torch.randn(7, 4), torch.randn(2, 4)
    domain = torch.tensor([0, 0, 1, 1, 1, 2, 2])
    tau = 0.7
    groups = [[j for j in range(7) if domain[j] == d] for d in range(3)]
    # our earlier form: every graph of the other data sets is a negative, averaged over anchors
    every = _loop_dis_loss(z_i, z_v, protos, domain, tau, lambda i, same: [j for j in range(7) if j not in same])
    got = disentangled_contrastive_loss(z_i, z_v, protos, domain, tau, negatives="all", reduction="mean")
    assert float(got) == pytest.approx(np.mean(every), rel=1e-5)

    # Eq. 9: one candidate per other data set, the graph in the anchor's slot (cyclic); Eq. 10 sums
    def slot_partners(i, same):
        slot = same.index(i)
        return [g[slot % len(g)] for g in groups if g is not groups[int(domain[i])]]

    eq9 = _loop_dis_loss(z_i, z_v, protos, domain, tau, slot_partners)
    got = disentangled_contrastive_loss(z_i, z_v, protos, domain, tau)  # defaults: per_dataset, sum
    assert float(got) == pytest.approx(sum(eq9), rel=1e-5)
    # with one graph per data set both forms coincide (up to sum vs mean): Eq. 9's N-term denominator
    one = torch.tensor([0, 1, 2])
    a = disentangled_contrastive_loss(z_i[:3], z_v[:3], protos, one, tau, negatives="all", reduction="sum")
    b = disentangled_contrastive_loss(z_i[:3], z_v[:3], protos, one, tau)
    torch.testing.assert_close(a, b)


def test_encoder_channels_are_two_separate_gin_readout_mlp_stacks():
    """Eqs. 5-7: z_I and z_V come from two networks with their own weights (GIN layers, mean readout, MLP), computed
    here channel by channel; they differ (float32, F32_REORDERED)."""
    torch.manual_seed(2)
    enc = DisentangledEncoder(5, 8)
    batch = Batch.from_data_list([_graph(9, 20, 5, seed=s) for s in range(3)])
    z = enc(batch.x, batch.edge_index, batch.batch)
    for k in range(2):
        h = batch.x
        for conv in enc.channels[k]["convs"]:
            h = torch.relu(conv(h, batch.edge_index))
        pooled = torch.stack([h[batch.batch == g].mean(0) for g in range(3)])
        torch.testing.assert_close(z[k], enc.channels[k]["mlp"](pooled), **F32_REORDERED)
    assert (z[0] - z[1]).abs().max() > 1e-2


def _two_task_batches(seed_step: int) -> tuple[list, dict]:
    """A node task (3 classes) and a graph task (2 classes), three small graphs each (seeds seed_step * t + s)."""
    tasks = [TaskSpec("n", "node", 3), TaskSpec("g", "graph", 2)]
    graphs = {}
    for t, spec in enumerate(tasks):
        data = []
        for s in range(3):
            g = _graph(7, 12, 6, seed_step * t + s)
            g.y = torch.tensor([s % spec.n_classes])
            if spec.level == "node":
                g.center_index = torch.tensor([s])
            data.append(g)
        graphs[spec.name] = Batch.from_data_list(data)
    return tasks, graphs


class _VariantHalf(nn.Module):
    """psi_E's MLP replaced by ``z_V``: the architecture psi_E predicts depends on the partner's z_V alone."""

    def forward(self, pairs):
        return pairs[:, pairs.size(1) // 2:]


def test_invariance_loss_fuses_each_graph_with_the_variant_part_of_other_data_sets_and_curriculum_enters():
    """Eqs. 14-15 and 19, with the encoder's (z_I, z_V) replaced by spread-out random vectors and psi_E = psi_I(z_V), so
    a wrong partner shows: L_inv sums ||A_I,i - psi_I(z_V,j)|| over the graph j in i's slot of every data set, divided
    by the draws per data set; at step t < t_e the total has L_cur = (1 - t/t_e) sum_l CV(abar_l); at t >= t_e none.
    float32 sums: F32_REORDERED's relative tolerance."""
    from unittest import mock

    rel = F32_REORDERED["rtol"]

    torch.manual_seed(3)
    tasks, graphs = _two_task_batches(20)
    model = AutoGFM(6, 8, tasks, lam=0.1, beta=0.01, t_e=2.0)
    model.psi_env.mlp = _VariantHalf()
    gen = torch.Generator().manual_seed(4)
    codes = {id(graphs[t.name]): (3 * torch.randn(3, 8, generator=gen), 3 * torch.randn(3, 8, generator=gen))
             for t in tasks}
    with mock.patch.object(model, "encode", side_effect=lambda batch: codes[id(batch)]):
        total, parts = model.loss(graphs, step=0.5)
        late_total, late = model.loss(graphs, step=2.0)
    z_i = torch.cat([codes[id(graphs[t.name])][0] for t in tasks])
    z_v = torch.cat([codes[id(graphs[t.name])][1] for t in tasks])
    with torch.no_grad():
        a_i, a_v = model.psi_inv(z_i), model.psi_inv(z_v)
        inv = sum(float((a_i[i] - a_v[j]).norm()) for i in range(6) for j in (i % 3, 3 + i % 3))
        own = sum(2 * float((a_i[i] - a_v[i]).norm()) for i in range(6))
        cur = float(curriculum_loss(a_i, torch.tensor([0, 0, 0, 1, 1, 1]), 1.0 - 0.5 / 2.0))
    assert parts["inv"] == pytest.approx(inv / 3, rel=rel)
    assert abs(own - inv) > 1e-2 * inv  # pairing with the graph's own z_V would be caught
    assert parts["cur"] == pytest.approx(cur, rel=rel) and cur > 1e-2
    assert float(total) == pytest.approx(parts["task"] + 0.1 * parts["dis"] + 0.01 * parts["inv"] + cur, rel=rel)
    assert "cur" not in late
    assert float(late_total) == pytest.approx(late["task"] + 0.1 * late["dis"] + 0.01 * late["inv"], rel=rel)


def test_dataset_partners_brute_force():
    domain = torch.tensor([2, 0, 0, 1, 2, 0, 1, 2, 2])
    got = dataset_partners(domain).tolist()
    groups = {d: [j for j in range(9) if domain[j] == d] for d in (0, 1, 2)}
    for i in range(9):
        slot = groups[int(domain[i])].index(i)
        assert got[i] == [groups[d][slot % len(groups[d])] for d in (0, 1, 2)]
        assert got[i][int(domain[i])] == i


def test_paper_loss_form_sums_over_data_sets():
    """AutoGFM.loss (paper form) re-derived: Eq. 14 over each graph's one partner per data set, divided by the
    number of draws per data set; Eq. 10 likewise; the earlier batch-mean form differs."""
    torch.manual_seed(3)
    tasks, graphs = _two_task_batches(10)
    model = AutoGFM(6, 8, tasks, lam=0.1, beta=0.01, t_e=0.0)
    total, parts = model.loss(graphs)
    z = [model.encode(graphs[t.name]) for t in tasks]
    z_i, z_v = torch.cat([a for a, _ in z]), torch.cat([b for _, b in z])
    domain = torch.tensor([0, 0, 0, 1, 1, 1])
    a_i = model.psi_inv(z_i)
    inv = 0.0
    for i in range(6):
        for j in (i % 3, 3 + i % 3):  # the graph in slot i % 3 of each data set
            a_e = model.psi_inv(model.psi_env.mlp(torch.cat([z_i[i], z_v[j]]).unsqueeze(0)))[0]
            inv += float((a_i[i] - a_e).norm())
    assert parts["inv"] == pytest.approx(inv / 3, rel=1e-5)
    dis = disentangled_contrastive_loss(z_i, z_v, model.encoder.prototypes, domain, model.tau)
    assert parts["dis"] == pytest.approx(float(dis) / 3, rel=1e-5)
    assert float(total) == pytest.approx(parts["task"] + 0.1 * parts["dis"] + 0.01 * parts["inv"], rel=1e-5)
    model.loss_form = "batch_mean"  # the earlier form: means over all anchors and all pairs of the batch
    _, old = model.loss(graphs)
    all_pairs = invariance_loss(a_i, model.psi_env(z_i, z_v, model.psi_inv), reduction="mean")
    assert old["inv"] == pytest.approx(float(all_pairs), rel=1e-5)
    assert old["inv"] != pytest.approx(parts["inv"], rel=0.1)
    every = disentangled_contrastive_loss(z_i, z_v, model.encoder.prototypes, domain, model.tau, negatives="all",
                                          reduction="mean")
    assert old["dis"] == pytest.approx(float(every), rel=1e-5)


def test_without_d_uses_a_standard_gnn_encoder():
    tasks = [TaskSpec("g", "graph", 2)]
    torch.manual_seed(0)
    model = AutoGFM(6, 8, tasks, lam=0.5, disentangled=False)
    assert isinstance(model.encoder, GNNEncoder) and not hasattr(model.encoder, "prototypes")
    data = []
    for s in range(4):
        g = _graph(7, 12, 6, s)
        g.y = torch.tensor([s % 2])
        data.append(g)
    batch = Batch.from_data_list(data)
    z_i, z_v = model.encode(batch)
    assert z_i is z_v  # one representation serves as z_I and z_V
    _, parts = model.loss({"g": batch})
    assert "dis" not in parts and "inv" in parts  # lam is moot without the disentangled encoder
    # the encoder is the plain stack: GIN layers, mean readout, MLP
    h = batch.x
    for conv in model.encoder.convs:
        h = torch.relu(conv(h, batch.edge_index))
    pooled = torch.stack([h[batch.batch == k].mean(0) for k in range(4)])
    torch.testing.assert_close(z_i, model.encoder.mlp(pooled))


def test_default_architecture_softmax_has_no_temperature():
    model = _model()
    z = torch.randn(3, 8)
    p = model.psi_inv.prototypes.detach()
    expected = torch.softmax(torch.einsum("bd,lod->blo", z, p / p.norm(dim=-1, keepdim=True)), dim=-1)  # Eq. 12
    torch.testing.assert_close(model.psi_inv(z), expected)


def test_task_loss_uses_the_invariant_architecture():
    model = _model().eval()
    data = []
    for s in range(3):
        g = _graph(7, 12, 6, s)
        g.center_index, g.y = torch.tensor([s]), torch.tensor([s % 3])
        data.append(g)
    batch = Batch.from_data_list(data)
    logits, alphas, z_i, _ = model(batch, "n")
    torch.testing.assert_close(alphas, model.psi_inv(z_i))
    torch.testing.assert_close(logits, model.predict(batch, "n", model.psi_inv(z_i)))


def test_unify_features_preserves_gram_matrix_when_rank_fits():
    x = torch.randn(20, 3) @ torch.randn(3, 10)  # rank 3 < 8 columns
    z = unify_features(x, 8)
    assert z.shape == (20, 8)
    scale = (x.double() @ x.double().T).norm() / (z.double() @ z.double().T).norm()
    torch.testing.assert_close((z.double() @ z.double().T) * scale, x.double() @ x.double().T, rtol=1e-4, atol=1e-4)


def test_roc_auc_against_pair_counting():
    rng = np.random.default_rng(0)
    s, y = rng.integers(0, 5, 40).astype(float), rng.integers(0, 2, 40)
    pos, neg = s[y == 1], s[y == 0]
    brute = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    assert roc_auc(s, y) == pytest.approx(brute)


def test_bad_input_raises():
    layer = MixedOpLayer(4)
    g = _graph(6, 10, 4, 0)
    alpha = torch.full((5,), 0.2)
    with pytest.raises(ValueError, match="outside"):
        layer(g.x, g.edge_index + 10, alpha)
    with pytest.raises(ValueError, match="empty graph"):
        layer(torch.zeros(0, 4), torch.zeros(2, 0, dtype=torch.long), alpha)
    with pytest.raises(ValueError, match="features per node"):
        layer(torch.zeros(6, 5), g.edge_index, alpha)
    with pytest.raises(ValueError, match="one per op"):
        layer(g.x, g.edge_index, torch.full((3,), 1 / 3))
    with pytest.raises(ValueError, match="rows"):
        layer(g.x, g.edge_index, torch.full((1, 5), 0.2), torch.tensor([0, 0, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match="unknown op"):
        MixedOpLayer(4, ops=("gcn", "transformer"))
    with pytest.raises(ValueError, match="nodes must lie"):
        noi_subgraph(g, [6])
    with pytest.raises(ValueError, match="hops"):
        noi_subgraph(g, [0], hops=-1)
    with pytest.raises(ValueError, match="at least one"):
        noi_subgraph(g, [])


def test_method_settings_are_one_nested_config_set_by_dotted_keys():
    """AutoGFM's settings and the shared training recipe are AutoGFMConfig (train.py), nested as ``model``: presets
    and overrides reach it by dotted keys (and the models built from it), and a bad value is refused with the
    dotted name."""
    from icml25.core.experiment import ConfigError
    from icml25.papers.autogfm import AutoGFMConfig, make_suite

    exp = repro.EXPERIMENTS[0]
    assert exp.make_config("smoke").model == AutoGFMConfig(hid=8, epochs=1.0, batch_size=8, t_e=0.5)
    assert exp.make_config("quick").model == AutoGFMConfig()
    assert exp.make_config("full").model == AutoGFMConfig(epochs=100.0, hid=128)
    cfg = exp.make_config("smoke", {"model.beta": 0.05, "model.loss_form": "batch_mean"})
    specs = [d.spec for d in make_suite(cfg.n_nodes, cfg.n_graphs, cfg.n_link_targets, seed=0)]
    model = repro._build("autogfm", cfg, specs)
    assert (model.beta, model.loss_form, model.t_e, model.lam) == (0.05, "batch_mean", 0.5, 0.1)
    assert repro._build("no_inv", cfg, specs).beta == 0.0 and repro._build("no_cur", cfg, specs).t_e == 0.0
    with pytest.raises(ConfigError, match=r"SuiteConfig\.model\.batch_size must be >= 2"):
        exp.make_config("quick", {"model.batch_size": 1})
    with pytest.raises(ConfigError, match=r"SuiteConfig\.model\.loss_form must be one of"):
        exp.make_config("quick", {"model.loss_form": "mean"})


def test_smoke_run_values():
    exp = repro.EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    for method in repro.METHODS:
        scores = [m[f"score_{method}_{d}"] for d in repro.DATASETS]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert m[f"mean_{method}"] == pytest.approx(np.mean(scores))
    best_fixed = max(m[f"mean_fixed_{op}"] for op in OPS)
    assert m["autogfm_minus_best_fixed"] == pytest.approx(m["mean_autogfm"] - best_fixed)
    assert m["autogfm_minus_darts"] == pytest.approx(m["mean_autogfm"] - m["mean_darts"])
    for d in repro.DATASETS:
        assert sum(m[f"alpha_autogfm_{d}"]) == pytest.approx(1.0, abs=1e-5)
        winner = int(m[f"best_fixed_op_{d}"])
        assert m[f"score_fixed_{OPS[winner]}_{d}"] == max(m[f"score_fixed_{op}_{d}"] for op in OPS)
    assert 1 <= m["n_distinct_best_fixed_ops"] <= 4
    assert 1 <= m["autogfm_mean_rank"] <= len(repro.METHODS)
    assert m["score_constant_links"] == 0.5 and 0.25 <= m["score_constant_homophilous"] <= 1.0
    assert m["autogfm_minus_constant"] == pytest.approx(m["mean_autogfm"] - m["mean_constant"])


def test_modules_accept_pyg_data_and_batch():
    torch.manual_seed(0)
    enc = DisentangledEncoder(5, 8)
    graphs = [_graph(6, 10, 5, s) for s in range(3)]
    batch = Batch.from_data_list(graphs)
    z_i, z_v = enc(batch)
    z_i2, z_v2 = enc(batch.x, batch.edge_index, batch.batch)
    assert torch.equal(z_i, z_i2) and torch.equal(z_v, z_v2) and z_i.shape == (3, 8)
    torch.testing.assert_close(enc(graphs[1])[0], z_i[1:2], **F32_REORDERED)
    model = _model().eval()
    g = _graph(6, 10, 6, 0)
    g.center_index, g.y = torch.tensor([2]), torch.tensor([1])
    logits, alphas, _, _ = model(g, "n")  # one Data is a batch of one
    assert logits.shape == (1, 3) and alphas.shape == (1, 2, len(OPS))


def test_base_gfm_mixes_every_op_uniformly():
    from icml25.papers.autogfm import MultiTaskGFM

    torch.manual_seed(0)
    model = MultiTaskGFM(4, 8, [TaskSpec("g", "graph", 2)]).eval()
    batch = Batch.from_data_list([_graph(5, 6, 4, s) for s in range(2)])
    logits, alphas = model(batch, "g")
    torch.testing.assert_close(alphas, torch.full((2, len(OPS)), 1 / len(OPS)))
    assert logits.shape == (2, 2)


def test_float64_forward_and_environment_predictor_pair_embeddings():
    model = _model().double().eval()
    data = []
    for s in range(2):
        g = _graph(7, 12, 6, s)
        g.x, g.center_index, g.y = g.x.double(), torch.tensor([0]), torch.tensor([s])
        data.append(g)
    logits, alphas, z_i, z_v = model(Batch.from_data_list(data), "n")
    assert logits.dtype == alphas.dtype == z_i.dtype == torch.float64
    pairs = model.psi_env(z_i, z_v)
    assert pairs.shape == (2, 2, 8)
    torch.testing.assert_close(model.psi_env(z_i, z_v, model.psi_inv), model.psi_inv(pairs.reshape(4, 8)).reshape(
        2, 2, *alphas.shape[1:]))


def test_nan_features_are_rejected():
    layer, g = MixedOpLayer(4), _graph(6, 10, 4, 0)
    x = g.x.clone()
    x[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        layer(x, g.edge_index, torch.full((5,), 0.2))
