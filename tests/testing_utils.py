"""Shared test helpers (fixtures live in conftest.py): tiny encoder-decoders built from configs (no Hub access),
a batch with out-of-vocabulary slots, corpus text, a word-level tokenizer, a Python without hf_pgen, and the table of
model cases (family x pointer x copy options) that the shared model tests run over, as PEFT's TEST_CASES."""

import pytest
import torch

VOCAB = 64
UNK = 3

FAMILIES = ("bart", "marian", "t5", "mbart", "pegasus", "m2m_100")
POINTERS = ("dedicated", "cross_attention")
# Every base family with each pointer, bare, with coverage, and with selective read and copy-next: the cases the shared
# model tests run over (the model fixture gives the last two options random weights, so that they change the output).
OPTIONS = {"": {}, "-coverage": {"coverage": True}, "-read-next": {"selective_read": True, "copy_next": True}}
TEST_CASES = [
    pytest.param((family, pointer, settings), id=f"{family}-{pointer}{name}")
    for family in FAMILIES
    for pointer in POINTERS
    for name, settings in OPTIONS.items()
]


# The special ids (pad, bos, eos, decoder start) of a tiny base built without a tokenizer. T5 and Marian start
# decoding at <pad>, as their checkpoints do; the BART-like families at </s>.
_FAMILY_IDS = {
    "bart": dict(pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2),
    "marian": dict(pad_token_id=1, eos_token_id=2, decoder_start_token_id=1),
    "t5": dict(pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
}
_FAMILY_IDS["mbart"] = _FAMILY_IDS["pegasus"] = _FAMILY_IDS["m2m_100"] = _FAMILY_IDS["bart"]


def _special_ids(family: str, tokenizer) -> dict:
    """The family's ids, or the tokenizer's: decoding starts at </s> (BART-like) or at <pad> (T5, Marian)."""
    if tokenizer is None:
        return dict(_FAMILY_IDS[family])
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    if family in ("t5", "marian"):
        return dict(pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=pad)
    return dict(pad_token_id=pad, bos_token_id=tokenizer.bos_token_id, eos_token_id=eos, decoder_start_token_id=eos)


def tiny_config(
    family: str,
    vocab_size: int | None = None,
    *,
    tokenizer=None,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    ffn_dim: int | None = None,
    decisive_init: bool = True,
    **overrides,
):
    """The config of a tiny `family` encoder-decoder: the one builder every test's tiny model comes from.

    `layers`, `heads` and `ffn_dim` (default 2 * d_model) size both sides, in the family's own parameter names.
    With `tokenizer`, the vocabulary is len(tokenizer) and the special ids are the tokenizer's; without, `vocab_size`
    (default VOCAB) and the family's usual ids. `decisive_init` (the default) draws weights with a larger std, so that
    random logits are decisive, as a trained model's are; False keeps the family's own init. `overrides` go to the
    config as they are (any config field: `max_position_embeddings`, `dropout`, `scale_embedding`, ids, ...).
    Nothing is forced at the end (`forced_eos_token_id=None`; the generation config takes it from here).
    """
    from transformers import AutoConfig

    if vocab_size is None:
        vocab_size = len(tokenizer) if tokenizer is not None else VOCAB
    ffn_dim = ffn_dim or 2 * d_model
    if family == "t5":
        settings = dict(
            d_model=d_model,
            d_kv=d_model // heads,
            d_ff=ffn_dim,
            num_layers=layers,
            num_decoder_layers=layers,
            num_heads=heads,
        )
        if decisive_init:
            settings["initializer_factor"] = 8.0
    elif family in _FAMILY_IDS:
        settings = dict(
            d_model=d_model,
            encoder_layers=layers,
            decoder_layers=layers,
            encoder_attention_heads=heads,
            decoder_attention_heads=heads,
            encoder_ffn_dim=ffn_dim,
            decoder_ffn_dim=ffn_dim,
            max_position_embeddings=128,
            forced_eos_token_id=None,
        )
        if decisive_init:
            settings["init_std"] = 0.2
        if family == "marian":
            settings["decoder_vocab_size"] = vocab_size  # shared source and target vocabularies
    else:
        raise ValueError(f"no tiny config for family {family!r}; known: {', '.join(_FAMILY_IDS)}")
    return AutoConfig.for_model(
        family, vocab_size=vocab_size, **{**settings, **_special_ids(family, tokenizer), **overrides}
    )


def tiny_base(
    family: str,
    vocab_size: int | None = None,
    seed: int = 0,
    *,
    tokenizer=None,
    generation: dict | None = None,
    **config_overrides,
):
    """A small randomly initialised base of `family` (in eval mode), from `tiny_config(family, vocab_size,
    tokenizer=..., **config_overrides)` with torch seeded by `seed`.

    It generates greedily up to 20 tokens with nothing banned (nor forced, unless the config says so). `generation`,
    when given, is applied instead, to the generation config the model derives from its config."""
    from transformers import AutoModelForSeq2SeqLM

    config = tiny_config(family, vocab_size, tokenizer=tokenizer, **config_overrides)
    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(config)
    if generation is None:
        generation = {"num_beams": 1, "max_length": 20, "bad_words_ids": None}
    model.generation_config.update(**generation)
    return model.eval()


def source_batch(vocab_size: int = VOCAB, unk: int = UNK):
    """Three sources with 0, 1 and 2 distinct out-of-vocabulary words (one of them twice); row 2 is padded.

    Returns input_ids, attention_mask, extended_input_ids, each (3, 8).
    """
    input_ids = torch.tensor(
        [
            [10, 11, 12, 13, 14, 15, 16, 2],
            [20, 21, unk, 22, 23, 24, 25, 2],
            [30, unk, 31, unk, 32, unk, 2, 1],
        ]
    )
    extended = input_ids.clone()
    extended[1, 2] = vocab_size
    extended[2, 1] = vocab_size
    extended[2, 3] = vocab_size + 1
    extended[2, 5] = vocab_size  # the same word again: same slot
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 7] = 0
    return input_ids, attention_mask, extended


def corpus_texts(split: str, min_words: int = 3, max_words: int = 8, limit: int | None = None) -> list[str]:
    """English messages of the embedded corpus (real text from software catalogues), short ones only."""
    from hf_pgen.corpus import load_en_de_messages

    texts = []
    for record in load_en_de_messages(split):
        text = " ".join(record["translation"]["en"].split())
        if min_words <= len(text.split()) <= max_words and text not in texts:
            texts.append(text)
        if limit and len(texts) >= limit:
            break
    return texts


def corpus_pairs(split: str, limit: int | None = None) -> list[tuple[str, str]]:
    """(English, German) message pairs of the embedded corpus, as they are."""
    from hf_pgen.corpus import load_en_de_messages

    pairs = []
    for record in load_en_de_messages(split):
        pairs.append((record["translation"]["en"], record["translation"]["de"]))
        if limit and len(pairs) >= limit:
            break
    return pairs


# Standard-library modules whose docstrings make (text -> summary) pairs: real text, offline (PSF licence).
_DOCSTRING_MODULES = (
    "argparse", "asyncio", "collections", "csv", "datetime", "email", "functools", "http.client", "inspect", "json",
    "logging", "os", "pathlib", "shutil", "subprocess", "tarfile", "textwrap", "threading", "unittest", "urllib.parse",
    "zipfile", "decimal", "fractions", "statistics", "string", "tempfile", "xml.dom.minidom",
)  # fmt: skip


def docstring_pairs(limit: int | None = None, min_words: int = 12) -> list[dict[str, str]]:
    """Summarisation pairs from standard-library docstrings: the body (text) -> the first line (summary), for
    docstrings whose body has at least `min_words` words; in a fixed order, each text once."""
    import importlib
    import inspect

    pairs, seen = [], set()
    for module_name in _DOCSTRING_MODULES:
        module = importlib.import_module(module_name)
        for name, member in sorted(vars(module).items()):
            if name.startswith("_") or not (inspect.isfunction(member) or inspect.isclass(member)):
                continue
            doc = inspect.getdoc(member) or ""
            first, _, body = doc.partition("\n")
            summary, text = " ".join(first.split()), " ".join(body.split())
            if len(text.split()) >= min_words and summary and text not in seen:
                seen.add(text)
                pairs.append({"text": text, "summary": summary})
                if limit and len(pairs) >= limit:
                    return pairs
    return pairs


def word_level_tokenizer(texts: list[str], vocab_size: int):
    """The project's one tokenizer builder (`hf_pgen.tokenizer_training.train_shared_tokenizer`), word-level: what the
    main job and `run_translation --train_tokenizer` use. Special ids: <pad>=0, </s>=1, <unk>=2, <s>=3."""
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    return train_shared_tokenizer(texts, "wordlevel", vocab_size)


def tiny_encoder_folder(folder):
    """A tiny BERT saved with a WordPiece tokenizer trained on German and English messages of the corpus: a local
    model for the neural metrics (BERTScore reads any Transformers encoder folder). Returns `folder`."""
    from transformers import BertConfig, BertModel

    from hf_pgen.tokenizer_training import train_shared_tokenizer

    texts = [text for pair in corpus_pairs("train", 2000) for text in pair]
    tokenizer = train_shared_tokenizer(texts, "wordpiece", 500, model_max_length=256)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# -- a Python where hf_pgen cannot be imported ------------------------------------------------------------------------

_BLOCK_HF_PGEN = """
import sys
class _NoHfPgen:
    def find_spec(self, name, path=None, target=None):
        if name == "hf_pgen" or name.startswith("hf_pgen."):
            raise ImportError("hf_pgen is not installed in this Python")
sys.meta_path.insert(0, _NoHfPgen())
"""


def run_without_hf_pgen(code: str, env: dict | None = None, timeout: int = 300) -> str:
    """Run `code` in a fresh interpreter in which `import hf_pgen` fails, in `env` (default: this process's
    environment); returns stdout, raises on failure."""
    import os
    import subprocess
    import sys
    import tempfile

    check = (
        "\nassert not any(m == 'hf_pgen' or m.startswith('hf_pgen.') for m in sys.modules), 'hf_pgen was imported'\n"
    )
    # `env` is a whole environment (hub_server.client_env leaves HF_HUB_OFFLINE out on purpose): not merged into ours.
    full_env = {**(os.environ if env is None else env), "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_HF_PGEN + code + check],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=tempfile.gettempdir(),
    )
    if result.returncode != 0:
        raise AssertionError(f"subprocess failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout


# -- training.run_translation command lines ---------------------------------------------------------------------------

# A tiny BART for `--model_type bart --config_overrides` (the sizes of test_trainer's tiny model).
TINY = (
    "d_model=16,encoder_layers=1,decoder_layers=1,encoder_attention_heads=2,decoder_attention_heads=2,"
    "encoder_ffn_dim=32,decoder_ffn_dim=32,max_position_embeddings=64"
)
PREDICT_SAMPLES = 24


def tiny_args(output_dir, *extra, steps=24, save_steps=12):
    """run_translation arguments that train the tiny BART and a word-level tokenizer on 200 corpus pairs for `steps`
    steps, then evaluate on 16 and predict PREDICT_SAMPLES; `extra` arguments go last."""
    return [
        "--model_type",
        "bart",
        "--config_overrides",
        TINY,
        "--train_tokenizer",
        "--tokenizer_type",
        "wordlevel",
        "--tokenizer_vocab_size",
        "600",
        "--max_train_samples",
        "200",
        "--max_eval_samples",
        "16",
        "--max_predict_samples",
        str(PREDICT_SAMPLES),
        "--max_source_length",
        "24",
        "--max_target_length",
        "24",
        "--val_max_target_length",
        "12",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--predict_with_generate",
        "--max_steps",
        str(steps),
        "--save_steps",
        str(save_steps),
        "--logging_steps",
        "6",
        "--per_device_train_batch_size",
        "16",
        "--per_device_eval_batch_size",
        "32",
        "--learning_rate",
        "3e-3",
        "--report_to",
        "none",
        "--dataloader_pin_memory",
        "false",
        "--disable_tqdm",
        "true",
        "--output_dir",
        str(output_dir),
        *extra,
    ]
