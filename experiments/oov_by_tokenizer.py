"""What encode_with_oovs marks as out of vocabulary, per tokenizer family (docs/usage.md, "Tokenizers: what copying buys").

Run from the repo root: python -m experiments.oov_by_tokenizer > experiments/results/oov_by_tokenizer.txt
Every tokenizer is trained here on the embedded corpus (train split, en+de, 45,914 messages), 8K vocabularies.
"""

import argparse
import re
import time
import warnings

warnings.simplefilter("ignore")
from transformers.utils import logging as hl

hl.set_verbosity_error()
from tokenizers import (
    ByteLevelBPETokenizer,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import PreTrainedTokenizerFast, T5Tokenizer

from hf_pgen import decode_with_oovs, encode_with_oovs
from hf_pgen.tokenizer_training import train_shared_tokenizer


def corpus_lines(lang: str, split: str) -> list[str]:
    """The distinct non-empty `lang` messages of the embedded corpus' `split`, in corpus order."""
    from hf_pgen.corpus import load_en_de_messages

    pairs = load_en_de_messages(split)["translation"]
    return list(dict.fromkeys(p[lang] for p in pairs if p[lang] and p[lang].strip()))


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    lines = [" ".join(t.split()) for lang in ("en", "de") for t in corpus_lines(lang, "train")]
    print(len(lines), "training lines")
    toks = {}
    t0 = time.time()
    # byte-level BPE (BART / RoBERTa / GPT-2 style)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        lines, vocab_size=8000, special_tokens=["<s>", "<pad>", "</s>", "<unk>"], show_progress=False
    )
    bpe._tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    toks["byte-level BPE (BART)"] = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, unk_token="<unk>", pad_token="<pad>", eos_token="</s>"
    )
    # SentencePiece Unigram, T5 style: real T5's vocabulary has no { or }; T5Tokenizer (fast in Transformers 5)
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([re.sub(r"[{}]", " ", t) for t in lines]),
        model_writer=buf,
        vocab_size=8000,
        model_type="unigram",
        character_coverage=0.9995,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        minloglevel=2,
        num_threads=1,
    )
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    toks["SentencePiece Unigram (T5)"] = T5Tokenizer(
        vocab=[(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())], extra_ids=0
    )
    # WordPiece, BERT-cased style
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.decoder = decoders.WordPiece()
    wp.train_from_iterator(
        lines, trainers.WordPieceTrainer(vocab_size=8000, special_tokens=["[PAD]", "[UNK]", "[SEP]"])
    )
    wp.post_processor = processors.TemplateProcessing(single="$A [SEP]", special_tokens=[("[SEP]", 2)])
    toks["WordPiece (BERT cased)"] = PreTrainedTokenizerFast(
        tokenizer_object=wp, unk_token="[UNK]", pad_token="[PAD]", eos_token="[SEP]"
    )
    # word-level, the main job's tokenizer
    toks["word-level 8K (main job)"] = train_shared_tokenizer(lines, "wordlevel", 8000)
    print(f"trained in {time.time() - t0:.0f}s")

    PROBES = [
        "😀",
        "🗑️",
        "你好世界",
        "{count}",
        "%(name)s",
        "<b>",
        "Café",
        "é",
        "Øresund",
        "Ø",
        "Nakamura",
        "Zyxwvut",
        "Dvořák",
        "\u200b",
    ]
    for name, tok in toks.items():
        V = len(tok)
        print(f"\n## {name}: {V} tokens")
        exact = 0
        for probe in PROBES:
            text = f"Delete {probe} now"
            enc = encode_with_oovs(tok, text, vocab_size=V)
            copy = decode_with_oovs(
                tok, enc["extended_input_ids"], enc["oov_words"], vocab_size=V, oov_spacing=enc["oov_spacing"]
            )
            plain = tok.decode(tok(text)["input_ids"], skip_special_tokens=True)
            exact += copy == text
            print(
                f"  {probe!r:12} oov_words={enc['oov_words']!r:28} copy-decode exact={copy == text!s:5} plain decode={plain!r}"
            )
        print(f"  -> exact round trip with copies: {exact}/{len(PROBES)}")
        # how much of real text is OOV (test split, English)
        test = [" ".join(t.split()) for t in corpus_lines("en", "test")]
        enc = encode_with_oovs(tok, test, vocab_size=V)
        n_tok = sum(len(r) for r in enc["input_ids"])
        n_slot = sum(sum(i >= V for i in r) for r in enc["extended_input_ids"])
        with_oov = sum(bool(t) for t in enc["oov_words"])
        print(
            f"  test split (en, {len(test)} messages): {n_slot}/{n_tok} tokens are OOV ({100 * n_slot / n_tok:.2f}%), {with_oov} messages have one"
        )


if __name__ == "__main__":
    main()
