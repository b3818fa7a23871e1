"""hf_pgen/tokenizer_training.py: the one tokenizer builder (script, main job, tests, quick start)."""

import subprocess
import sys
from pathlib import Path

import pytest
from testing_utils import corpus_texts
from transformers import AutoTokenizer

from hf_pgen.corpus import SPLITS, load_en_de_messages
from hf_pgen.placeholders import extract_placeholders
from hf_pgen.tokenizer_training import TOKENIZER_TYPES, train_shared_tokenizer


@pytest.fixture(scope="module")
def texts():
    pairs = load_en_de_messages("train")["translation"][:3000]
    return [pair["en"] for pair in pairs] + [pair["de"] for pair in pairs]


@pytest.mark.parametrize("kind", TOKENIZER_TYPES)
def test_special_ids_and_lossless_decoding(texts, kind):
    tokenizer = train_shared_tokenizer(texts, kind, vocab_size=2000)
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id, tokenizer.bos_token_id) == (
        0,
        1,
        2,
        3,
    )
    for text in corpus_texts("test", limit=200):  # spacing, punctuation and placeholders come back as written
        ids = tokenizer(text)["input_ids"]
        assert ids[-1] == tokenizer.eos_token_id
        if tokenizer.unk_token_id not in ids:
            assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_a_placeholder_is_one_piece_and_no_piece_hides_one(texts):
    """Every pre-token holding a placeholder is exactly that placeholder, over the whole corpus: a word-level
    vocabulary then copies `%(name)s` in one decision, and a copy never brings along a placeholder inside a larger
    piece (`{%(num)s}`) that protected decoding could not see."""
    tokenizer = train_shared_tokenizer(texts, "wordlevel", vocab_size=2000)
    pre_tokenize = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str
    assert [piece for piece, _ in pre_tokenize("Report {%(num)s} at https://x.org/a%20b, {0:.2f} %d%%")] == [
        "▁Report",
        "▁",
        "{",
        "%(num)s",
        "}",
        "▁at",
        "▁",
        "https://x.org/a%20b",
        ",",
        "▁",
        "{0:.2f}",
        "▁",
        "%d",
        "%%",
    ]
    holding = 0
    for split in SPLITS:
        for pair in load_en_de_messages(split)["translation"]:
            for text in pair.values():
                for piece, _ in pre_tokenize(text):
                    found = extract_placeholders(piece.lstrip("▁"))
                    holding += bool(found)
                    assert found in ([], [piece.lstrip("▁")]), (piece, found)
    assert holding > 3000  # the corpus is full of them


def test_the_pre_tokenizer_finds_the_placeholders_of_hf_pgen_placeholders():
    """One grammar: the pre-tokenizer's pattern is hf_pgen.placeholders.PLACEHOLDER_PATTERN in 🤗 tokenizers' regex
    dialect, and both engines find the same spans in every text of the corpus. So a piece is a placeholder exactly
    when the metrics and protection say so: "<untitled>" is text to translate ("<unbenannt>"), not one piece."""
    from tokenizers import Regex, pre_tokenizers

    from hf_pgen.placeholders import PLACEHOLDER_PATTERN
    from hf_pgen.tokenizer_training import PLACEHOLDER_PIECE

    gaps_of = pre_tokenizers.Split(Regex(PLACEHOLDER_PIECE), behavior="removed").pre_tokenize_str
    for split in SPLITS:
        for pair in load_en_de_messages(split)["translation"]:
            for text in pair.values():
                gaps, end = [], 0
                for match in PLACEHOLDER_PATTERN.finditer(text):
                    gaps += [(end, match.start())] if match.start() > end else []
                    end = match.end()
                gaps += [(end, len(text))] if end < len(text) else []
                assert [offsets for _, offsets in gaps_of(text)] == gaps, text


def test_a_word_level_vocabulary_can_leave_every_placeholder_to_copying(texts):
    """placeholders_in_vocabulary=False: the same number of words, none of them a placeholder, so a copy model can
    only copy one; the special tokens stay (they read as tags: "</s>" ends a strikethrough)."""
    from hf_pgen.placeholders import placeholder_spans

    def placeholders(tokenizer):
        return {w for w in tokenizer.get_vocab() if placeholder_spans(w) == [(0, len(w))]} - {"<s>", "</s>"}

    kept = train_shared_tokenizer(texts, "wordlevel", vocab_size=2000)
    left = train_shared_tokenizer(texts, "wordlevel", vocab_size=2000, placeholders_in_vocabulary=False)
    assert placeholders(kept) and not placeholders(left)
    assert len(left) == len(kept) == 2000
    assert set(kept.get_vocab()) - placeholders(kept) <= set(left.get_vocab())  # every other word stays
    assert (left.pad_token_id, left.eos_token_id, left.unk_token_id, left.bos_token_id) == (0, 1, 2, 3)
    text = "Delete %s files from {}?"  # both placeholders frequent in the corpus: in the default vocabulary
    with_them, without = (t.convert_ids_to_tokens(t(text)["input_ids"]) for t in (kept, left))
    assert [i for i, (a, b) in enumerate(zip(with_them, without)) if a != b] == [2, 6]
    assert (with_them[2], with_them[6], without[2], without[6]) == ("%s", "{}", "<unk>", "<unk>")
    with pytest.raises(ValueError, match="word-level"):
        train_shared_tokenizer(texts, "unigram", vocab_size=2000, placeholders_in_vocabulary=False)


@pytest.mark.slow
def test_a_unigram_vocabulary_is_the_same_in_every_process(tmp_path):
    """tokenizers' Unigram trainer orders pieces of equal score (and so numbers them) differently in each process, so a
    model trained on "the same" tokenizer started from other embeddings and the main job's subword numbers moved from
    run to run. Two processes training on the same texts must now write the same file, and it must still encode."""
    script = (
        "import sys\n"
        "from hf_pgen.corpus import load_en_de_messages\n"
        "from hf_pgen.tokenizer_training import train_shared_tokenizer\n"
        "pairs = load_en_de_messages('train')['translation'][:3000]\n"
        "texts = [p['en'] for p in pairs] + [p['de'] for p in pairs]\n"
        "train_shared_tokenizer(texts, 'unigram', vocab_size=2000).save_pretrained(sys.argv[1])\n"
    )
    folders = [tmp_path / str(k) for k in range(2)]
    for folder in folders:
        subprocess.run([sys.executable, "-c", script, str(folder)], check=True, cwd=Path(__file__).parents[1])
    first, second = ((folder / "tokenizer.json").read_bytes() for folder in folders)
    assert first == second
    tokenizer = AutoTokenizer.from_pretrained(folders[0])
    text = "Delete %(count)d files from {folder}?"
    assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
