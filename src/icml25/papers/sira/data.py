"""Synthetic language with known semantics: concepts, synonyms and a sentence grammar.

Every word belongs to exactly one *concept*; a concept has 1-4 surface words
(synonyms). A text's meaning is its concept sequence, so semantic preservation of a
rewrite is measured exactly. Function slots (determiners, prepositions, punctuation)
are nearly deterministic (low entropy); content slots (nouns, verbs, adjectives...)
offer many concepts times several synonyms (high entropy).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np


def check_token_ids(ids, vocab_size: int | None, name: str = "token_ids") -> None:
    """Raise unless ``ids`` holds integer token ids in ``[0, vocab_size)``.

    Integer NumPy dtypes and Python ints are accepted (floats or booleans are a ``TypeError``,
    since ``np.asarray(..., dtype=np.int64)`` would silently truncate them); negative ids
    (which NumPy indexing would wrap around) or ids ``>= vocab_size`` are a ``ValueError``.
    ``vocab_size=None`` checks only the type and the sign. Empty input passes.
    """
    a = np.asarray(ids)
    if a.size == 0:
        return
    if a.dtype.kind not in "iu" and not (
            a.dtype.kind == "O" and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in a.flat)):
        raise TypeError(f"{name} must be integer token ids, got dtype {a.dtype}")
    lo, hi = a.min(), a.max()
    if lo < 0 or (vocab_size is not None and hi >= vocab_size):
        bound = f"[0, {vocab_size}) (vocab_size={vocab_size})" if vocab_size is not None else ">= 0"
        raise ValueError(f"{name} must be token ids in {bound}, got range [{lo}, {hi}]")


# category -> list of concepts, each a tuple of synonyms (first = most frequent).
CATEGORIES: dict[str, list[tuple[str, ...]]] = {
    "NOUN": [("dog", "hound", "pup"), ("cat", "kitten", "feline"), ("man", "guy", "gentleman"),
             ("woman", "lady"), ("child", "kid", "youngster"), ("teacher", "tutor", "instructor"),
             ("doctor", "physician", "medic"), ("farmer", "grower"), ("bird", "songbird"),
             ("car", "automobile", "vehicle"), ("house", "home", "dwelling"), ("book", "volume", "tome"),
             ("ball", "sphere"), ("letter", "note", "message"), ("boat", "vessel", "ship")],
    "ADJ": [("big", "large", "huge"), ("small", "little", "tiny"), ("happy", "glad", "cheerful"),
            ("old", "aged", "elderly"), ("quick", "fast", "rapid", "swift"), ("quiet", "silent", "calm"),
            ("bright", "shiny", "vivid"), ("strange", "odd", "weird", "peculiar"), ("red", "crimson", "scarlet"),
            ("clever", "smart", "wise")],
    "VERB": [("saw", "noticed", "spotted", "observed"), ("found", "discovered", "located"),
             ("liked", "enjoyed", "loved"), ("chased", "pursued", "followed"), ("helped", "assisted", "aided"),
             ("carried", "held", "bore"), ("built", "made", "constructed"), ("bought", "purchased", "acquired"),
             ("painted", "colored", "decorated"), ("visited", "toured")],
    "PLACE": [("park", "garden", "meadow"), ("city", "town"), ("market", "bazaar", "shop"),
              ("river", "stream", "creek"), ("school", "academy"), ("forest", "woods"),
              ("beach", "shore", "coast"), ("station", "depot", "terminal")],
    "ADV": [("slowly", "gradually", "leisurely"), ("quickly", "rapidly", "hastily"),
            ("happily", "gladly", "joyfully"), ("often", "frequently", "regularly")],
    "TIME": [("yesterday", "recently", "lately"), ("later", "afterwards", "subsequently")],
    "DET": [("the", "a")],
    "PREP": [("in", "at", "near")],
    "END": [(".",)],
    "COMMA": [(",",)],
}

# Sentence templates (sequences of categories) and their probabilities.
TEMPLATES: list[tuple[str, ...]] = [
    ("DET", "ADJ", "NOUN", "VERB", "DET", "ADJ", "NOUN", "PREP", "DET", "PLACE", "END"),
    ("DET", "NOUN", "VERB", "DET", "NOUN", "ADV", "END"),
    ("TIME", "COMMA", "DET", "NOUN", "VERB", "DET", "ADJ", "NOUN", "END"),
    ("DET", "ADJ", "NOUN", "ADV", "VERB", "DET", "PLACE", "END"),
]
TEMPLATE_PROBS = (0.35, 0.25, 0.2, 0.2)


def _zipf(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return w / w.sum()


@dataclass(frozen=True)
class Lexicon:
    """Vocabulary with its concept structure.

    Attributes:
        words: surface words, index = token id.
        concept_of: ``(V,)`` concept id of each token.
        members: ``(C, V)`` boolean, ``members[c, w]`` iff word ``w`` expresses concept ``c``.
        concept_category: ``(C,)`` category name of each concept.
        synonym_probs: ``(V,)`` probability of a word within its concept (Zipf, exponent 0.8).
        end_id: token id of ``"."`` (sentence end; also the LM's padding context).
    """

    words: tuple[str, ...]
    concept_of: np.ndarray
    members: np.ndarray
    concept_category: tuple[str, ...]
    synonym_probs: np.ndarray
    end_id: int

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    @property
    def n_concepts(self) -> int:
        return self.members.shape[0]

    def encode(self, text: str) -> np.ndarray:
        """Token ids of a whitespace-separated text; unknown words raise ValueError."""
        index = {w: i for i, w in enumerate(self.words)}
        bad = [w for w in text.split() if w not in index]
        if bad:
            raise ValueError(f"word {bad[0]!r} is not in the lexicon")
        return np.array([index[w] for w in text.split()], dtype=np.int64)

    def decode(self, ids) -> str:
        """Whitespace-joined words of a 1-D sequence of token ids."""
        check_token_ids(ids, self.vocab_size, "ids")
        return " ".join(self.words[int(i)] for i in np.asarray(ids).ravel())


def build_lexicon() -> Lexicon:
    """The hard-coded lexicon of :data:`CATEGORIES` (about 60 concepts, 150 words)."""
    words, concept_of, cats, syn_p = [], [], [], []
    for cat, concepts in CATEGORIES.items():
        for syns in concepts:
            c = len(cats)
            cats.append(cat)
            p = _zipf(len(syns), 0.8)
            for w, pw in zip(syns, p):
                words.append(w)
                concept_of.append(c)
                syn_p.append(pw)
    if len(set(words)) != len(words):
        raise AssertionError("a word belongs to two concepts")
    concept_of = np.array(concept_of, dtype=np.int64)
    members = np.zeros((len(cats), len(words)), dtype=bool)
    members[concept_of, np.arange(len(words))] = True
    return Lexicon(tuple(words), concept_of, members, tuple(cats), np.array(syn_p), words.index("."))


def sample_corpus(lex: Lexicon, n_sentences: int, seed: int) -> np.ndarray:
    """A stream of ``n_sentences`` grammar sentences (concatenated token ids), vectorised.

    Concepts within a category follow Zipf(1.0) weights, synonyms Zipf(0.8) within a concept.
    """
    if n_sentences < 1:
        raise ValueError(f"n_sentences must be >= 1, got {n_sentences}")
    rng = np.random.default_rng(seed)
    cat_concepts = {cat: np.flatnonzero(np.array(lex.concept_category) == cat) for cat in CATEGORIES}
    tmpl = rng.choice(len(TEMPLATES), size=n_sentences, p=TEMPLATE_PROBS)
    lengths = np.array([len(t) for t in TEMPLATES])[tmpl]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    out = np.empty(int(lengths.sum()), dtype=np.int64)
    for t, slots in enumerate(TEMPLATES):
        idx = np.flatnonzero(tmpl == t)
        for j, cat in enumerate(slots):
            cs = cat_concepts[cat]
            concept = cs[rng.choice(cs.size, size=idx.size, p=_zipf(cs.size, 1.0))]
            # synonym: inverse-CDF sampling within each concept's member words
            cdf = np.cumsum(lex.members[concept] * lex.synonym_probs[None, :], axis=1)
            u = rng.random(idx.size)[:, None] * cdf[:, -1:]
            out[starts[idx] + j] = np.minimum((cdf < u).sum(axis=1), lex.vocab_size - 1)
    return out
