"""Offline stand-ins for the slow SentencePiece tokenizers of real Hub checkpoints (Marian opus-mt, M2M100).

Transformers 5 ships `MarianTokenizer` and `M2M100Tokenizer` as slow (`PreTrainedTokenizer` + `sentencepiece`)
tokenizers only. These helpers train tiny SentencePiece models (seconds) on real text of the embedded corpus and write
the files exactly as the Hub checkpoints lay them out, so `MarianTokenizer.from_pretrained(folder)`,
`M2M100Tokenizer.from_pretrained(folder)` and `AutoTokenizer.from_pretrained(folder)` load them as they would load
`Helsinki-NLP/opus-mt-en-de` or `facebook/m2m100_418M`:

- Marian: `source.spm` (trained on English), `target.spm` (trained on German), one shared `vocab.json` whose ids are
  NOT the SentencePiece ids (as on the Hub: `</s>`=0, `<unk>`=1, pieces, `<pad>` last), `tokenizer_config.json`,
  `special_tokens_map.json`.
- M2M100: `sentencepiece.bpe.model` (BPE), `vocab.json` in fairseq order (`<s>`=0, `<pad>`=1, `</s>`=2, `<unk>`=3,
  pieces), `tokenizer_config.json` (`src_lang`/`tgt_lang`), `special_tokens_map.json`; the 100 language codes
  (`__en__`, `__de__`, ...) come after the pieces.

`character_coverage` < 1 leaves rare characters (accented capitals, emoji, CJK, `{`/`}` where asked) outside the
vocabulary, so unknown tokens exist, as they do for real checkpoints on unusual text.

Public helpers (reused by the pipeline and training tests):
    corpus_lines(lang, limit)                               real sentences of the embedded corpus
    marian_tokenizer_folder(folder, ...) -> Path            write a Marian tokenizer folder
    m2m100_tokenizer_folder(folder, ...) -> Path            write an M2M100 tokenizer folder
    marian_checkpoint(folder, ...) -> Path                  tokenizer folder + a tiny random MarianMTModel
    m2m100_checkpoint(folder, ...) -> Path                  tokenizer folder + a tiny random M2M100 model
    m2m100_model_width(tokenizer) -> int                    M2M100's model width (language codes included)
"""

from __future__ import annotations

import functools
import gzip
import io
import json
from pathlib import Path

from testing_utils import tiny_base

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "hf_pgen" / "en_de_messages"

__all__ = [
    "corpus_lines",
    "train_sentencepiece",
    "marian_tokenizer_folder",
    "m2m100_tokenizer_folder",
    "marian_checkpoint",
    "m2m100_checkpoint",
    "m2m100_model_width",
]


@functools.lru_cache(maxsize=None)
def corpus_lines(lang: str = "en", limit: int = 6000, split: str = "train") -> tuple[str, ...]:
    """The first `limit` distinct non-empty `lang` messages of the embedded corpus (whitespace kept as is)."""
    lines: list[str] = []
    seen: set[str] = set()
    with gzip.open(CORPUS / f"{split}.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["translation"][lang]
            if text and text.strip() and text not in seen:
                seen.add(text)
                lines.append(text)
                if len(lines) >= limit:
                    break
    return tuple(lines)


@functools.lru_cache(maxsize=None)
def train_sentencepiece(
    lang: str = "en",
    vocab_size: int = 600,
    model_type: str = "unigram",
    character_coverage: float = 0.98,
    drop_chars: str = "",
    limit: int = 6000,
    special_ids: tuple[int, int, int, int] = (0, -1, 1, -1),
) -> bytes:
    """Serialized SentencePiece model trained on corpus text (cached per argument set; about a second).

    `special_ids` = (unk_id, bos_id, eos_id, pad_id) inside the SentencePiece model (-1 = absent). `drop_chars` are
    removed from the training text (e.g. "{}" like real T5, whose vocabulary has no curly braces).
    """
    import sentencepiece as spm

    table = str.maketrans("", "", drop_chars)
    lines = [" ".join(t.translate(table).split()) for t in corpus_lines(lang, limit)]
    unk_id, bos_id, eos_id, pad_id = special_ids
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buffer,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        unk_id=unk_id,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        num_threads=1,
        minloglevel=2,
    )
    return buffer.getvalue()


def _pieces(model: bytes) -> list[str]:
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_proto=model)
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def _write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def marian_tokenizer_folder(
    folder: str | Path,
    vocab_size: int = 600,
    character_coverage: float = 0.98,
    source_lang: str = "en",
    target_lang: str = "de",
    drop_chars: str = "{}",
) -> Path:
    """Write an opus-mt-style Marian tokenizer into `folder`: separate source/target SentencePiece models, one
    shared vocab.json (Hub id order, not the SentencePiece ids). Load it with `MarianTokenizer.from_pretrained` or
    `AutoTokenizer.from_pretrained`. `drop_chars` stay out of the vocabulary (default "{}", so `{count}` needs
    copying, as with T5's real vocabulary)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # opus-mt SentencePiece models: <unk>=0, <s>=1, </s>=2; no pad inside SentencePiece.
    ids = (0, 1, 2, -1)
    source = train_sentencepiece(source_lang, vocab_size, "unigram", character_coverage, drop_chars, special_ids=ids)
    target = train_sentencepiece(target_lang, vocab_size, "unigram", character_coverage, drop_chars, special_ids=ids)
    (folder / "source.spm").write_bytes(source)
    (folder / "target.spm").write_bytes(target)
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in _pieces(source) + _pieces(target):
        if piece not in vocab and piece not in ("<s>", "<unk>", "</s>"):
            vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    _write_json(folder / "vocab.json", vocab)
    _write_json(
        folder / "tokenizer_config.json",
        {
            "source_lang": source_lang,
            "target_lang": target_lang,
            "model_max_length": 512,
            "separate_vocabs": False,
            "tokenizer_class": "MarianTokenizer",
        },
    )
    _write_json(folder / "special_tokens_map.json", {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    return folder


def m2m100_tokenizer_folder(
    folder: str | Path,
    vocab_size: int = 600,
    character_coverage: float = 0.98,
    src_lang: str = "en",
    tgt_lang: str = "de",
    drop_chars: str = "{}",
) -> Path:
    """Write an M2M100 tokenizer into `folder`: one BPE SentencePiece model trained on English and German text,
    fairseq-ordered vocab.json. Load it with `M2M100Tokenizer.from_pretrained` or `AutoTokenizer.from_pretrained`.
    The language codes (`__en__`, ...) get the ids after the pieces, beyond `len(tokenizer)` (as in Transformers 5):
    a model needs `vocab_size >= m2m100_model_width(tokenizer)`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # One model for both languages, as M2M100 has: train on the interleaved English and German text.
    model = _train_bilingual_bpe(vocab_size, character_coverage, drop_chars)
    (folder / "sentencepiece.bpe.model").write_bytes(model)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in _pieces(model):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    _write_json(folder / "vocab.json", vocab)
    _write_json(
        folder / "tokenizer_config.json",
        {
            "src_lang": src_lang,
            "tgt_lang": tgt_lang,
            "language_codes": "m2m100",
            "num_madeup_words": 8,
            "model_max_length": 1024,
            "tokenizer_class": "M2M100Tokenizer",
        },
    )
    _write_json(
        folder / "special_tokens_map.json",
        {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"},
    )
    return folder


@functools.lru_cache(maxsize=None)
def _train_bilingual_bpe(vocab_size: int, character_coverage: float, drop_chars: str) -> bytes:
    import sentencepiece as spm

    table = str.maketrans("", "", drop_chars)
    lines = [
        " ".join(t.translate(table).split())
        for pair in zip(corpus_lines("en", 4000), corpus_lines("de", 4000))
        for t in pair
    ]
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buffer,
        vocab_size=vocab_size,
        model_type="bpe",
        character_coverage=character_coverage,
        unk_id=3,
        bos_id=0,
        eos_id=2,
        pad_id=1,
        num_threads=1,
        minloglevel=2,
    )
    return buffer.getvalue()


def marian_checkpoint(folder: str | Path, vocab_size: int = 600, character_coverage: float = 0.98) -> Path:
    """`marian_tokenizer_folder` plus a tiny random `MarianMTModel` (shared vocabulary), like an opus-mt folder.
    Its `config.vocab_size` is `len(tokenizer)`."""
    from transformers import MarianTokenizer

    folder = marian_tokenizer_folder(folder, vocab_size, character_coverage)
    tokenizer = MarianTokenizer.from_pretrained(folder)
    pad = tokenizer.pad_token_id
    model = tiny_base(
        "marian",
        tokenizer=tokenizer,
        decisive_init=False,
        forced_eos_token_id=tokenizer.eos_token_id,
        generation=dict(
            max_length=32, num_beams=1, bad_words_ids=[[pad]], decoder_start_token_id=pad, pad_token_id=pad
        ),
    )
    model.save_pretrained(folder)
    return folder


def m2m100_model_width(tokenizer) -> int:
    """M2M100's output width: pieces, then the language codes, then `num_madeup_words` (128112 for m2m100_418M)."""
    return max(tokenizer.lang_token_to_id.values()) + 1 + tokenizer.num_madeup_words


def m2m100_checkpoint(folder: str | Path, vocab_size: int = 600, character_coverage: float = 0.98) -> Path:
    """`m2m100_tokenizer_folder` plus a tiny random `M2M100ForConditionalGeneration` whose width covers the
    language codes (`m2m100_model_width`)."""
    from transformers import M2M100Tokenizer

    folder = m2m100_tokenizer_folder(folder, vocab_size, character_coverage)
    tokenizer = M2M100Tokenizer.from_pretrained(folder)
    model = tiny_base(
        "m2m_100",
        m2m100_model_width(tokenizer),
        tokenizer=tokenizer,
        decisive_init=False,
        forced_eos_token_id=tokenizer.eos_token_id,
        generation=dict(max_length=32, num_beams=1),
    )
    model.save_pretrained(folder)
    return folder
