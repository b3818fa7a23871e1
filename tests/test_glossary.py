"""Glossaries (`hf_pgen.glossary`): the term base and its errors, where entries apply, the annotation, and the
guarantee, checked against oracles: a perfect translation must come out unchanged, and a model that ignores the
terms must still put each one out (once, where it wrote none), nothing else changed."""

import random
import warnings

import pytest
import torch
from testing_oracles import CopyTheSource, oracle_copy_model
from testing_utils import corpus_texts, tiny_base
from transformers import LogitsProcessorList

from hf_pgen import PointerGeneratorProcessor
from hf_pgen.glossary import DEFAULT_GLOSSARY_ANNOTATION, Glossary, annotate, check_annotation
from hf_pgen.tokenizer_training import train_shared_tokenizer


# ------------------------------------------------------------------------------------------------ the term base
def test_entries_apply_as_whole_words_the_longer_of_two_overlapping_matches_winning():
    glossary = Glossary({"storage": "Speicher", "storage space": "Speicherplatz", "file": "Datei", "list": "Liste"})
    text = "Free up storage space in storage. The file list, files and filestorage stay."
    found = [(m.source, text[m.start : m.end], m.target) for m in glossary.find(text)]
    assert found == [
        ("storage space", "storage space", "Speicherplatz"),
        ("storage", "storage", "Speicher"),
        ("file", "file", "Datei"),
        ("list", "list", "Liste"),
        ("file", "files", "Datei"),  # an inflected form; "filestorage" is another word
    ]
    assert Glossary({"Storage": "Speicher"}).find("storage") == []  # a text does not lower a capital
    matches = Glossary({"Storage": "Speicher"}, ignore_case=True).find("sToRaGe and storage")
    assert [(m.start, m.end, m.target) for m in matches] == [(0, 7, "Speicher"), (12, 19, "Speicher")]
    # where two overlap, the longer wins though it starts later
    assert [m.source for m in Glossary({"open file": "a", "file list view": "b"}).find("open file list view")] == [
        "file list view"
    ]


@pytest.mark.parametrize(
    "entry, text, written",
    [
        ("server", "Restart all servers now", "servers"),  # plural
        ("access point", "Two access points", "access points"),  # each word of the entry
        ("upload", "Uploading files", "Uploading"),  # -ing, at a sentence start
        ("upload", "The file was uploaded.", "uploaded"),  # -ed
        ("create", "Create a folder", "Create"),  # sentence start
        ("cache", "Send a Cache-Control header", "Cache"),  # a capital in a compound
        ("index", "Rebuild the indices", "indices"),  # irregular: the dictionary's form
        ("reboot", "It reboots at night", "reboots"),  # not in the dictionary: the spelling rules
        ("unzip", "the unzipped files", "unzipped"),  # consonant doubling
        ("access point", "ACCESS POINTS", "ACCESS POINTS"),  # all capitals
        ("access point", "Configure Access Points", "Access Points"),  # title case
        ("API", "Two APIs", "APIs"),  # an acronym's plural
        ("access point", "access\npoints", "access\npoints"),  # any whitespace
    ],
)
def test_an_entry_applies_to_the_forms_a_text_gives_its_lemma(entry, text, written):
    [match] = Glossary({entry: "X"}).find(text)
    assert text[match.start : match.end] == written and match.source == entry
    assert Glossary({entry: "X"}, match="exact").find(text) == [] or written == entry


@pytest.mark.parametrize(
    "entry, text",
    [
        ("connect", "the connection failed"),  # a derivation is another word, not a form
        ("generate", "the next generation"),
        ("Python", "python -m pip"),  # a text does not lower a capital a name has
        ("file", "profile"),  # whole words only
        ("C++", "C++11"),
        (".NET", "ASP.NET"),
        ("date", "Today is %(date)s"),  # a placeholder's name is code (apply_glossaries leaves it out)
    ],
)
def test_an_entry_does_not_apply_to_other_words(entry, text):
    from hf_pgen.glossary import apply_glossaries

    assert apply_glossaries([text], Glossary({entry: "X"}), None)[2] == [[]]


def test_nfc_and_nfd_text_and_entries_match_alike_with_offsets_into_the_text_as_given():
    import unicodedata

    for text_form in ("NFC", "NFD"):
        for entry_form in ("NFC", "NFD"):
            text = unicodedata.normalize(text_form, "Open the café now, then the Cafés")
            entry = unicodedata.normalize(entry_form, "café")
            found = [text[m.start : m.end] for m in Glossary({entry: "Kaffee"}).find(text)]
            assert found == [unicodedata.normalize(text_form, w) for w in ("café", "Cafés")], (text_form, entry_form)


def test_ignore_case_matches_any_case_and_never_crashes_on_letters_whose_case_changes_their_length():
    assert Glossary({"İstanbul": "Istanbul"}, ignore_case=True).find("visit Istanbul now") == []  # no KeyError
    assert Glossary({"ı": "i"}, ignore_case=True).find("I") == []
    [match] = Glossary({"straße": "street"}, ignore_case=True).find("die STRASSE")  # casefold: ß is ss
    assert match.target == "street"
    with pytest.raises(ValueError, match="match='fuzzy' is not one of"):
        Glossary({"a": "b"}, match="fuzzy")


def test_a_term_base_file_reads_as_tsv_or_csv(tmp_path):
    tsv = tmp_path / "terms.tsv"
    tsv.write_text("storage\tSpeicher\n\nfile list\tDateiliste\n", encoding="utf-8")
    csv = tmp_path / "terms.csv"
    csv.write_text('storage,Speicher\n"Save, then quit","Speichern, dann beenden"\n', encoding="utf-8")
    assert Glossary.from_file(tsv).items() == [("storage", "Speicher"), ("file list", "Dateiliste")]
    assert Glossary.from_file(csv).items() == [("storage", "Speicher"), ("Save, then quit", "Speichern, dann beenden")]


@pytest.mark.parametrize(
    "content, message",
    [
        ("storage\tSpeicher\nfile list\n", "terms.tsv, line 2 has 1 column"),
        ("storage\tSpeicher\tSpeicherplatz\n", "line 1 has 3 column"),
        ("storage\t \n", "line 1 has an empty target term"),
        ("storage\tSpeicher\nstorage\tAblage\n", "line 2 gives 'storage' a second target term"),
    ],
    ids=["one-column", "three-columns", "empty-term", "two-targets"],
)
def test_a_bad_term_base_line_is_a_clear_error_naming_the_line(tmp_path, content, message):
    path = tmp_path / "terms.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Glossary.from_file(path)


def test_bad_entries_and_formats_are_clear_errors():
    with pytest.raises(ValueError, match="empty source term"):
        Glossary({"": "x"})
    with pytest.raises(ValueError, match="second target term.*ignore_case=True matches both"):
        Glossary({"Storage": "Speicher", "storage": "Ablage"}, ignore_case=True)
    with pytest.raises(TypeError, match="target term must be a string"):
        Glossary({"storage": 3})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Glossary.from_file("no-such-terms.tsv")
    for bad in ("{source}", "{target} {target}", "{target} {lang}", "{target"):
        with pytest.raises(ValueError, match="glossary_annotation"):
            check_annotation(bad)


def test_the_annotation_records_where_targets_and_its_own_text_stand():
    text = "Free storage now"
    matches = Glossary({"storage": "Speicher"}).find(text)
    annotated, targets, added, sources = annotate(text, matches, DEFAULT_GLOSSARY_ANNOTATION)
    assert annotated == "Free storage [ Speicher ] now"
    assert [annotated[a:b] for a, b in targets] == ["Speicher"]
    assert [annotated[a:b] for a, b in added] == [" [ Speicher ]"]
    assert [annotated[a:b] for a, b in sources] == ["storage"]
    annotated, targets, added, sources = annotate(text, matches, "{target}")  # replace: the source term goes
    assert (annotated, sources) == ("Free Speicher now", [])


# --------------------------------------------------------------------------------- processor, model, pipeline
@pytest.fixture(scope="module")
def bpe_tokenizer():
    return train_shared_tokenizer(corpus_texts("train", limit=1500), "bpe", vocab_size=700)


def test_inputs_no_entry_applies_to_decode_exactly_as_without_a_glossary(bpe_tokenizer):
    model = oracle_copy_model(bpe_tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, bpe_tokenizer)
    texts = ["Free up storage now", "Open the settings", "Nothing to translate here"]
    plain = processor(texts, return_tensors="pt", padding=True)
    glossed = processor(texts, glossary={"storage": "Speicher"}, return_tensors="pt", padding=True)
    assert [len(entry["spans"]) for entry in glossed["protected_spans"]] == [1, 0, 0]
    torch.manual_seed(0)
    without = processor.batch_decode(model.generate(**plain, max_new_tokens=12, num_beams=2), plain)
    torch.manual_seed(0)
    with_terms = processor.batch_decode(model.generate(**glossed, max_new_tokens=12, num_beams=2), glossed)
    assert with_terms[1:] == without[1:]
    assert "Speicher" in with_terms[0] and "Speicher" not in without[0]


def test_the_glossary_call_checks_modes_lists_and_conflicts(bpe_tokenizer):
    model = oracle_copy_model(bpe_tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, bpe_tokenizer)
    with pytest.raises(ValueError, match="has no glossary_annotation"):
        processor(["Free storage"], glossary={"storage": "Speicher"}, glossary_mode="hint")
    with pytest.raises(ValueError, match="glossary_mode='strict' is not one of"):
        processor(["Free storage"], glossary={"storage": "Speicher"}, glossary_mode="strict")
    with pytest.raises(ValueError, match="list of 1 term base.* for 2 input"):
        processor(["a", "b"], glossary=[{"storage": "Speicher"}])
    with pytest.raises(ValueError, match="overlaps the glossary's source term 'storage space'"):
        processor(["Free storage space"], glossary={"storage space": "Speicherplatz"}, protect=["space"])
    per_input = processor(["Free storage", "Free storage"], glossary=[{"storage": "Speicher"}, None])
    assert [[s["text"] for s in e["spans"]] for e in per_input["protected_spans"]] == [["Speicher"], []]
    hinted = PointerGeneratorProcessor(
        bpe_tokenizer, model.config.vocab_size, glossary_annotation="{source} ({target})"
    )
    batch = hinted(["Free storage"], glossary={"storage": "Speicher"}, glossary_mode="hint")
    assert bpe_tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True) == "Free storage (Speicher)"
    assert "protected_spans" not in batch  # a hint forces nothing


def test_the_annotation_is_saved_with_the_model_and_read_back_by_the_processor_and_pipeline(bpe_tokenizer, tmp_path):
    from transformers import pipeline

    model = oracle_copy_model(bpe_tokenizer)
    model.config.glossary_annotation = DEFAULT_GLOSSARY_ANNOTATION
    model.save_pretrained(tmp_path)
    bpe_tokenizer.save_pretrained(tmp_path)
    assert PointerGeneratorProcessor.from_pretrained(tmp_path).glossary_annotation == DEFAULT_GLOSSARY_ANNOTATION
    pipe = pipeline("translation", model=str(tmp_path))
    records = pipe("Free storage now", glossary={"storage": "Speicher"}, return_copy_info=True, max_new_tokens=12)
    assert records[0]["source"] == "Free storage [ Speicher ] now"  # what the model read
    assert "Speicher" in records[0]["translation_text"]


def test_a_plain_base_places_terms_spelled_from_its_vocabulary_and_names_those_it_cannot_spell(bpe_tokenizer):
    from transformers import pipeline

    def plain(tokenizer):
        return tiny_base(
            "bart", tokenizer=tokenizer, d_model=16, layers=1, heads=2, bos_token_id=None, max_position_embeddings=64
        )

    pipe = pipeline("translation", model=plain(bpe_tokenizer), tokenizer=bpe_tokenizer)
    outputs = pipe(["Free storage and storage", "Open it"], glossary={"storage": "Speicher"}, max_new_tokens=16)
    assert outputs[0]["translation_text"].count("Speicher") >= 1
    assert "Speicher" not in outputs[1]["translation_text"]
    with pytest.raises(ValueError, match="has no glossary_annotation"):
        pipe("Free storage", glossary={"storage": "Speicher"}, glossary_mode="hint")
    # A plain model trained to read the annotation (run_translation --no_copy_mechanism --glossary_augmentation) gets
    # it written in: the same output as the annotated text itself, nothing forced.
    model = plain(bpe_tokenizer)
    model.config.glossary_annotation = DEFAULT_GLOSSARY_ANNOTATION
    pipe = pipeline("translation", model=model, tokenizer=bpe_tokenizer)
    hinted = pipe(
        ["Free storage and storage", "Open it"],
        glossary={"storage": "Speicher"},
        glossary_mode="hint",
        max_new_tokens=16,
    )
    assert hinted == pipe(["Free storage [ Speicher ] and storage [ Speicher ]", "Open it"], max_new_tokens=16)

    words = train_shared_tokenizer(corpus_texts("train", limit=800), "wordlevel", vocab_size=300)
    pipe = pipeline("translation", model=plain(words), tokenizer=words)
    with pytest.warns(UserWarning, match="Glossary term 'Zyxwvut' of source 0 cannot be spelled.*not guaranteed"):
        pipe("Open the file", glossary={"file": "Zyxwvut"}, max_new_tokens=8)


def test_a_copy_model_not_trained_on_the_annotation_reads_its_source_unchanged():
    """Writing a term into the source (`files [ Dateien ]`) would be read as text by a model not trained on it, and a
    copy model copies it out: the source stays as it is. A term whose text the source holds (an identity entry, a
    name) is spelled by copying it from there; the words of one the vocabulary lacks get slots of their own in the
    example's table, which only the rules place (once, where the model would end), and which decode back."""
    from transformers import pipeline

    words = train_shared_tokenizer(corpus_texts("train", limit=800), "wordlevel", vocab_size=300)
    model = oracle_copy_model(words)
    processor = PointerGeneratorProcessor.from_model(model, words)
    assert processor.glossary_sources(["Open the Zyxwvut", "Open it"], {"Zyxwvut": "Qqqq"}) == [
        "Open the Zyxwvut",
        "Open it",
    ]
    batch = processor(["Open the Zyxwvut"], glossary={"Zyxwvut": "Zyxwvut"}, return_tensors="pt")
    [span] = batch["protected_spans"][0]["spans"]
    slot = model.config.vocab_size + batch["oov_words"][0].index("Zyxwvut")
    assert span["text"] == "Zyxwvut" and [slot] in span["sequences"]  # a copy of the source's own word
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # placed, so nothing to warn about
        batch = processor(
            ["Open the Zyxwvut", "Open it"], glossary={"Zyxwvut": "Qqqq"}, padding=True, return_tensors="pt"
        )
    assert batch["oov_words"][0][-1] == "Qqqq" and len(batch["oov_spacing"][0]) == len(batch["oov_words"][0])
    [span] = batch["protected_spans"][0]["spans"]
    assert span["sequences"] == [[model.config.vocab_size + len(batch["oov_words"][0]) - 1]]
    targets = [ids[m.bool()].tolist() for ids, m in zip(batch["extended_input_ids"], batch["attention_mask"])]
    outputs, _ = _oracle_decode(model, processor, batch, targets, {"num_beams": 2}, room=8)
    assert outputs == ["Open the Zyxwvut Qqqq", "Open it"]
    pipe = pipeline("translation", model=model, tokenizer=words)  # the pipeline decodes with the gained slot too
    torch.manual_seed(0)
    assert (
        pipe("Open the Zyxwvut", glossary={"Zyxwvut": "Qqqq"}, max_new_tokens=8)[0]["translation_text"].count("Qqqq")
        == 1
    )


def test_entries_of_a_per_input_glossary_that_apply_nowhere_in_their_input_are_named(bpe_tokenizer):
    from transformers import pipeline

    model = oracle_copy_model(bpe_tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, bpe_tokenizer)
    with pytest.warns(UserWarning, match=r"apply nowhere in their input.*input 0: 'disk'; input 1: 'file'") as caught:
        processor(["Restart the servers", "Open it"], glossary=[{"server": "Server", "disk": "Platte"}, {"file": "D"}])
    assert "'server'" not in str(caught[0].message)  # "servers" is its plural: it applies
    # A term base shared by every input mostly does not apply to a given text: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        processor(["Restart the servers", "Open it"], glossary={"server": "Server", "disk": "Platte"})
    # The pipeline names the input by its place in the call, whatever its batching.
    pipe = pipeline("translation", model=model, tokenizer=bpe_tokenizer)
    with pytest.warns(UserWarning, match=r"input 2: 'disk'"):
        pipe(["a", "b", "Open the disks", "c"], glossary=[None, {}, {"disks": "x", "disk": "Platte"}, None])


def test_a_per_input_glossary_list_with_inputs_without_one_batches(bpe_tokenizer):
    """`glossary=[dict, None, dict]` (None: an input without a term base) in batches of 2 decodes each input as alone."""
    from transformers import pipeline

    model = oracle_copy_model(bpe_tokenizer)
    pipe = pipeline("translation", model=model, tokenizer=bpe_tokenizer)
    texts = ["Delete the files now", "Open it", "Save the files"]
    glossaries = [{"files": "Dateien"}, None, {"files": "Akten"}]
    batched = pipe(texts, glossary=glossaries, batch_size=2, max_new_tokens=12)
    alone = [pipe(text, glossary=glossary, max_new_tokens=12)[0] for text, glossary in zip(texts, glossaries)]
    assert batched == alone
    assert "Dateien" in batched[0]["translation_text"] and "Akten" in batched[2]["translation_text"]


# ------------------------------------------------------------------------------------------------------ oracles
FAMILIES = ("wordlevel", "unigram", "wordpiece", "bpe")
SETTINGS = [{}, {"num_beams": 3}, {"do_sample": True, "num_return_sequences": 2}]
SETTING_IDS = ["greedy", "beam3", "sample-2returns"]


@pytest.fixture(scope="module", params=FAMILIES)
def family_tokenizer(request):
    return request.param, train_shared_tokenizer(
        corpus_texts("train", limit=1500), request.param, vocab_size=400 if request.param == "wordlevel" else 700
    )


def _random_glossaries(rng: random.Random, sources: list[str], german: list[str]) -> list[dict[str, str]]:
    """Per source, 0-2 entries: a word or two words of it (source terms) -> German words it does not hold."""
    glossaries = []
    for source in sources:
        words = [w for w in source.split() if w.isalpha()]
        entries = {}
        for _ in range(rng.randint(0, 2)):
            if not words:
                break
            start = rng.randrange(len(words))
            term = " ".join(words[start : start + rng.choice([1, 1, 2])])
            target = " ".join(rng.sample(german, rng.choice([1, 1, 2])))
            if target.lower() not in source.lower() and term not in entries:
                entries[term] = target
        glossaries.append(entries)
    return glossaries


def _room(batch, targets) -> int:
    """Room for the whole target and every term the rules may add to it (the budget rule is tested elsewhere)."""
    spans = batch.get("protected_spans") or []
    terms = max((sum(max(map(len, s["sequences"])) * s["count"] for s in entry["spans"]) for entry in spans), default=0)
    return max(len(t) for t in targets) + terms + 8


def _oracle_decode(model, processor, batch, targets, settings, room, seed=0):
    torch.manual_seed(seed)
    oracle = CopyTheSource(targets, model.config.eos_token_id, seed=seed)
    ids = model.generate(**batch, logits_processor=LogitsProcessorList([oracle]), max_new_tokens=room, **settings)
    return processor.batch_decode(ids, batch), ids.shape[0] // batch["input_ids"].shape[0]


def _german_words() -> list[str]:
    from hf_pgen.corpus import load_en_de_messages

    words = {
        w
        for record in load_en_de_messages("train")
        for w in record["translation"]["de"].split()
        if w.isalpha() and len(w) >= 5
    }
    return sorted(words)[:400]


@pytest.mark.slow
@pytest.mark.parametrize("annotation", [None, DEFAULT_GLOSSARY_ANNOTATION], ids=["plain", "annotated"])
@pytest.mark.parametrize("settings", SETTINGS, ids=SETTING_IDS)
def test_a_perfect_translation_comes_out_unchanged(family_tokenizer, settings, annotation):
    """The oracle writes the reference (the source with each source term replaced by its target term): it already
    holds every term, so the guarantee must change nothing. (Without the annotation a target the vocabulary cannot
    spell is not in the reference the model can write, only its unknown token: the guarantee then adds it, see
    test_a_copy_model_not_trained_on_the_annotation_reads_its_source_unchanged. Such targets are left out here.)"""
    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor(tokenizer, model.config.vocab_size, glossary_annotation=annotation)
    rng, german = random.Random(7), _german_words()
    if annotation is None:
        german = [w for w in german if tokenizer.unk_token_id not in tokenizer(" " + w)["input_ids"]]
        if len(german) < 20:  # a small word-level vocabulary holds few German words: its own words serve as targets
            german = sorted(w.lstrip("▁") for w in tokenizer.get_vocab() if w.lstrip("▁").isalpha() and len(w) >= 6)
    base = corpus_texts("test", limit=300)
    for _ in range(3):
        sources = rng.sample(base, 3)
        glossaries = _random_glossaries(rng, sources, german)
        references = []
        for source, glossary in zip(sources, glossaries):
            matches = Glossary(glossary).find(source)
            references.append(annotate(source, matches, "{target}")[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # terms a word-level vocabulary cannot spell (named in a warning)
            batch = processor(sources, text_target=references, glossary=glossaries, return_tensors="pt", padding=True)
        labels = batch.pop("labels")
        targets = [[t for t in row.tolist() if t != -100][:-1] for row in labels]  # without the final EOS
        plain = {k: v for k, v in batch.items() if k != "protected_spans"}
        expected, _ = _oracle_decode(model, processor, plain, targets, settings, _room(batch, targets))
        got, _ = _oracle_decode(model, processor, batch, targets, settings, _room(batch, targets))
        assert got == expected, (family, sources, glossaries)


@pytest.mark.parametrize("settings", SETTINGS, ids=SETTING_IDS)
def test_a_translation_may_use_a_term_fewer_or_more_times_than_its_source_term_occurs(settings):
    """A term is guaranteed at least once. A translation that merges two occurrences into one ("the extension ... the
    extension author": "Erweiterung ... Erweiterungsautor") must not get the second forced in, and one that uses the
    term twice for one occurrence must not have the second banned: the guarantee changes neither."""
    tokenizer = train_shared_tokenizer(corpus_texts("train", limit=1500), "unigram", vocab_size=700)
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    sources = ["the extension failed, ask the extension author", "Show the file and the file size"]
    glossaries = [{"extension": "Erweiterung"}, {"size": "Datei"}]
    references = [
        "die Erweiterung ist fehlgeschlagen, fragen Sie den Erweiterungsautor",
        "Die Datei und die Datei zeigen",
    ]
    batch = processor(sources, text_target=references, glossary=glossaries, return_tensors="pt", padding=True)
    labels = batch.pop("labels")
    targets = [[t for t in row.tolist() if t != -100][:-1] for row in labels]
    plain = {k: v for k, v in batch.items() if k != "protected_spans"}
    expected, _ = _oracle_decode(model, processor, plain, targets, settings, _room(batch, targets))
    assert [text.count("Erweiterung") for text in expected[:1]] == [2] and expected[-1].count("Datei") == 2
    got, _ = _oracle_decode(model, processor, batch, targets, settings, _room(batch, targets))
    assert got == expected


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS, ids=SETTING_IDS)
def test_a_model_that_ignores_the_terms_still_puts_each_out_as_often_as_its_source_term(family_tokenizer, settings):
    """The oracle copies the source and never writes a term: every output must still hold each target term, once
    where the copy holds none (a term is guaranteed at least once, not once per occurrence: nothing forces a second);
    outputs of sources no entry applies to stay the copy."""
    family, tokenizer = family_tokenizer
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    # terms the vocabulary can spell (without the annotation nothing else can: the others are warned about)
    german = [w for w in _german_words() if tokenizer.unk_token_id not in tokenizer(" " + w)["input_ids"]]
    if len(german) < 20:  # a small word-level vocabulary holds few German words: its own words serve as targets
        german = sorted(w.lstrip("▁") for w in tokenizer.get_vocab() if w.lstrip("▁").isalpha() and len(w) >= 6)
    rng, base = random.Random(11), corpus_texts("test", limit=300)
    for _ in range(4):
        sources = rng.sample(base, 3)
        glossaries = _random_glossaries(rng, sources, german)
        batch = processor(sources, glossary=glossaries, return_tensors="pt", padding=True)
        targets = [ids[mask.bool()].tolist() for ids, mask in zip(batch["extended_input_ids"], batch["attention_mask"])]
        plain = {k: v for k, v in batch.items() if k != "protected_spans"}
        copies, per = _oracle_decode(model, processor, plain, targets, settings, _room(batch, targets))
        outputs, _ = _oracle_decode(model, processor, batch, targets, settings, _room(batch, targets))
        for row, output in enumerate(outputs):
            source, glossary = sources[row // per], glossaries[row // per]
            matches = Glossary(glossary).find(source)
            if not matches:
                assert output == copies[row], (family, source)
            for target in {m.target for m in matches}:
                assert output.count(target) == max(1, copies[row].count(target)), (family, source, glossary, output)


@pytest.mark.slow
def test_the_shortcut_for_calm_rows_decides_glossary_rows_as_the_full_rules_do(family_tokenizer):
    """The per-row engine carries a parent's rules over to a row whose last token touches no span: a saving, never
    another decision. A glossary term reads as a word, so where it may start changes with each token (after a word
    character only with a space first): the same random rows (beams forking, sampled tokens, term tokens, rows that
    want to end) get the same scores with the shortcut as with the full rules at every step."""
    from hf_pgen import logits_process_pointer_generator as engine_module

    family, tokenizer = family_tokenizer
    processor = PointerGeneratorProcessor(tokenizer, len(tokenizer))
    rng, german = random.Random(3), _german_words()
    sources = rng.sample(corpus_texts("test", limit=300), 6)
    glossaries = [entries or {sources[i].split()[0]: german[i]} for i, entries in
                  enumerate(_random_glossaries(rng, sources, german))]  # fmt: skip
    entries = processor(sources, glossary=glossaries, protect="placeholders", padding=True)["protected_spans"]
    eos, width, per_example = tokenizer.eos_token_id, len(tokenizer) + 6, 3
    shortcut = engine_module.ProtectedSpansLogitsProcessor(entries, eos_token_id=eos, max_new_tokens=24)
    full = engine_module.ProtectedSpansLogitsProcessor(entries, eos_token_id=eos, max_new_tokens=24)
    full._carry_on = lambda *args, **kwargs: engine_module._UNDECIDED  # every row through the full rules
    term_tokens = sorted({t for ex in shortcut.examples for vs in ex.variants for v in vs for t in v})
    rows = [[eos] for _ in range(len(entries) * per_example)]
    for step in range(20):
        input_ids, scores = torch.tensor(rows), torch.randn(len(rows), width)
        scores[rng.randrange(4) :: 4, eos] = 10.0  # some rows want to end
        got = shortcut(input_ids, scores.clone())
        expected = full(input_ids, scores.clone())
        assert torch.equal(got, expected), (family, step, (got != expected).any(-1).nonzero().flatten().tolist())
        parents = [rows[(r // per_example) * per_example + rng.randrange(per_example)] for r in range(len(rows))]
        rows = []
        for r, parent in enumerate(parents):
            pick = rng.random()
            token = (
                rng.choice(term_tokens) if pick < 0.2 else rng.randrange(width) if pick < 0.3 else int(got[r].argmax())
            )
            rows.append(parent + [token])
