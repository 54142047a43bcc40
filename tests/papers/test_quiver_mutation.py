"""Quiver mutation: mutation algebra, known class sizes, canonical forms vs networkx, the Buan-Vatne
criterion against an independent enumeration, GNN invariances, bad input, smoke runs.

Defining elements of the method, each with the test that fails when it is removed or altered:

1. Fomin-Zelevinsky mutation b'_ij = b_ij + sgn(b_ik) max(b_ik b_kj, 0), b'_ik = -b_ik
   (``test_mutation_by_hand``).
2. The data set: whole mutation classes enumerated by BFS up to isomorphism (canonical forms), the paper's
   split (train on 6-10 vertices, test types A, D, A~, D~ on 11) (``test_known_class_sizes``,
   ``test_paper_test_types_are_the_types_defined_on_11_vertices``, ``test_disk_cache_returns_the_enumerated_class``).
3. DirGINE's direction awareness: separate GINE aggregations over incoming and outgoing arrows, mixed
   (``test_direction_matters_only_for_dirgine``, ``test_dirgine_aggregates_along_outgoing_arrows``).
4. Arrow multiplicities b_ij as GINE edge features (``test_arrow_multiplicities_are_edge_features``).
5. The latent study's representation: the sum-pooled node states of the 3rd layer
   (``test_layer_embeddings_are_the_sum_of_that_layers_states``).
6. Masking: the arrows ranked highest by the explainer are removed and the quiver re-classified
   (``test_remove_arrows_by_hand``, ``test_masking_removes_the_highest_ranked_arrow``).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch

from icml25.core.experiment import ConfigError
from icml25.papers.quiver_mutation import (
    QUIVER_TYPES,
    DirGINE,
    DirGINEConfig,
    UndirectedGINE,
    atilde_splits,
    canonical_form,
    check_vatne_partition,
    connected_motif,
    count_features,
    explain,
    explain_pgexplainer,
    graph_embeddings,
    identify_mutation_type,
    is_connecting_vertex,
    is_mutation_type_A,
    make_dataset,
    mutate,
    mutation_class,
    quiver_to_data,
    remove_arrows,
    sample_mutation_class,
    seed_quiver,
    type_class_certificates,
    vatne_type,
)
from icml25.papers.quiver_mutation.repro import (
    EXPERIMENTS,
    PAPER_TEST_TYPES,
    ExplainabilityConfig,
    GeneralisationConfig,
)


def random_quiver(n: int, rng: np.random.Generator, max_mult: int = 2) -> np.ndarray:
    U = np.triu(rng.integers(-max_mult, max_mult + 1, size=(n, n)), 1)
    return U - U.T


def relabel(B: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Vertex perm[i] of the new quiver is vertex i of B."""
    inv = np.argsort(perm)
    return B[np.ix_(inv, inv)]


# ----------------------------------------------------------------------------- mutation
def test_mutation_by_hand():
    B = seed_quiver("A", 3)  # 0 -> 1 -> 2
    expected = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]])  # 1 -> 0, 2 -> 1, 0 -> 2: an oriented 3-cycle
    np.testing.assert_array_equal(mutate(B, 1), expected)
    kronecker = np.array([[0, 2], [-2, 0]])
    np.testing.assert_array_equal(mutate(kronecker, 0), -kronecker)
    # two arrows into k and three out of it: 2 * 3 = 6 new arrows i -> j
    B = np.array([[0, 2, 0], [-2, 0, 3], [0, -3, 0]])
    np.testing.assert_array_equal(mutate(B, 1), [[0, -2, 6], [2, 0, -3], [-6, 3, 0]])


def test_mutation_is_involution_preserves_skew_symmetry_and_commutes_with_relabelling():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 8))
        B = random_quiver(n, rng)
        perm = rng.permutation(n)
        for k in range(n):
            M = mutate(B, k)
            np.testing.assert_array_equal(M, -M.T)
            np.testing.assert_array_equal(mutate(M, k), B)
            np.testing.assert_array_equal(relabel(M, perm), mutate(relabel(B, perm), int(perm[k])))


@pytest.mark.parametrize("B, k, msg", [
    (np.array([[0, 1], [1, 0]]), 0, "skew-symmetric"),
    (np.array([[0, 1], [-1, 0]]), 2, "out of range"),
    (np.array([[0, 1], [-1, 0]]), -1, "out of range"),
    (np.array([[0, 0.5], [-0.5, 0]]), 0, "integer"),
    (np.array([[0, np.nan], [np.nan, 0]]), 0, "NaN"),
    (np.array([0, 1, -1]), 0, "square"),
    (np.zeros((2, 3), dtype=int), 0, "square"),
    (np.zeros((0, 0), dtype=int), 0, "at least one"),
    (np.array([[0, 1], [-1, 0]]), 0.0, "integer vertex"),
    (np.array([["0", "1"], ["-1", "0"]]), 0, "integers"),
])
def test_mutate_bad_input(B, k, msg):
    with pytest.raises(ValueError, match=msg):
        mutate(B, k)


def test_seed_quiver_bad_input():
    for kind, n, split in [("F", 4, None), ("E", 9, None), ("D", 3, None), ("Dtilde", 4, None),
                           ("Etilde", 6, None), ("Atilde", 5, (5, 0)), ("Atilde", 5, (2, 3)), ("A", 4, (3, 1))]:
        with pytest.raises(ValueError):
            seed_quiver(kind, n, split)


# ----------------------------------------------------------------------------- classes
@pytest.mark.parametrize("kind, sizes", [
    ("A", {1: 1, 2: 1, 3: 4, 4: 6, 5: 19, 6: 49, 7: 150}),  # Torkildsen 2008, OEIS A001683(n+3)
    ("D", {4: 6, 5: 26, 6: 80, 7: 246}),  # Buan-Torkildsen 2009, OEIS A159557 (D_4 = 6; D_3 = A_3 = 4)
    ("E", {6: 67}),  # Sage's ClusterQuiver(['E', 6]).mutation_class() (recalled, see docs)
])
def test_known_class_sizes(kind, sizes):
    for n, size in sizes.items():
        assert len(mutation_class(seed_quiver(kind, n))) == size, (kind, n)


def test_atilde_class_sizes_per_split():
    # Bastian-Prellberg-Rubey-Stump (2011), OEIS A189942: rows n = 4, 5, 6 by q = 1, 2, ...
    expected = {4: [5, 4], 5: [14, 12], 6: [42, 36, 22]}
    for n, sizes in expected.items():
        assert [len(mutation_class(seed_quiver("Atilde", n, s))) for s in atilde_splits(n)] == sizes


def test_classes_closed_disjoint_and_bounded():
    by_type = {t: set(type_class_certificates(t, 6)) for t in QUIVER_TYPES}
    for a, b in itertools.combinations(QUIVER_TYPES, 2):
        assert not (by_type[a] & by_type[b]), (a, b)
    quivers, labels = make_dataset(QUIVER_TYPES, (6,))
    for B, y in zip(quivers, labels):
        t = QUIVER_TYPES[y]
        assert np.abs(B).max() <= (1 if t in ("A", "D", "E") else 2)
        for k in range(6):  # closed under mutation
            assert canonical_form(mutate(B, k)) in by_type[t]
    assert max(np.abs(B).max() for B, y in zip(quivers, labels) if QUIVER_TYPES[y] == "Atilde") == 2


def test_canonical_form_invariant_and_agrees_with_networkx():
    rng = np.random.default_rng(1)
    quivers = mutation_class(seed_quiver("D", 5)) + mutation_class(seed_quiver("Atilde", 5, (3, 2)))
    for B in quivers:
        perm = rng.permutation(5)
        assert canonical_form(relabel(B, perm)) == canonical_form(B)
    graphs = []
    for B in quivers:
        g = nx.DiGraph()
        g.add_nodes_from(range(5))
        g.add_weighted_edges_from((int(i), int(j), int(B[i, j])) for i, j in zip(*np.nonzero(B > 0)))
        graphs.append(g)
    em = nx.algorithms.isomorphism.numerical_edge_match("weight", 0)
    for (i, g), (j, h) in itertools.combinations(enumerate(graphs), 2):
        assert not nx.is_isomorphic(g, h, edge_match=em), (i, j)  # the class has no duplicate
    # random quivers with many automorphism ties: equal certificates <=> isomorphic
    rand = [random_quiver(5, rng, 1) for _ in range(60)]
    rand += [relabel(B, rng.permutation(5)) for B in rand[:20]]
    for B, C in itertools.combinations(rand[::3], 2):
        g, h = (nx.DiGraph([(int(i), int(j)) for i, j in zip(*np.nonzero(X > 0))]) for X in (B, C))
        g.add_nodes_from(range(5)), h.add_nodes_from(range(5))
        assert (canonical_form(B) == canonical_form(C)) == nx.is_isomorphic(g, h)


@pytest.mark.parametrize("n", [5, 6])
def test_buan_vatne_matches_bfs_class_from_graph_atlas(n):
    """Independent check: orientations of every connected simple graph on n vertices (networkx atlas)
    that satisfy the criterion are exactly the BFS mutation class of A_n."""
    accepted = set()
    max_edges = 3 * (n - 1) // 2  # a cactus of triangles has at most this many edges
    for g in nx.graph_atlas_g():
        if g.number_of_nodes() != n or not nx.is_connected(g) or g.number_of_edges() > max_edges:
            continue
        edges = list(g.edges())
        for signs in itertools.product((1, -1), repeat=len(edges)):
            B = np.zeros((n, n), dtype=np.int64)
            for (i, j), s in zip(edges, signs):
                B[i, j], B[j, i] = s, -s
            if is_mutation_type_A(B):
                accepted.add(canonical_form(B))
    assert accepted == set(type_class_certificates("A", n))


def test_buan_vatne_rejects_other_types():
    quivers, labels = make_dataset(QUIVER_TYPES, (5, 6))
    said = np.array([is_mutation_type_A(B) for B in quivers])
    np.testing.assert_array_equal(said, labels == 0)
    assert not is_mutation_type_A(np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 0]]))  # disconnected


# ----------------------------------------------------------------------------- GNN
def _model(directed=True):
    torch.manual_seed(0)
    return DirGINE(hidden=16, layers=3, n_classes=6, directed=directed).eval()


def test_gnn_permutation_equivariance_and_invariance():
    rng = np.random.default_rng(2)
    model = _model()
    B = mutation_class(seed_quiver("Dtilde", 6))[7]
    perm = rng.permutation(6)
    d, dp = quiver_to_data(B), quiver_to_data(relabel(B, perm))
    with torch.no_grad():
        h, hp = (model.node_embeddings(x.x, x.edge_index, x.edge_attr) for x in (d, dp))
        torch.testing.assert_close(hp[torch.as_tensor(perm)], h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(dp.x, dp.edge_index, dp.edge_attr), model(d.x, d.edge_index, d.edge_attr),
                                   atol=1e-5, rtol=1e-5)


def test_gnn_batch_isolation():
    model = _model()
    quivers = mutation_class(seed_quiver("E", 6))[:5]
    data = [quiver_to_data(B) for B in quivers]
    with torch.no_grad():
        alone = torch.cat([model(d.x, d.edge_index, d.edge_attr) for d in data])
        b = Batch.from_data_list(data)
        together = model(b.x, b.edge_index, b.edge_attr, b.batch)
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_direction_matters_only_for_dirgine():
    # 0 -> 1 -> 2 and 0 -> 1 <- 2 have the same underlying multigraph
    B1, B2 = seed_quiver("A", 3), np.array([[0, 1, 0], [-1, 0, -1], [0, 1, 0]])
    outs = {}
    for directed in (True, False):
        model = _model(directed)
        with torch.no_grad():
            outs[directed] = [model(d.x, d.edge_index, d.edge_attr) for d in map(quiver_to_data, (B1, B2))]
    torch.testing.assert_close(outs[False][0], outs[False][1])
    assert not torch.allclose(outs[True][0], outs[True][1], atol=1e-4)
    assert isinstance(UndirectedGINE(), DirGINE)


def test_dirgine_aggregates_along_outgoing_arrows():
    """A source vertex hears its out-neighbours: vertex 0 of 0 -> 1 -> 2 and of 0 -> 1 <- 2 gets different states
    (an in-arrow-only network would leave a source's state at its initial value)."""
    B1, B2 = seed_quiver("A", 3), np.array([[0, 1, 0], [-1, 0, -1], [0, 1, 0]])
    model = _model()
    with torch.no_grad():
        h1, h2 = (model.node_embeddings(d.x, d.edge_index, d.edge_attr)[0] for d in map(quiver_to_data, (B1, B2)))
    assert not torch.allclose(h1, h2, atol=1e-4)


def test_gnn_bad_input():
    model = _model()
    d = quiver_to_data(seed_quiver("A", 4))
    with pytest.raises(ValueError, match="outside"):
        model(d.x, d.edge_index + 10, d.edge_attr)
    with pytest.raises(ValueError, match="non-empty"):
        model(torch.ones(0, 1), torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 1))
    with pytest.raises(ValueError, match="features per node"):
        model(torch.ones(4, 3), d.edge_index, d.edge_attr)
    with pytest.raises(ValueError, match="edge_attr"):
        model(d.x, d.edge_index, torch.ones(d.edge_index.size(1), 2))
    with pytest.raises(ValueError, match="skew-symmetric"):
        quiver_to_data(np.array([[0, 1], [0, 0]]))


def test_explain_covers_every_arrow():
    B = mutation_class(seed_quiver("D", 5))[3]
    imp = explain(_model(), B, epochs=20)
    assert set(imp) == {(int(i), int(j)) for i, j in zip(*np.nonzero(B > 0))}
    assert all(0.0 <= v <= 1.0 for v in imp.values())


def test_pgexplainer_covers_every_arrow_and_is_seeded():
    model = _model()
    Bs = [mutation_class(seed_quiver("D", 5))[i] for i in (1, 3, 5)]
    first = explain_pgexplainer(model, Bs, target=1, epochs=2, seed=3)
    again = explain_pgexplainer(model, Bs, target=1, epochs=2, seed=3)
    for B, imp, imp2 in zip(Bs, first, again):
        assert set(imp) == {(int(i), int(j)) for i, j in zip(*np.nonzero(B > 0))}
        assert all(0.0 <= v <= 1.0 for v in imp.values())
        assert imp == pytest.approx(imp2)
    assert all(p.requires_grad for p in model.parameters())  # the model is handed back trainable
    with pytest.raises(ValueError, match="epochs"):
        explain_pgexplainer(model, Bs, epochs=0)
    with pytest.raises(ValueError, match="non-empty"):
        explain_pgexplainer(model, [])
    with pytest.raises(ValueError, match="no arrows"):
        explain_pgexplainer(model, [np.zeros((3, 3), dtype=int)])


def test_layer_embeddings_are_the_sum_of_that_layers_states():
    torch.manual_seed(0)
    model = DirGINE(hidden=8, layers=4).eval()
    Bs = [seed_quiver("D", 6), mutation_class(seed_quiver("A", 5))[2]]
    got = graph_embeddings(model, Bs, layer=3)
    assert got.shape == (2, 8)
    with torch.no_grad():  # recomputed layer by layer, independently of node_embeddings' concatenation
        for B, row in zip(Bs, got):
            d = quiver_to_data(B)
            h = model.encoder(d.x)
            for layer in model.layers[:3]:
                h = layer(h, d.edge_index, d.edge_attr)
            np.testing.assert_allclose(row, h.sum(0).numpy(), rtol=1e-5, atol=1e-5)
    assert graph_embeddings(model, Bs).shape == (2, 32)
    np.testing.assert_allclose(graph_embeddings(model, Bs)[:, 16:24], got, rtol=1e-6)
    for bad in (0, 5, 1.5):
        with pytest.raises(ValueError, match="layer"):
            graph_embeddings(model, Bs, layer=bad)


def test_remove_arrows_by_hand():
    B = seed_quiver("Atilde", 4, split=(2, 2))
    B[0, 2], B[2, 0] = 2, -2  # a double arrow 0 => 2 as a chord
    out = remove_arrows(B, [(0, 2), (0, 1)])
    want = B.copy()
    want[[0, 2, 0, 1], [2, 0, 1, 0]] = 0
    np.testing.assert_array_equal(out, want)
    assert B[0, 2] == 2  # input untouched
    with pytest.raises(ValueError, match="not an arrow"):
        remove_arrows(B, [(1, 0)])  # the arrow goes 0 -> 1
    with pytest.raises(ValueError, match="not an arrow"):
        remove_arrows(B, [(0, 7)])


def test_sampled_quivers_lie_in_the_bfs_class_and_are_distinct():
    rng = np.random.default_rng(0)
    for kind, n in (("D", 7), ("Atilde", 6), ("Dtilde", 7), ("Etilde", 7)):
        truth = set(type_class_certificates(kind, n))
        drawn = sample_mutation_class(kind, n, 40, rng)
        certs = [canonical_form(B) for B in drawn]
        assert len(drawn) == 40 and len(set(certs)) == 40 and set(certs) <= truth
    assert len(sample_mutation_class("A", 4, 50, rng)) == 6  # the whole class (Torkildsen: 6), then it stops
    assert sample_mutation_class("E", 11, 5, rng) == [] and sample_mutation_class("Etilde", 11, 5, rng) == []
    for bad in ({"count": 0}, {"kind": "B"}, {"n": 0}, {"steps": -1}):
        args = {"kind": "A", "n": 5, "count": 3, **bad}
        with pytest.raises(ValueError):
            sample_mutation_class(args.pop("kind"), args.pop("n"), args.pop("count"), rng, **args)


def test_paper_test_types_are_the_types_defined_on_11_vertices():
    defined = []
    for t in QUIVER_TYPES:  # independent of the class tables: can a seed of type t be built on 11 vertices?
        try:
            seed_quiver(t, 11)
        except ValueError:
            continue
        defined.append(t)
    assert tuple(defined) == PAPER_TEST_TYPES == ("A", "D", "Atilde", "Dtilde")
    assert GeneralisationConfig().test_types == PAPER_TEST_TYPES
    full = next(e for e in EXPERIMENTS if e.name == "generalisation").make_config("full")
    assert full.train_sizes == (6, 7, 8, 9, 10) and full.test_size == 11 and full.model.hidden == 32
    assert full.model.layers == 4
    assert full.curve_sizes == tuple(range(12, 21))


def test_new_config_fields_are_validated():
    with pytest.raises(ConfigError, match="curve_sizes"):
        GeneralisationConfig(curve_sizes=(9,))
    with pytest.raises(ConfigError, match="test_types"):
        GeneralisationConfig(test_types=("A", "B"))
    with pytest.raises(ConfigError, match="latent_layer"):
        ExplainabilityConfig(model=DirGINEConfig(layers=2), latent_layer=3)
    with pytest.raises(ConfigError, match="explainer"):
        ExplainabilityConfig(explainer="gradcam")
    assert ExplainabilityConfig().latent_layer == 3 and ExplainabilityConfig().explainer == "pgexplainer"


def test_model_settings_are_one_nested_config_set_by_dotted_keys():
    """DirGINE's settings are DirGINEConfig (models.py), nested as ``model`` in both experiments: presets and
    overrides reach it by dotted keys, and a bad value is refused with the dotted name."""
    gen = next(e for e in EXPERIMENTS if e.name == "generalisation")
    expl = next(e for e in EXPERIMENTS if e.name == "explainability")
    assert gen.make_config("smoke").model == DirGINEConfig(hidden=16, layers=2, epochs=2)
    assert gen.make_config("full").model == DirGINEConfig(epochs=50)
    assert expl.make_config("smoke").model == DirGINEConfig(hidden=8, layers=2, epochs=1)
    cfg = gen.make_config("quick", {"model.lr": 0.01, "model.batch_size": 32})
    assert cfg.model == DirGINEConfig(lr=0.01, batch_size=32)
    with pytest.raises(ConfigError, match=r"model\.lr must be > 0"):
        gen.make_config("smoke", {"model.lr": 0.0})
    with pytest.raises(ConfigError, match=r"model\.hidden"):
        expl.make_config("smoke", {"model.hidden": 0})
    with pytest.raises(ConfigError, match=r"latent_layer must be at most model\.layers=2"):
        expl.make_config("smoke", {"latent_layer": 3})


def test_count_features_by_hand():
    f = count_features(np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]))  # oriented 3-cycle
    assert f[0] == 3 and f[1] == 3 and f[-2] == 1 and f[-1] == 0
    f = count_features(np.array([[0, 1, 1], [-1, 0, 1], [-1, -1, 0]]))  # acyclic triangle
    assert f[-2] == 0 and f[-1] == 1


# ----------------------------------------------------------------------------- Vatne's type-D families
def _arrows(n: int, arrows: list[tuple[int, int]]) -> np.ndarray:
    B = np.zeros((n, n), dtype=np.int64)
    for i, j in arrows:
        B[i, j], B[j, i] = 1, -1
    return B


@pytest.mark.parametrize("n", [5, 6, 7, 8])
def test_vatne_families_partition_the_bfs_class_of_D(n):
    """The four constructed families cover the D_n class exactly, with no quiver in two families."""
    check = check_vatne_partition(n)
    assert check["missing"] == check["extra"] == check["overlaps"] == 0
    assert sum(check[f"type_{t}"] for t in (1, 2, 3, 4)) == check["class_size"]


def test_vatne_on_four_vertices_has_the_two_known_coincidences():
    check = check_vatne_partition(4)
    assert check["class_size"] == 6 and check["missing"] == check["extra"] == 0 and check["overlaps"] == 2


def test_vatne_type_by_hand_and_relabelling_invariant():
    rng = np.random.default_rng(1)
    pendant = [(0, 4), (4, 5)]  # a path glued at vertex 0 (c')
    by_hand = {
        1: seed_quiver("D", 6),  # the Dynkin tree: two leaves on the fork vertex
        2: _arrows(6, [(1, 0), (0, 2), (2, 1), (0, 3), (3, 1)] + pendant),  # two 3-cycles sharing 1 -> 0
        3: _arrows(6, [(0, 2), (2, 1), (1, 3), (3, 0)] + pendant),  # oriented 4-cycle, piece at a corner
        4: _arrows(6, [(i, (i + 1) % 6) for i in range(6)]),  # oriented 6-cycle, no spikes
    }
    for t, B in by_hand.items():
        assert vatne_type(B) == t
        perm = rng.permutation(6)
        assert vatne_type(relabel(B, perm)) == t
    # a spike on the central 3-cycle, with a path glued at the spike vertex: Type IV
    assert vatne_type(_arrows(6, [(0, 1), (1, 2), (2, 0), (1, 3), (3, 0), (3, 4), (4, 5)])) == 4


def test_vatne_type_bad_input():
    with pytest.raises(ValueError, match="not of mutation type D"):
        vatne_type(seed_quiver("A", 5))
    with pytest.raises(ValueError, match="n >= 4"):
        vatne_type(seed_quiver("A", 3))
    with pytest.raises(ValueError, match="skew-symmetric"):
        vatne_type(np.ones((5, 5), dtype=int))


def test_connecting_vertices():
    tri = _arrows(4, [(0, 1), (1, 2), (2, 0), (2, 3)])  # a 3-cycle with a tail at 2
    assert [is_connecting_vertex(tri, v) for v in range(4)] == [True, True, False, True]
    assert not is_connecting_vertex(seed_quiver("A", 3), 1)  # middle of a path: two non-adjacent neighbours


# ----------------------------------------------------------------------------- explainer motifs
def test_connected_motif_follows_importance_and_stays_connected():
    B = seed_quiver("A", 6)  # 0 -> 1 -> ... -> 5
    importance = {(0, 1): 0.1, (1, 2): 0.2, (2, 3): 0.9, (3, 4): 0.5, (4, 5): 0.95}
    np.testing.assert_array_equal(connected_motif(B, 1, importance), [4, 5])
    np.testing.assert_array_equal(connected_motif(B, 2, importance), [3, 4, 5])  # (3, 4) is the best neighbour
    np.testing.assert_array_equal(connected_motif(B, 3, importance), [2, 3, 4, 5])
    np.testing.assert_array_equal(connected_motif(B, 99, importance), np.arange(6))  # runs out of arrows
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = connected_motif(seed_quiver("Dtilde", 8), 3, rng=rng)
        assert v.size == 4 and nx.is_connected(nx.from_numpy_array(np.abs(seed_quiver("Dtilde", 8)[np.ix_(v, v)])))


def test_connected_motif_bad_input():
    B = seed_quiver("A", 3)
    with pytest.raises(ValueError, match="positive"):
        connected_motif(B, 0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs rng"):
        connected_motif(B, 2)
    with pytest.raises(ValueError, match="no score"):
        connected_motif(B, 2, {(0, 1): 1.0})
    with pytest.raises(ValueError, match="no arrows"):
        connected_motif(np.zeros((3, 3), dtype=int), 2, rng=np.random.default_rng(0))


def test_identify_mutation_type():
    assert identify_mutation_type(mutation_class(seed_quiver("A", 5))[7]) == "A"
    assert identify_mutation_type(mutation_class(seed_quiver("D", 5))[9]) == "D"
    assert identify_mutation_type(mutation_class(seed_quiver("Dtilde", 6))[5]) == "Dtilde"
    assert identify_mutation_type(np.array([[0, 2], [-2, 0]])) == "Atilde"  # the Kronecker quiver
    assert identify_mutation_type(np.array([[0, 3], [-3, 0]])) is None  # mutation-infinite
    assert identify_mutation_type(seed_quiver("Etilde", 7)) == "Etilde"


# ----------------------------------------------------------------------------- smoke runs
def test_smoke_generalisation():
    exp = next(e for e in EXPERIMENTS if e.name == "generalisation")
    m = exp.run(exp.make_config("smoke"), seed=0)
    # caps of 60 (train, n = 5, 6; no E~ there) and 40 (test, n = 7: all six types, 4 of them the paper's)
    assert m["n_train"] == 5 * 60 - 10 and m["n_test_all_types"] == 240  # D~ has 10 + 40 = 50 < 60 quivers
    assert m["n_test"] == 4 * 40 and m["majority_acc"] == pytest.approx(1 / 4)
    assert 0.0 <= m["acc_dirgine_n8"] <= 1.0 and m["curve_min_acc"] == m["acc_dirgine_n8"]
    assert m["acc_dirgine"] <= m["acc_dirgine_best_epoch"] + 1e-12  # the last epoch is one of the epochs
    for k in ("dirgine", "undirected_gine", "counts_logreg", "spectrum_mlp"):
        assert 0.0 <= m[f"acc_{k}"] <= 1.0
    assert m["dirgine_final_train_loss"] < np.log(6)  # it learned something in two epochs


def test_smoke_explainability():
    exp = next(e for e in EXPERIMENTS if e.name == "explainability")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["n_explained"] == 3 and m["n_masked"] <= 4
    assert sum(m[f"mask_to_{t}"] for t in QUIVER_TYPES) == pytest.approx(1.0)
    assert m["mask_flip_rate"] == pytest.approx(1.0 - m["mask_to_D"])
    for k in ("vatne_ari_trained", "vatne_ari_untrained", "vatne_ari_counts"):
        assert -1.0 <= m[k] <= 1.0
    for k in ("explainer_non_a_rate", "random_non_a_rate", "vatne_probe_trained"):
        assert 0.0 <= m[k] <= 1.0
    assert 0 < m["motif0_share"] <= 1 and len(m["motif0_matrix"]) in (9, 16, 25)


def test_smoke_oracle():
    exp = next(e for e in EXPERIMENTS if e.name == "oracle")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["oracle_agreement"] == 1.0 and m["n_quivers"] == 21 + 81 + 336


_BLOCKED_IMPORT = textwrap.dedent('''
    import sys

    class BlockTorch:
        """Meta-path finder that makes torch and torch_geometric look uninstalled."""

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torch_geometric"):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, BlockTorch())
    from icml25.papers.quiver_mutation import (count_features, is_mutation_type_A, mutate, mutation_class,
                                               seed_quiver, vatne_type)

    B = seed_quiver("A", 4)
    assert mutate(mutate(B, 1), 1).tolist() == B.tolist()
    assert len(mutation_class(B)) == 6 and is_mutation_type_A(mutate(B, 2))
    assert vatne_type(seed_quiver("D", 5)) in (1, 2, 3, 4) and count_features(B).size > 0
    assert not any(m.split(".")[0] in ("torch", "torch_geometric") for m in sys.modules)
    try:
        from icml25.papers.quiver_mutation import DirGINE  # noqa: F401  (needs the blocked packages)
    except ImportError as exc:
        print("lazy:", exc)
    else:
        raise AssertionError("DirGINE imported although torch_geometric is blocked")
''')


def test_numpy_api_imports_without_torch_or_pyg():
    """mutate & co. need NumPy only: a fresh interpreter where torch / torch_geometric cannot be imported."""
    done = subprocess.run([sys.executable, "-c", _BLOCKED_IMPORT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "lazy:" in done.stdout and "blocked" in done.stdout


def test_gnn_accepts_pyg_data_and_batch():
    """A Data / Batch passed as x gives the same logits as its tensors (num_graphs taken from the Batch)."""
    torch.manual_seed(0)
    model = DirGINE(hidden=8, layers=2).eval()
    graphs = [quiver_to_data(seed_quiver("D", 5)), quiver_to_data(seed_quiver("A", 3))]
    b = Batch.from_data_list(graphs)
    with torch.no_grad():
        torch.testing.assert_close(model(b), model(b.x, b.edge_index, b.edge_attr, b.batch), rtol=0, atol=0)
        one = graphs[0]
        torch.testing.assert_close(model(one), model(one.x, one.edge_index, one.edge_attr), rtol=0, atol=0)
        assert model(b).shape == (2, len(QUIVER_TYPES))


def test_gnn_runs_in_float64():
    torch.manual_seed(0)
    model = DirGINE(hidden=8, layers=2).double().eval()
    d = quiver_to_data(seed_quiver("Dtilde", 6))
    with torch.no_grad():
        assert model(d.x.double(), d.edge_index, d.edge_attr.double()).dtype == torch.float64


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 7), st.integers(0, 10**6), st.integers(-3, 10))
def test_mutate_is_an_involution_and_rejects_other_indices(n, seed, k):
    """Property: at every vertex mutation is an involution; any other index is a ValueError."""
    B = random_quiver(n, np.random.default_rng(seed))
    if 0 <= k < n:
        np.testing.assert_array_equal(mutate(mutate(B, k), k), B)
    else:
        with pytest.raises(ValueError, match="out of range"):
            mutate(B, k)


def test_arrow_multiplicities_are_edge_features():
    """A double arrow differs from a single one for DirGINE and for the undirected GINE."""
    B1 = seed_quiver("A", 3)
    B2 = B1.copy()
    B2[0, 1], B2[1, 0] = 2, -2
    d1, d2 = quiver_to_data(B1), quiver_to_data(B2)
    assert sorted(d2.edge_attr.flatten().tolist()) == [1.0, 2.0]
    for directed in (True, False):
        model = _model(directed)
        with torch.no_grad():
            assert not torch.allclose(model(d1.x, d1.edge_index, d1.edge_attr),
                                      model(d2.x, d2.edge_index, d2.edge_attr), atol=1e-4)


def test_disk_cache_returns_the_enumerated_class(tmp_path, monkeypatch):
    from icml25.papers.quiver_mutation import quivers

    monkeypatch.setenv("ICML25_CACHE_DIR", str(tmp_path))
    fresh = quivers._enumerate_type_class("A", 9)
    assert len(fresh) == 1424  # the class of A_9 up to isomorphism
    path = quivers._disk_cache_path("A", 9)
    assert path is not None and tmp_path in path.parents
    uncached = quivers.type_class_certificates.__wrapped__  # past the in-memory cache
    assert uncached("A", 9) == fresh and path.exists()
    monkeypatch.setattr(quivers, "_enumerate_type_class", lambda *a: pytest.fail("should read the disk cache"))
    assert uncached("A", 9) == fresh  # read back, same order
    monkeypatch.undo()
    monkeypatch.setenv("ICML25_CACHE_DIR", str(tmp_path))
    path.write_bytes(b"not a numpy file")
    assert uncached("A", 9) == fresh  # an unreadable cache is rebuilt
    assert quivers._disk_cache_path("A", 8) is None  # small classes stay in memory only
    monkeypatch.setenv("ICML25_CACHE_DIR", "off")
    assert quivers._disk_cache_path("A", 11) is None


def test_masking_removes_the_highest_ranked_arrow(monkeypatch):
    """The masking study removes the arrow with the largest mask value (a stub explainer marks one arrow)."""
    import dataclasses

    from icml25.papers.quiver_mutation import repro

    removed: list = []
    real_remove = repro.remove_arrows

    def stub_masks(model, quivers, target, cfg, seed, rng):
        out = []
        for B in quivers:
            arrows = [(int(i), int(j)) for i, j in zip(*np.nonzero(B > 0))]
            out.append({a: (1.0 if k == len(arrows) - 1 else 0.1 * k / len(arrows)) for k, a in enumerate(arrows)})
        return out

    def spy_remove(B, arrows):
        removed.append((B, list(arrows)))
        return real_remove(B, arrows)

    monkeypatch.setattr(repro, "_edge_masks", stub_masks)
    monkeypatch.setattr(repro, "remove_arrows", spy_remove)
    exp = next(e for e in EXPERIMENTS if e.name == "explainability")
    cfg = dataclasses.replace(exp.make_config("smoke"), n_explain=0)
    m = exp.run(cfg, seed=0)
    top = removed[: int(m["n_masked"])]  # the explainer's removals come first, then the random arrows
    assert top
    for B, arrows in top:
        assert arrows == [[(int(i), int(j)) for i, j in zip(*np.nonzero(B > 0))][-1]]


def test_explainability_training_set_is_capped_per_type():
    import dataclasses

    exp = next(e for e in EXPERIMENTS if e.name == "explainability")
    cfg = dataclasses.replace(exp.make_config("smoke"), max_train_per_class=20, n_mask=0, n_explain=0)
    m = exp.run(cfg, seed=0)
    assert m["n_train"] == 5 * 20  # A, D, E, A~, D~ on 5-6 vertices, each with more than 20 quivers
    with pytest.raises(ConfigError, match="max_train_per_class"):
        dataclasses.replace(cfg, max_train_per_class=-1).validate()
