"""AutoGFM: the paper's node-level data sets read from GFT's processed folder (``data.load_paper_graph`` /
``load_paper_suite``), the encoder-agnostic writer of that file (``data.write_processed_graph``) and the
``paper_data`` experiment (``data_root``, ``datasets``, ``max_train``, ``max_test``).

The folder is written into ``tmp_path`` by ``tests/paper_files/autogfm.py`` in GFT's layout
(``<root>/{Cora,Pubmed,wikics,arxiv}/processed/geometric_data_processed.pt`` = ``torch.save((Data, None))`` with
``node_text_feat``, ``edge_index``, ``y`` and each data set's own split masks); expected values come from the
writer's own tensors and splits.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from icml25.common.checks import ConfigError
from icml25.papers.autogfm.data import (
    OFA_NODE_TEXT_PREFIX,
    PAPER_DATASETS,
    encode_texts,
    graph_splits,
    load_paper_graph,
    load_paper_suite,
    paper_node_task,
    processed_path,
    read_processed_graph,
    write_processed_graph,
)
from icml25.papers.autogfm.repro import CLAIMS, EXPERIMENTS, PaperDataConfig, SuiteConfig
from paper_files.autogfm import DIM, FOLDERS, SHAPES, graph_with_masks, write_gft_folder

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _exp(name: str = "paper_data"):
    return next(e for e in EXPERIMENTS if e.name == name)


def _ids(d, part: str) -> np.ndarray:
    """Original node ids of the NOI graphs of one split part (each graph's centre node)."""
    return np.array([int(d.graphs[i].node_id[d.graphs[i].center_index[0]]) for i in d.splits[part]])


# ----------------------------------------------------------------------------- the files
def test_layout_is_gfts():
    assert PAPER_DATASETS == FOLDERS
    assert processed_path("/r", "wikics").as_posix() == "/r/wikics/processed/geometric_data_processed.pt"
    assert processed_path("/r", "cora").as_posix() == "/r/Cora/processed/geometric_data_processed.pt"
    with pytest.raises(ValueError, match="unknown data set 'chemhiv'"):
        processed_path("/r", "chemhiv")


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_data_set_is_read_as_written(tmp_path, name):
    written = write_gft_folder(tmp_path)
    data, splits = written[name]
    graph, got = load_paper_graph(tmp_path, name)
    n, c, k = SHAPES[name]
    assert graph.num_nodes == n and graph.x.dtype == torch.float32 and graph.x.shape == (n, DIM)
    assert torch.equal(graph.x, data.node_text_feat)  # the encoded texts, not the bag-of-words x
    assert torch.equal(graph.y, data.y.reshape(-1)) and graph.y.shape == (n,)  # arxiv's (N, 1) flattened
    assert torch.equal(graph.edge_index, to_undirected(data.edge_index, num_nodes=n))
    assert graph.edge_index.size(1) == 2 * data.edge_index.size(1)  # one direction per edge in the file
    assert len(got) == k
    for s, w in zip(got, splits):
        for part in ("train", "val", "test"):
            np.testing.assert_array_equal(s[part], w[part])
    if name == "wikics":  # 20 training splits, one test mask
        assert all(np.array_equal(s["test"], got[0]["test"]) for s in got)
        assert len({tuple(s["train"]) for s in got}) > 1


def test_a_bare_data_and_index_masks_are_accepted(tmp_path):
    data, splits = graph_with_masks("arxiv")
    data.train_mask = torch.as_tensor(splits[0]["train"])  # an index list instead of a mask
    torch.save(data, tmp_path / "bare.pt")
    back = read_processed_graph(tmp_path / "bare.pt")
    assert torch.equal(back.node_text_feat, data.node_text_feat)
    np.testing.assert_array_equal(graph_splits(back)[0]["train"], splits[0]["train"])


def test_foreign_files_raise(tmp_path):
    torch.save({"x": torch.zeros(2)}, tmp_path / "dict.pt")
    with pytest.raises(ValueError, match="holds dict"):
        read_processed_graph(tmp_path / "dict.pt")
    torch.save((np.random.default_rng(0), None), tmp_path / "pickle.pt")  # a global weights_only refuses
    with pytest.raises(ValueError, match="weights_only=True"):
        read_processed_graph(tmp_path / "pickle.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="not a processed PyG graph"):
        read_processed_graph(tmp_path / "junk.pt")


@pytest.mark.parametrize("drop, match", [("node_text_feat", "node_text_feat"), ("y", "'y'"),
                                         ("test_masks", "test_masks nor test_mask")])
def test_missing_attributes_raise_naming_them(tmp_path, drop, match):
    write_gft_folder(tmp_path, names=("cora",))
    path = processed_path(tmp_path, "cora")
    data, _ = torch.load(path, weights_only=False)
    del data[drop]
    torch.save((data, None), path)
    with pytest.raises(ValueError, match=match):
        load_paper_graph(tmp_path, "cora")


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_missing_file_raises_one_error_naming_it(tmp_path, name):
    write_gft_folder(tmp_path)
    path = processed_path(tmp_path, name)
    path.unlink()
    with pytest.raises(FileNotFoundError, match=f"{FOLDERS[name]}/processed/geometric_data_processed.pt") as err:
        load_paper_suite(tmp_path, list(SHAPES), 2, 100, 100, seed=0)
    assert "\n" not in str(err.value) and "expected GFT's processed layout" in str(err.value)
    with pytest.raises(FileNotFoundError, match="missing data folder"):
        load_paper_suite(tmp_path / "nowhere", ["cora", "pubmed"], 2, 100, 100, seed=0)
    others = [m for m in SHAPES if m != name][:2]
    assert len(load_paper_suite(tmp_path, others, 1, 4, 4, seed=0)) == 2  # only the named files are needed


# ----------------------------------------------------------------------------- NOI datasets
def test_noi_datasets_use_the_predefined_split_of_the_seed_and_cap_it(tmp_path):
    written = write_gft_folder(tmp_path)
    for seed in (0, 3, 13):
        suite = load_paper_suite(tmp_path, list(SHAPES), 2, 100, 100, seed=seed)
        assert [d.spec.name for d in suite] == list(SHAPES)
        for d in suite:
            n, c, k = SHAPES[d.spec.name]
            want = written[d.spec.name][1][seed % k]
            assert d.spec.level == "node" and d.spec.n_classes == c
            for part in ("train", "val", "test"):  # all under the cap: whole, in id order
                np.testing.assert_array_equal(_ids(d, part), want[part])
            graph, _ = load_paper_graph(tmp_path, d.spec.name)
            nbrs = {v: set() for v in range(n)}
            for u, v in graph.edge_index.T.tolist():
                nbrs[u].add(v)
            for i in (0, int(d.splits["test"][-1])):
                g = d.graphs[i]
                v = int(g.node_id[g.center_index[0]])
                assert torch.equal(g.x[g.center_index[0]], graph.x[v]) and int(g.y) == int(graph.y[v])
                two_hop = {v} | nbrs[v] | {w for u in nbrs[v] for w in nbrs[u]}
                assert set(g.node_id.tolist()) == two_hop and torch.equal(g.x, graph.x[g.node_id])
    tests = []
    for seed in range(4):
        suite = load_paper_suite(tmp_path, ["cora", "arxiv"], 2, 3, 5, seed=seed)
        for d in suite:
            want = written[d.spec.name][1][seed % SHAPES[d.spec.name][2]]
            train, val, test = (_ids(d, p) for p in ("train", "val", "test"))
            assert train.size == 3 and test.size == 5 and want["train"].size > 3 and want["test"].size > 5
            assert set(train) <= set(want["train"]) and set(test) <= set(want["test"])
            np.testing.assert_array_equal(val, want["val"])  # at or under the cap: whole
            assert np.all(np.diff(test) > 0)
        tests.append(tuple(_ids(suite[1], "test")))
    assert len(set(tests)) > 1  # seeded subsets of arxiv's one split differ
    again = load_paper_suite(tmp_path, ["cora", "arxiv"], 2, 3, 5, seed=3)
    assert tuple(_ids(again[1], "test")) == tests[3]


def test_paper_node_task_needs_training_and_test_nodes():
    graph = Data(x=torch.zeros(4, 2), edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.tensor([0, 1, 0, 1]))
    split = {"train": np.array([0]), "val": np.array([], dtype=int), "test": np.array([2, 3])}
    with pytest.raises(ValueError, match="cora: the split needs >= 2 training"):
        paper_node_task("cora", graph, split, 1, 10, 10, np.random.default_rng(0))


def test_data_sets_of_different_widths_raise(tmp_path):
    write_gft_folder(tmp_path, names=("cora", "pubmed"))
    path = processed_path(tmp_path, "pubmed")
    data, _ = torch.load(path, weights_only=False)
    data.node_text_feat = data.node_text_feat[:, :5]
    torch.save((data, None), path)
    with pytest.raises(ValueError, match=r"widths differ \(\[5, 24\]\)"):
        load_paper_suite(tmp_path, ["cora", "pubmed"], 1, 10, 10, seed=0)


# ----------------------------------------------------------------------------- the text encoder (duck-typed)
class StubEncoder:
    """sentence-transformers' ``encode`` signature; the vector of a text is (length, count of 'a', first char)."""

    def __init__(self, as_tensor: bool = False):
        self.calls, self.as_tensor = [], as_tensor

    def encode(self, sentences, batch_size=32, **kwargs):
        self.calls.append((list(sentences), batch_size))
        out = np.array([[len(s), s.count("a"), ord(s[0])] for s in sentences], dtype=np.float64)
        return torch.from_numpy(out) if self.as_tensor else out


@pytest.mark.parametrize("as_tensor", [False, True])
def test_write_processed_graph_encodes_ofas_raw_texts_with_any_encoder(tmp_path, as_tensor):
    raw, splits = graph_with_masks("cora")  # OFA's raw cora.pt: a Data with raw_texts, masks, bag-of-words x
    del raw.node_text_feat
    torch.save(raw, tmp_path / "cora.pt")
    enc = StubEncoder(as_tensor)
    path = write_processed_graph(tmp_path / "cora.pt", tmp_path / "gft", "cora", enc, batch_size=7)
    assert path == tmp_path / "gft" / "Cora" / "processed" / "geometric_data_processed.pt"
    texts = [OFA_NODE_TEXT_PREFIX + t for t in raw.raw_texts]
    assert enc.calls == [(texts, 7)]
    graph, got = load_paper_graph(tmp_path / "gft", "cora")
    want = torch.tensor([[len(t), t.count("a"), ord(t[0])] for t in texts], dtype=torch.float32)
    assert torch.equal(graph.x, want)
    assert torch.equal(graph.y, raw.y)
    assert len(got) == 10 and all(np.array_equal(s["train"], w["train"]) for s, w in zip(got, splits))
    with pytest.raises(FileNotFoundError, match="raw single-graph file"):
        write_processed_graph(tmp_path / "nowhere.pt", tmp_path / "gft", "cora", enc)


def test_encode_texts_checks_the_encoders_output():
    class Bad:
        def encode(self, sentences, batch_size=32):
            return np.zeros(len(sentences))

    with pytest.raises(ValueError, match=r"expected \(n, d\)"):
        encode_texts(["a", "b"], Bad())
    with pytest.raises(ValueError, match="must not be empty"):
        encode_texts([], StubEncoder())
    assert encode_texts(["ab"], StubEncoder()).tolist() == [[2.0, 1.0, 97.0]]


# ----------------------------------------------------------------------------- the experiment
def test_paper_data_experiment_holds_the_data_setting_and_the_stand_in_does_not(tmp_path):
    exp = _exp()
    assert exp.config is PaperDataConfig and issubclass(PaperDataConfig, SuiteConfig)
    assert exp.data_setting == "data_root" and exp.missing_data(exp.make_config("smoke"))
    assert not exp.missing_data(exp.make_config("smoke", {"data_root": str(tmp_path)}))
    stand_in = _exp("suite")
    assert not stand_in.data_setting
    assert not any(hasattr(SuiteConfig(), f) for f in ("data_root", "datasets", "max_train", "max_test"))
    assert "paper_data" in stand_in.full_requirements and "data_root=" in exp.full_requirements
    assert exp.fidelity_of("smoke").level == "mechanism"
    assert exp.fidelity_of("quick").level == exp.fidelity_of("full").level == "reduced"
    assert exp.seeds == stand_in.seeds
    assert exp.make_config("quick").datasets == ("cora", "pubmed", "wikics", "arxiv")


def test_paper_data_config_errors_name_the_field(tmp_path):
    exp = _exp()
    with pytest.raises(ConfigError, match="data_root"):
        exp.make_config("smoke", {"data_root": str(tmp_path / "nowhere")})
    for bad in (("cora", "chemhiv"), ("cora",), ("cora", "cora")):
        with pytest.raises(ConfigError, match="datasets"):
            exp.make_config("smoke", {"data_root": str(tmp_path), "datasets": bad})
    for name, bad in (("max_train", 1), ("max_test", 0)):
        with pytest.raises(ConfigError, match=name):
            exp.make_config("smoke", {"data_root": str(tmp_path), name: bad})


def test_paper_data_smoke_runs_end_to_end_on_the_writers_folder(tmp_path):
    write_gft_folder(tmp_path)
    exp = _exp()
    cfg = exp.make_config("smoke", {"data_root": str(tmp_path)})
    m = exp.run(cfg, seed=0)
    suite = load_paper_suite(tmp_path, cfg.datasets, cfg.hops, cfg.max_train, cfg.max_test, seed=0)
    constants = []
    for d in suite:
        name = d.spec.name
        y = np.array([int(d.graphs[i].y) for i in d.splits["test"]])
        assert y.size == m[f"test_nodes_{name}"] == 16  # every fixture test part is capped at smoke's 16
        assert m[f"train_nodes_{name}"] == 2 * SHAPES[name][1]
        constants.append(np.bincount(y).max() / y.size)
        assert m[f"score_constant_{name}"] == pytest.approx(constants[-1], abs=1e-12)
        assert (m[f"score_autogfm_{name}"] * 16) == pytest.approx(round(m[f"score_autogfm_{name}"] * 16), abs=1e-9)
    assert m["mean_constant"] == pytest.approx(np.mean(constants), abs=1e-12)
    assert m["autogfm_minus_constant"] == pytest.approx(m["mean_autogfm"] - m["mean_constant"], abs=1e-12)
    fixed = np.array([[m[f"score_fixed_{op}_{n}"] for n in cfg.datasets]
                      for op in ("gcn", "gat", "gin", "sage", "graphconv")])
    assert m["autogfm_minus_best_fixed"] == pytest.approx(m["mean_autogfm"] - fixed.mean(1).max(), abs=1e-12)
    assert m["n_distinct_best_fixed_ops"] == len(set(fixed.argmax(0).tolist()))
    assert len(m["alpha_autogfm_arxiv"]) == 5 and sum(m["alpha_autogfm_arxiv"]) == pytest.approx(1.0)
    for c in CLAIMS:
        if c.experiment == "paper_data":
            assert np.isfinite(m[c.metric]), c.id
    assert exp.run(cfg, seed=0)["mean_autogfm"] == m["mean_autogfm"]  # seeded


def test_paper_data_claims_are_twins_of_the_stand_ins():
    by_id = {c.id: c for c in CLAIMS}
    stand_in = [c for c in CLAIMS if c.experiment == "suite"]
    assert {c.id for c in CLAIMS if c.experiment == "paper_data"} == {f"paper_data_{c.id}" for c in stand_in}
    for old in stand_in:
        new = by_id[f"paper_data_{old.id}"]
        assert (new.kind, new.metric, new.op, new.threshold, new.aggregate, new.resolution, new.source,
                new.fair_at, new.paper_value) == (old.kind, old.metric, old.op, old.threshold, old.aggregate,
                                                  old.resolution, old.source, old.fair_at, old.paper_value), new.id
        assert tuple(new.requires) == tuple(f"paper_data_{r}" for r in old.requires), new.id
        assert all(n in new.statement for n in ("Cora", "PubMed", "WikiCS", "Arxiv")), new.id
        if old.resolution_reason:
            assert new.resolution_reason.startswith(f"as {old.id}"), new.id


def test_paper_data_figure_has_its_own_file(tmp_path):
    pytest.importorskip("matplotlib")
    exp = _exp()
    cfg = exp.make_config("smoke", {"data_root": str(tmp_path), "datasets": ("cora", "arxiv")})
    methods = [f"fixed_{op}" for op in ("gcn", "gat", "gin", "sage", "graphconv")] + [
        "darts", "autogfm", "no_dis", "no_inv", "no_cur"]
    per_seed = [{**{f"mean_{k}": 0.6 + 0.01 * i for k in methods},
                 **{f"alpha_autogfm_{d}": [0.2] * 5 for d in ("cora", "arxiv")}} for i in range(2)]
    paths = exp.figures(per_seed, cfg, tmp_path)
    assert [p.name for p in paths] == ["autogfm_paper_data.png"] and paths[0].is_file()
