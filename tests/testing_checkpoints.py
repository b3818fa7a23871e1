"""Offline stand-ins for the pretrained checkpoints docs/recipes.md and the README use, built with the SAME classes.

No Hub here. Each helper writes a folder laid out like the Hub checkpoint, with that checkpoint's model class and its
real tokenizer class, a vocabulary trained on the embedded corpus (English and German), and a tiny random model, so
`AutoModelForSeq2SeqLM.from_pretrained(folder)` / `AutoTokenizer.from_pretrained(folder)` load it as they would load
the real one, in seconds:

- `t5_checkpoint` (`t5-small`): `T5Tokenizer`, SentencePiece Unigram without `{` `}`, sentinel tokens;
  `T5ForConditionalGeneration`, wider than the tokenizer, with t5-small's `task_specific_params`.
- `bart_checkpoint` (`facebook/bart-base`): `BartTokenizer`, byte-level BPE; `BartForConditionalGeneration`.
- `mbart50_checkpoint` (`facebook/mbart-large-50`): `MBart50Tokenizer` (pieces, the 52 language codes, `<mask>`);
  `MBartForConditionalGeneration`.
- `marian_checkpoint` (`Helsinki-NLP/opus-mt-en-de`): `MarianTokenizer` (slow, sentencepiece); `MarianMTModel`
  (from tests/testing_tokenizers.py).

Special-token ids, the model's output width (T5 pads it past the tokenizer), `task_specific_params` and the generation
settings follow the real checkpoints' config.json / generation_config.json; only the sizes are tiny. Like real T5's,
the T5 vocabulary has no curly braces, so `{count}` needs the copy mechanism.
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

from testing_tokenizers import corpus_lines, marian_checkpoint
from testing_utils import tiny_base

__all__ = [
    "CHECKPOINTS",
    "build_checkpoint",
    "t5_checkpoint",
    "bart_checkpoint",
    "mbart50_checkpoint",
    "marian_checkpoint",
    "sentencepiece_vocab",
]

# t5-small's config.json, task_specific_params["translation_en_to_de"] (max_length 300 there; 64 keeps tests quick).
T5_EN_DE = {"early_stopping": True, "max_length": 64, "num_beams": 4, "prefix": "translate English to German: "}


def _bilingual_lines(limit: int = 3000, drop_chars: str = "") -> list[str]:
    """English and German corpus messages, interleaved, whitespace collapsed, `drop_chars` removed."""
    table = str.maketrans("", "", drop_chars)
    pairs = zip(corpus_lines("en", limit), corpus_lines("de", limit))
    return [" ".join(text.translate(table).split()) for pair in pairs for text in pair]


@functools.lru_cache(maxsize=None)
def sentencepiece_vocab(
    vocab_size: int = 1000,
    character_coverage: float = 0.9995,
    drop_chars: str = "",
    special_ids: tuple[int, int, int, int] = (0, 1, 2, -1),
) -> tuple[tuple[str, float], ...]:
    """`(piece, score)` pairs of a SentencePiece Unigram model trained on English + German corpus text (about a
    second; cached). `special_ids` = (unk, bos, eos, pad) ids inside the model (-1: absent); the pieces are in id order,
    which is what `T5Tokenizer(vocab=...)` and `MBart50Tokenizer(vocab=...)` expect."""
    import sentencepiece as spm

    unk_id, bos_id, eos_id, pad_id = special_ids
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_bilingual_lines(drop_chars=drop_chars)),
        model_writer=buffer,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=character_coverage,
        unk_id=unk_id,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        num_threads=1,
        minloglevel=2,
    )
    processor = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    return tuple((processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size()))


def _save(folder: str | Path, model, tokenizer) -> Path:
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def t5_checkpoint(folder: str | Path, extra_ids: int = 4, d_model: int = 32, num_layers: int = 2) -> Path:
    """A `t5-small`-shaped folder: `T5Tokenizer` (Unigram, pad=0, eos=1, unk=2, `extra_ids` sentinels, no braces in
    the vocabulary) and a tiny `T5ForConditionalGeneration` whose width is padded past the tokenizer (t5-small: 32100
    tokens, 32128 rows) and whose config carries t5-small's `task_specific_params` (the translation prefixes).
    `d_model` / `num_layers` size the model (the benchmark trains a larger one than the tests)."""
    from transformers import T5Tokenizer

    vocab = sentencepiece_vocab(drop_chars="{}", special_ids=(2, -1, 1, 0))  # T5 order: <pad>, </s>, <unk>
    tokenizer = T5Tokenizer(vocab=list(vocab), extra_ids=extra_ids)
    model = tiny_base(
        "t5",
        (len(tokenizer) // 64 + 1) * 64,
        d_model=d_model,
        layers=num_layers,
        decisive_init=False,
        generation={},  # t5-small's generation config sets neither max_length nor num_beams
        task_specific_params={
            "summarization": {
                "early_stopping": True,
                "length_penalty": 2.0,
                "max_length": 64,
                "min_length": 8,
                "no_repeat_ngram_size": 3,
                "num_beams": 4,
                "prefix": "summarize: ",
            },
            "translation_en_to_de": T5_EN_DE,
            "translation_en_to_fr": {**T5_EN_DE, "prefix": "translate English to French: "},
            "translation_en_to_ro": {**T5_EN_DE, "prefix": "translate English to Romanian: "},
        },
    )
    return _save(folder, model, tokenizer)


@functools.lru_cache(maxsize=None)
def _byte_level_bpe(vocab_size: int = 1000) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """vocab.json / merges.txt contents of a byte-level BPE trained on the corpus, with BART's special tokens."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _bilingual_lines(),
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
    )
    model = json.loads(bpe._tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def bart_checkpoint(folder: str | Path) -> Path:
    """A `facebook/bart-base`-shaped folder: `BartTokenizer` (byte-level BPE: nothing is out of vocabulary; `<mask>`
    last) and a tiny `BartForConditionalGeneration` with bart-base's special ids and generation settings."""
    from transformers import BartTokenizer

    vocab, merges = _byte_level_bpe()
    tokenizer = BartTokenizer(vocab=dict(vocab), merges=list(merges))
    model = tiny_base(
        "bart",
        tokenizer=tokenizer,
        decisive_init=False,
        forced_bos_token_id=0,
        forced_eos_token_id=2,
        generation=dict(num_beams=4, no_repeat_ngram_size=3, early_stopping=True, max_length=64),
    )
    return _save(folder, model, tokenizer)


def mbart50_checkpoint(folder: str | Path) -> Path:
    """A `facebook/mbart-large-50`-shaped folder: `MBart50Tokenizer` (Unigram pieces, then the 52 language codes and
    `<mask>`, as on the Hub) and a tiny `MBartForConditionalGeneration` with mbart-large-50's special ids."""
    from transformers import MBart50Tokenizer

    vocab = sentencepiece_vocab()  # <unk>, <s>, </s>, pieces: MBart50Tokenizer puts <s> <pad> </s> <unk> first
    tokenizer = MBart50Tokenizer(vocab=list(vocab), src_lang="en_XX", tgt_lang="ro_RO")
    model = tiny_base(
        "mbart",
        tokenizer=tokenizer,
        decisive_init=False,
        scale_embedding=True,
        bos_token_id=0,
        forced_eos_token_id=2,
        generation=dict(num_beams=5, early_stopping=True, max_length=64),
    )
    return _save(folder, model, tokenizer)


# docs/recipes.md recipe marker -> (the Hub id it names, the helper that builds the stand-in). Marian with
# character_coverage 0.9995, as the others: testing_tokenizers' default of 0.98 also leaves letters such as `H` and `?`
# out.
CHECKPOINTS = {
    "opus-mt": ("Helsinki-NLP/opus-mt-en-de", functools.partial(marian_checkpoint, character_coverage=0.9995)),
    "t5-small": ("t5-small", t5_checkpoint),
    "bart-base": ("facebook/bart-base", bart_checkpoint),
    "mbart-50": ("facebook/mbart-large-50", mbart50_checkpoint),
}


def build_checkpoint(name: str, folder: str | Path) -> Path:
    """Write the stand-in for recipe `name` (a key of `CHECKPOINTS`) into `folder`."""
    return Path(CHECKPOINTS[name][1](folder))
