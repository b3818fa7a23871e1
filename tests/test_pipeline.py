"""The translation / summarization / text2text-generation pipelines, as Transformers 4 users know them."""

import json
import logging

import datasets
import pytest
import torch
from testing_utils import corpus_texts, run_without_hf_pgen, tiny_base, word_level_tokenizer
from transformers import AutoTokenizer, pipeline
from transformers import pipelines as transformers_pipelines
from transformers.pipelines.pt_utils import KeyDataset

from hf_pgen import PointerGeneratorForConditionalGeneration, PointerGeneratorText2TextPipeline
from hf_pgen.pipeline_pointer_generator import register_pipeline_tasks

NAMES = ["Open Nakamura now", "Delete Zyxwvut and Qwerfdsa", "Close the file"]
# 0, 3, 1, 2 and 1 OOV words: tables of different sizes share each batch
MIXED = ["Close the file", "Delete Zyxwvut and Qwerfdsa from Blorptastic", "Open Nakamura now", "", "Save Xylophonia"]
TASK_KEYS = {
    "translation": "translation_text",
    "summarization": "summary_text",
    "text2text-generation": "generated_text",
}


@pytest.fixture(scope="module")
def saved_copier(trained_copier, tmp_path_factory):
    model, tokenizer, _ = trained_copier
    folder = tmp_path_factory.mktemp("copier")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def translator(trained_copier):
    model, tokenizer, _ = trained_copier
    return pipeline("translation", model=model, tokenizer=tokenizer)


def _texts(outputs):
    return [out["translation_text"] for out in outputs]


# -- transformers.pipeline(...) with hf_pgen imported ---------------------------------------------------------------


def test_transformers_pipeline_serves_the_removed_tasks(trained_copier):
    """Regression: with hf_pgen imported, pipeline("translation", model=model) raised Transformers 5's KeyError."""
    model, tokenizer, _ = trained_copier
    for task, key in TASK_KEYS.items():
        pipe = pipeline(task, model=model, tokenizer=tokenizer)
        assert type(pipe) is PointerGeneratorText2TextPipeline and pipe.task == task
        assert "Nakamura" in pipe(NAMES[0])[0][key]
    pair = pipeline("translation_en_to_de", model=model, tokenizer=tokenizer)
    assert type(pair) is PointerGeneratorText2TextPipeline and pair.task == "translation_en_to_de"
    direct = PointerGeneratorText2TextPipeline(model, tokenizer)
    assert _texts(pair(NAMES, num_beams=2)) == _texts(direct(NAMES, num_beams=2))


def test_registration_is_narrow_and_idempotent():
    """Only our three tasks (and translation_XX_to_YY) change; every other removed or unknown task keeps its error."""
    registry = transformers_pipelines.PIPELINE_REGISTRY
    check_task = registry.check_task
    register_pipeline_tasks()  # a second call (e.g. a reload) changes nothing
    assert registry.check_task is check_task
    assert not {"translation", "summarization", "text2text-generation"} & set(transformers_pipelines.REMOVED_TASKS)
    assert "question-answering" in transformers_pipelines.REMOVED_TASKS
    with pytest.raises(KeyError, match="has been removed"):
        transformers_pipelines.check_task("question-answering")
    task, impl, languages = transformers_pipelines.check_task("translation_en_to_de")
    assert (task, impl["impl"], languages) == ("translation", PointerGeneratorText2TextPipeline, ("en", "de"))
    for bad in ("translation_en", "translation_en_de_fr", "summarization_en_to_de"):
        with pytest.raises(KeyError):
            transformers_pipelines.check_task(bad)
    assert set(PointerGeneratorText2TextPipeline._registered_impl) == set(TASK_KEYS)


def test_saved_folder_runs_the_installed_pipeline_without_trust_remote_code(saved_copier, translator):
    """Regression: with hf_pgen imported, a folder demanded trust_remote_code=True and then ran the folder's own copy
    of the pipeline code (possibly older than the installed one)."""
    expected = _texts(translator(NAMES, num_beams=2))
    for kwargs in ({}, {"trust_remote_code": True}):
        pipe = pipeline("translation", model=str(saved_copier), **kwargs)
        assert type(pipe) is PointerGeneratorText2TextPipeline, type(pipe).__module__
        assert _texts(pipe(NAMES, num_beams=2)) == expected


def test_plain_base_translates_as_transformers_4_did(tmp_path):
    """A plain Marian / BART / T5 goes through the same pipeline and gives v4's output: generate on the tokenizer's ids,
    then tokenizer.decode(skip_special_tokens=True, clean_up_tokenization_spaces=False)."""
    from testing_tokenizers import marian_tokenizer_folder

    texts = ["Open the file now", "Delete the selected items?", "Save"]
    marian_tokenizer = AutoTokenizer.from_pretrained(marian_tokenizer_folder(tmp_path / "marian"))
    word_tokenizer = word_level_tokenizer(corpus_texts("train", limit=500), 120)
    for family, tokenizer in (("marian", marian_tokenizer), ("bart", word_tokenizer), ("t5", word_tokenizer)):
        base = tiny_base(family, vocab_size=len(tokenizer))
        expected = []
        for text in texts:  # v4 ran a list one input at a time (batch_size=1), unpadded
            ids = base.generate(**tokenizer(text, return_tensors="pt"), pad_token_id=tokenizer.pad_token_id)
            expected.append(tokenizer.decode(ids[0], skip_special_tokens=True, clean_up_tokenization_spaces=False))
        pipe = pipeline("translation", model=base, tokenizer=tokenizer)
        assert type(pipe) is PointerGeneratorText2TextPipeline
        assert _texts(pipe(texts)) == expected, family
        folder = tmp_path / family
        base.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        assert _texts(pipeline("translation", model=str(folder))(texts)) == expected, family


@pytest.mark.slow  # a Python without hf_pgen, in a subprocess
def test_saved_folder_serves_all_three_tasks_without_hf_pgen(trained_copier, saved_copier, tmp_path):
    model, tokenizer, _ = trained_copier
    config = json.loads((saved_copier / "config.json").read_text())
    assert set(config["custom_pipelines"]) == set(TASK_KEYS)
    code = {
        "pipeline_pointer_generator.py",
        "processing_pointer_generator.py",
        "tokenization_encode_pointer_generator.py",
        "tokenization_decode_pointer_generator.py",
        "modeling_pointer_generator.py",
    }
    assert code <= {p.name for p in saved_copier.iterdir()}
    expected = _texts(PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer)(NAMES, num_beams=2))
    # Pipeline.save_pretrained of a plain base writes the three tasks and this pipeline's code into its folder too.
    plain = pipeline("summarization", model=tiny_base("bart", vocab_size=len(tokenizer)), tokenizer=tokenizer)
    plain.save_pretrained(tmp_path / "plain")
    plain_expected = plain(NAMES)
    bare = tiny_base("bart", vocab_size=len(tokenizer))  # a folder without custom_pipelines
    bare.save_pretrained(tmp_path / "bare")
    tokenizer.save_pretrained(tmp_path / "bare")
    stdout = run_without_hf_pgen(f"""
import json, torch
from transformers import pipeline, AutoModelForSeq2SeqLM
folder = {str(saved_copier)!r}
result = {{}}
for task in ["translation", "summarization", "text2text-generation"]:
    pipe = pipeline(task, model=folder, trust_remote_code=True)
    result[task] = pipe({NAMES!r}, num_beams=2, batch_size=2)
result["one"] = pipe({NAMES[0]!r}, num_beams=2)
result["plain"] = pipeline("summarization", model={str(tmp_path / "plain")!r}, trust_remote_code=True)({NAMES!r})
try:
    pipeline("translation", model={str(tmp_path / "bare")!r})
except KeyError as error:  # Transformers 5's own behaviour is untouched without hf_pgen
    result["untouched"] = "has been removed" in str(error)
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
result["class"] = type(model).__name__
ids = torch.tensor([[5, 6, 7, 2]])
result["logits_sum"] = float(model(input_ids=ids, decoder_input_ids=ids[:, :2]).logits.exp().sum())
print(json.dumps(result))
""")
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["class"] == "PointerGeneratorForConditionalGeneration"
    for task, key in TASK_KEYS.items():
        assert [r[key] for r in result[task]] == expected
    assert result["one"] == [{"generated_text": expected[0]}]
    assert result["plain"] == plain_expected and result["untouched"] is True
    assert "Nakamura" in result["translation"][0]["translation_text"]
    with torch.no_grad():
        ids = torch.tensor([[5, 6, 7, 2]])
        ours = float(model(input_ids=ids, decoder_input_ids=ids[:, :2]).logits.exp().sum())
    assert result["logits_sum"] == pytest.approx(ours, abs=1e-5)


# -- inputs and outputs -----------------------------------------------------------------------------------------------


def test_outputs_have_v4_shapes(translator):
    """Regression: one string gave a bare dict; v4 gave a list of dicts (one per returned sequence)."""
    one = translator(NAMES[0])
    assert isinstance(one, list) and len(one) == 1 and set(one[0]) == {"translation_text"}
    assert "Nakamura" in one[0]["translation_text"]
    several = translator(NAMES[0], num_beams=3, num_return_sequences=2)
    assert len(several) == 2 and all(set(item) == {"translation_text"} for item in several)
    listed = translator(NAMES)
    assert [type(item) for item in listed] == [dict] * 3 and listed[0] == one[0]
    nested = translator(NAMES, num_beams=3, num_return_sequences=2, batch_size=2)
    assert [len(item) for item in nested] == [2, 2, 2] and nested[0] == several


def test_streams_lists_tuples_and_empty_inputs(translator):
    """Regression: tuples, [], generators and KeyDataset were rejected or crashed."""
    expected = _texts(translator(MIXED))
    assert translator([]) == [] and translator(()) == []
    assert _texts(translator(tuple(MIXED), batch_size=2)) == expected
    streamed = translator((text for text in MIXED), batch_size=2)
    assert [out[0]["translation_text"] for out in streamed] == expected  # v4: one list per streamed input
    rows = datasets.Dataset.from_dict({"text": MIXED})
    assert _texts(translator(rows["text"])) == expected  # a datasets Column is a list of texts
    for batch_size in (1, 3):
        outputs = list(translator(KeyDataset(rows, "text"), batch_size=batch_size))
        assert [out[0]["translation_text"] for out in outputs] == expected


def test_bad_inputs_name_their_index(translator):
    with pytest.raises(ValueError, match="Input 1 is NoneType"):
        translator(["fine", None])
    with pytest.raises(ValueError, match="Input 1 is int"):
        translator(("fine", 3))
    with pytest.raises(ValueError, match="not a string"):
        translator(42)
    with pytest.raises(ValueError, match="Input 2 is bytes"):
        list(translator((text for text in ["a", "b", b"c"]), batch_size=2))
    with_gap = datasets.Dataset.from_dict({"text": ["fine", None, "also fine"]})
    with pytest.raises(ValueError, match="Input 1 is NoneType"):
        list(translator(KeyDataset(with_gap, "text"), batch_size=2))
    with pytest.raises(ValueError, match="KeyDataset"):
        translator(with_gap)  # rows are dicts: say how to pick the text column


@pytest.mark.parametrize("batch_size", [1, 2, 3, 4])
def test_each_input_copies_its_own_words_in_any_batch(translator, batch_size):
    one_by_one = [translator(text)[0]["translation_text"] for text in MIXED]
    batched = _texts(translator(MIXED, batch_size=batch_size))
    assert batched == one_by_one
    assert "Zyxwvut" in batched[1] and "Qwerfdsa" in batched[1] and "Nakamura" in batched[2]
    assert "Xylophonia" in batched[4] and batched[3] == ""
    for i, text in enumerate(batched):  # never a word of another input's table
        foreign = {w for j, src in enumerate(MIXED) if j != i for w in src.split()} - set(MIXED[i].split())
        assert not foreign & {"Zyxwvut", "Qwerfdsa", "Blorptastic", "Nakamura", "Xylophonia"} & set(text.split())
    assert "<unk>" not in " ".join(batched)


def test_copies_are_spaced_as_in_the_source_in_any_batch(translator):
    """The word-level unknown token swallows the space before "3": each input's `oov_spacing` records travel with its
    table through batching, so "v2.3" is not written "v2. 3"."""
    texts = ["Update to v2.3 now", "Open the file.3 now", "Open the file. Nakamura now"]
    assert _texts(translator(texts, batch_size=2)) == _texts(translator(texts)) == texts


def test_blank_and_unusual_inputs(translator):
    inputs = ["", "   ", "Open Nakamura now", "emoji 😀 and \x07 bell", "Schriften 日本語 Ελληνικά"]
    outputs = _texts(translator(inputs, batch_size=4))
    assert len(outputs) == len(inputs) and outputs[:2] == ["", ""]
    assert "Nakamura" in outputs[2] and all(isinstance(o, str) for o in outputs)


def test_return_tensors_and_return_text(trained_copier, translator):
    """Regression: return_tensors / return_text reached generate() and raised 'model_kwargs are not used'."""
    model, tokenizer, _ = trained_copier
    from hf_pgen import batch_decode_with_oovs, encode_with_oovs

    ids_only = translator(NAMES[1], return_tensors=True)
    assert set(ids_only[0]) == {"translation_token_ids"}  # v4: the ids instead of the text
    both = translator(NAMES[1], return_tensors=True, return_text=True)[0]
    ids = both["translation_token_ids"]
    assert torch.equal(ids, ids_only[0]["translation_token_ids"]) and (ids >= model.config.vocab_size).any()
    table = encode_with_oovs(tokenizer, [NAMES[1]], vocab_size=model.config.vocab_size)["oov_words"]
    assert batch_decode_with_oovs(tokenizer, ids[None], table, vocab_size=model.config.vocab_size) == [
        both["translation_text"]
    ]
    summarizer = pipeline("summarization", model=model, tokenizer=tokenizer)
    assert set(summarizer(NAMES, return_tensors=True)[0]) == {"summary_token_ids"}
    with pytest.raises(ValueError, match="return_text=False"):
        translator(NAMES[0], return_text=False)


# -- lengths ----------------------------------------------------------------------------------------------------------


def test_max_length_limits_the_output_not_the_source(translator):
    """Regression: max_length truncated the source (v4 and generate() limit the output)."""
    long_text = " ".join(["Open the file now"] * 5)  # 21 tokens with </s>
    source = translator.preprocess(long_text, **translator._sanitize_parameters(max_length=4)[0])
    assert source["input_ids"].shape[1] == 21
    ids = translator(long_text, max_length=4, return_tensors=True)[0]["translation_token_ids"]
    assert len(ids) <= 4
    assert len(translator(long_text, max_new_tokens=3, return_tensors=True)[0]["translation_token_ids"]) <= 4
    at_init = pipeline("translation", model=translator.model, tokenizer=translator.tokenizer, max_length=4)
    assert len(at_init(long_text, return_tensors=True)[0]["translation_token_ids"]) <= 4


def test_long_sources_are_truncated_with_a_warning_naming_them(translator, caplog):
    text = "word " * 200  # the copier's BART has 64 positions
    with caplog.at_level(logging.WARNING):
        assert isinstance(translator(text)[0]["translation_text"], str)
    assert "'word word word" in caplog.text and "truncated to 64" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        quiet = translator.preprocess(text, truncation=True)
    assert quiet["input_ids"].shape[1] == 64 and "truncated" not in caplog.text
    whole = len(translator.tokenizer(text)["input_ids"])
    assert whole > 64 and translator.preprocess(text, truncation=False)["input_ids"].shape[1] == whole


def test_saved_folder_without_a_generation_length_is_not_cut_at_20_tokens(tmp_path, trained_copier, recwarn):
    """Regression: a folder saved without a generation length stopped every output at generate()'s default of 20."""
    _, tokenizer, _ = trained_copier
    base = tiny_base("bart", vocab_size=len(tokenizer))  # 128 positions
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id)
    model.generation_config.max_length = None  # what from_base of a Hub-less config, e.g. the quick start's, saves
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    pipe = pipeline("translation", model=str(tmp_path), trust_remote_code=True)
    eos = tokenizer.eos_token_id  # a model that never ends runs to the decoder's last position
    ids = pipe("Open the file now", suppress_tokens=[eos], return_tensors=True)[0]["translation_token_ids"]
    assert len(ids) == 1 + 128  # decoder start + max_position_embeddings new tokens
    assert not any("model-agnostic default" in str(w.message) for w in recwarn)
    short = pipe("Open the file now", suppress_tokens=[eos], max_new_tokens=7, return_tensors=True)
    assert len(short[0]["translation_token_ids"]) == 8
    pipe.model.generation_config.max_length = 24  # a saved length wins over the pipeline's default
    assert len(pipe("Open", suppress_tokens=[eos], return_tensors=True)[0]["translation_token_ids"]) == 24


# -- task prefix and languages ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def t5_copier():
    tokenizer = word_level_tokenizer(corpus_texts("train", limit=200) + ["translate English to German:"], 120)
    base = tiny_base("t5", vocab_size=128)
    base.config.task_specific_params = {
        "summarization": {"prefix": "summarize: ", "num_beams": 2},
        "translation_en_to_de": {"prefix": "translate English to German: ", "num_beams": 3, "max_length": 9},
        "translation_en_to_fr": {"prefix": "translate English to French: "},
    }
    model = PointerGeneratorForConditionalGeneration.from_base(base, unk_token_id=tokenizer.unk_token_id).eval()
    return model, tokenizer


def test_task_prefix_as_in_v4(t5_copier):
    """Regression: pipeline("translation_en_to_de", ...) was rejected and "translation" used no prefix for T5."""
    model, tokenizer = t5_copier
    with_prefix = tokenizer("translate English to German: Save")["input_ids"]
    for task in ("translation_en_to_de", "translation"):  # v4: "translation" takes the first translation_* entry
        pipe = pipeline(task, model=model, tokenizer=tokenizer)
        assert pipe.task == "translation_en_to_de" and pipe.prefix == "translate English to German: "
        assert pipe.preprocess("Save")["input_ids"][0].tolist() == with_prefix
        # the entry's other fields are generation defaults, below the call's own
        assert pipe._generate_kwargs == {"num_beams": 3, "max_length": 9}
        assert len(pipe("Save the file", return_tensors=True)[0]["translation_token_ids"]) <= 9
        assert len(pipe("Save", max_length=4, return_tensors=True)[0]["translation_token_ids"]) <= 4
    french = pipeline("translation_en_to_fr", model=model, tokenizer=tokenizer)
    assert french.prefix == "translate English to French: " and french._generate_kwargs == {}
    summarizer = pipeline("summarization", model=model, tokenizer=tokenizer, num_beams=1)
    assert summarizer.prefix == "summarize: " and summarizer._generate_kwargs == {"num_beams": 1}
    explicit = pipe.preprocess("Save", **pipe._sanitize_parameters(prefix="")[0])
    assert explicit["input_ids"][0].tolist() == tokenizer("Save")["input_ids"]
    plain = pipeline("text2text-generation", model=model, tokenizer=tokenizer)
    assert plain.prefix == "" and plain.preprocess("Save")["input_ids"][0].tolist() == tokenizer("Save")["input_ids"]


def test_language_codes(t5_copier):
    model, tokenizer = t5_copier
    pipe = PointerGeneratorText2TextPipeline(model=model, tokenizer=tokenizer, task="translation")
    code = tokenizer.convert_ids_to_tokens(10)  # any token of the vocabulary stands in for a language code
    _, generate_kwargs, _ = pipe._sanitize_parameters(tgt_lang=code)
    assert generate_kwargs["forced_bos_token_id"] == 10
    with pytest.raises(ValueError, match="tgt_lang"):
        pipe._sanitize_parameters(tgt_lang="xx_NOT_A_TOKEN")
    # "translation_en_to_de" names languages only for multilingual tokenizers (v4): not for this one
    pair = pipeline("translation_en_to_de", model=model, tokenizer=tokenizer)
    assert "forced_bos_token_id" not in pair._forward_params


def test_m2m100_languages_from_arguments_and_task_name(tmp_path):
    from testing_tokenizers import m2m100_tokenizer_folder

    tokenizer = AutoTokenizer.from_pretrained(m2m100_tokenizer_folder(tmp_path))
    base = tiny_base("m2m_100", vocab_size=1 + max(tokenizer.lang_token_to_id.values()))  # room for the codes
    texts = ["Open the file", "Delete it"]
    tokenizer.src_lang = "en"
    expected = []
    for text in texts:  # v4: tokenizer._build_translation_inputs, then generate with the forced target language
        ids = base.generate(**tokenizer(text, return_tensors="pt"), forced_bos_token_id=tokenizer.get_lang_id("de"))
        expected.append(tokenizer.decode(ids[0], skip_special_tokens=True, clean_up_tokenization_spaces=False))
    tokenizer.src_lang = "fr"
    by_name = pipeline("translation_en_to_de", model=base, tokenizer=tokenizer)
    assert _texts(by_name(texts)) == expected and tokenizer.src_lang == "en"
    tokenizer.src_lang = "fr"
    by_argument = pipeline("translation", model=base, tokenizer=tokenizer)
    assert _texts(by_argument(texts, src_lang="en", tgt_lang="de")) == expected
    encoded = by_argument.preprocess("Open", src_lang="en")["input_ids"][0].tolist()
    assert encoded[0] == tokenizer.get_lang_id("en")


# -- copy records (return_copy_info=True) ----------------------------------------------------------------------------


def test_copy_records_agree_with_generate_and_with_their_own_text(trained_copier, translator):
    """Each record's token texts join to its translation; its p_gen / attention are generate()'s copy info for that
    output; copied out-of-vocabulary words point at their own place in the input."""
    model, tokenizer, _ = trained_copier
    records = translator(MIXED, return_copy_info=True, num_beams=2, batch_size=2)
    assert _texts(records) == _texts(translator(MIXED, num_beams=2, batch_size=2))  # the option changes no text
    for text, record in zip(MIXED, records):
        assert record["source"] == text and record["protected_spans"] == []
        assert "".join(token["text"] for token in record["tokens"]) == record["translation_text"]
        spans = [token["span"] for token in record["source_tokens"] if token["span"] is not None]
        assert all(text[a:b] == token["text"] for (a, b), token in zip(spans, record["source_tokens"]))
        for token in record["tokens"]:
            assert len(token["attention"]) == len(record["source_tokens"])
            assert sum(token["attention"]) == pytest.approx(1.0, abs=1e-4)
            assert 0.0 <= token["p_gen"] <= 1.0 and 0.0 <= token["copy_share"] <= 1.0
            if token["token_id"] >= model.config.vocab_size:  # an OOV word: only copying produces it
                assert token["copy_share"] == pytest.approx(1.0, abs=1e-5)
                a, b = token["source_span"]
                assert text[a:b].strip() == token["text"].strip()
    # The numbers are generate()'s own for the same source.
    batch = translator._processor([MIXED[1]], return_tensors="pt")
    out = model.generate(**batch, num_beams=2, output_copy_info=True, max_new_tokens=model.generation_config.max_length)
    kept = [t for t, token_id in enumerate(out.sequences[0, 1:].tolist()) if token_id not in tokenizer.all_special_ids]
    assert [token["p_gen"] for token in records[1]["tokens"]] == pytest.approx(out.p_gen[0, kept].tolist(), abs=1e-5)
    assert records[1]["tokens"][0]["attention"] == pytest.approx(out.pointer_attentions[0, kept[0]].tolist(), abs=1e-5)
    assert any(token["source_span"] for token in records[1]["tokens"])
    json.dumps(records)  # plain data


def test_copy_records_of_blank_inputs_list_no_tokens(translator):
    """A blank input's translation is "" whatever the model generated, but its record listed
    the generated tokens, whose texts then no longer joined to the translation."""
    records = translator(["", "   ", NAMES[0]], return_copy_info=True, batch_size=2)
    for record in records:
        assert "".join(token["text"] for token in record["tokens"]) == record["translation_text"]
    assert [(r["translation_text"], r["tokens"]) for r in records[:2]] == [("", []), ("", [])]
    assert records[2]["tokens"] and records[2]["source_tokens"]


def test_copy_records_of_an_nfd_source_span_its_combining_marks(translator):
    """The NFC normalizer composes "e" + U+0301, whose offsets end before the mark, so the
    mark belonged to no source token and a copied "Cafe" + U+0301 pointed at "Cafe". Source tokens take in the marks
    after them, as the copied words do."""
    text = "Open Cafe\u0301 now"
    [record] = translator([text], return_copy_info=True)
    assert record["translation_text"] == text
    spans = [token["span"] for token in record["source_tokens"] if token["span"] is not None]
    assert all(text[a:b] == token["text"] for (a, b), token in zip(spans, record["source_tokens"]))
    assert sorted(i for a, b in spans for i in range(a, b)) == list(range(len(text)))  # every character, once
    copied = [token for token in record["tokens"] if token["source_span"] is not None]
    assert any("\u0301" in token["text"] for token in copied)
    assert all(text[slice(*token["source_span"])] == token["text"] for token in copied)


def test_copy_records_mark_protected_spans_and_need_a_copy_model(translator, tmp_path):
    [record] = translator(["Delete %(name)s from {folder}"], return_copy_info=True, protect="placeholders")
    assert sorted(record["protected_spans"]) == ["%(name)s", "{folder}"]
    marked = "".join(token["text"] for token in record["tokens"] if token["protected"])
    assert "%(name)s" in marked and "{folder}" in marked
    several = translator(NAMES[0], return_copy_info=True, num_return_sequences=2, num_beams=2)
    assert len(several) == 2 and all("tokens" in record for record in several)
    plain = pipeline("translation", model=tiny_base("bart"), tokenizer=translator.tokenizer)
    with pytest.raises(ValueError, match="needs a pointer-generator"):
        plain("Open", return_copy_info=True)
