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


PROMPT_STYLES = ("opengen", "c4")


def sample_prompts(lex: Lexicon, n: int, length: int, style: str = "opengen", seed: int = 0) -> np.ndarray:
    """``(n, length)`` prompts cut from held-out grammar text, in the two styles of the official pipeline.

    * ``"opengen"``: like the OpenGen prefixes the official ``generate_watermark.py`` reads
      (``trimmed_opengen_500.jsonl``, field ``prefix``): the prompt ends at a sentence end, so the
      continuation starts a new sentence.
    * ``"c4"``: like MarkLLM's ``processed_c4.json`` (field ``prompt``, a document cut before its
      ``natural_text``): the prompt ends anywhere, usually mid-sentence.

    Each prompt is the last ``length`` tokens before its cut point in its own document (a fresh
    grammar sample of ``length // 7 + 3`` sentences, so it also starts mid-sentence in general).
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"style must be one of {PROMPT_STYLES}, got {style!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValueError(f"length must be a positive integer, got {length!r}")
    rng = np.random.default_rng([int(seed), 7])
    n_sent = length // 7 + 3  # sentences have 7-11 tokens: each document outgrows the prompt
    stream = sample_corpus(lex, n * n_sent, seed=int(rng.integers(2**62)))
    bounds = np.concatenate([[0], np.flatnonzero(stream == lex.end_id)[n_sent - 1::n_sent] + 1])
    out = np.empty((n, length), dtype=np.int64)
    for i in range(n):
        doc = stream[bounds[i]:bounds[i + 1]]
        if style == "opengen":
            cuts = np.flatnonzero(doc == lex.end_id) + 1  # cut right after a sentence end
            cuts = cuts[cuts >= length]
        else:
            cuts = np.arange(length, doc.size)  # any cut, usually mid-sentence
        cut = int(cuts[rng.integers(cuts.size)])
        out[i] = doc[cut - length:cut]
    return out


def load_prompts(path, lex: Lexicon, n: int, length: int) -> np.ndarray:
    """``(n, length)`` prompts from a JSONL file in OpenGen (``prefix``) or C4 (``prompt``) format.

    Each line is a JSON object with a ``"prefix"`` or ``"prompt"`` string of whitespace-separated
    words of ``lex`` (a real-text file needs a real LM and tokenizer: the full setting, not
    implemented here); the first ``n`` lines are used, each cut to its last ``length`` tokens.

    Raises:
        ValueError: the file has fewer than ``n`` prompts, a line lacks both fields, a prompt is
            shorter than ``length`` tokens or has a word outside the lexicon.
    """
    import json
    from pathlib import Path

    rows = []
    for ln, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        item = json.loads(line)
        text = item.get("prefix", item.get("prompt")) if isinstance(item, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path}:{ln}: expected a JSON object with a 'prefix' or 'prompt' string")
        try:
            ids = lex.encode(text)
        except ValueError as exc:
            raise ValueError(f"{path}:{ln}: {exc}") from None
        if ids.size < length:
            raise ValueError(f"{path}:{ln}: prompt has {ids.size} tokens, fewer than length={length}")
        rows.append(ids[-length:])
        if len(rows) == n:
            return np.stack(rows)
    raise ValueError(f"{path} holds {len(rows)} prompts, fewer than the {n} needed")
