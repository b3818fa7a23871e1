"""training/terminology.py: the dictionary reader, which entries a pair supports, and the training annotation."""

from hf_pgen.glossary import DEFAULT_GLOSSARY_ANNOTATION
from training.terminology import TermIndex, augment_with_terms, load_dictionary

# FreeDict's dictd layout: a headword line `term /IPA/`, then the targets with grammatical tags and notes.
FREEDICT = """storage /ˈstɔːrɪdʤ/
Lager <neut>, Speicher <masc> [comp.], Aufbewahrung (von etw.)

milestone /ˈmaɪlstəʊn/
Meilenstein <masc>

the /ðə/
der, die, das

remove sth. /rɪˈmuːv/
etw. entfernen
"""


def test_load_dictionary_reads_freedict_entries_without_tags_or_placeholder_targets(tmp_path):
    path = tmp_path / "eng-deu.dict"
    path.write_text(FREEDICT, encoding="utf-8")
    entries = load_dictionary(path)
    assert entries["storage"] == ["Lager", "Speicher", "Aufbewahrung"]
    assert entries["milestone"] == ["Meilenstein"]
    assert "remove sth." not in entries  # its one target, "etw. entfernen", holds a placeholder


def test_supported_terms_are_content_words_whole_in_source_and_reference_outside_placeholders():
    index = TermIndex(
        {
            "storage": ["Speicher"],
            "milestone": ["Meilenstein"],
            "the": ["die"],
            "date": ["Datum"],
            "version": ["Version"],
        }
    )
    assert index.supported(
        "Delete the storage of milestone %(date)s", "Den Speicher von Meilenstein %(date)s löschen"
    ) == [("storage", "Speicher"), ("milestone", "Meilenstein")]
    # "the" is grammar (too short), "date" sits inside a placeholder, "Speicherplatz" is not the whole word, and
    # "versions" is not "version".
    assert index.supported("the storage versions", "die Speicherplatz Versionen") == []


def test_augmentation_annotates_between_one_and_all_supported_terms_in_rate_of_the_pairs():
    index = TermIndex({"storage": ["Speicher"], "milestone": ["Meilenstein"], "report": ["Bericht"]})
    source, reference = "Move the storage report to the milestone", "Den Speicher-Bericht zum Meilenstein verschieben"
    pairs = [(source, reference)] * 200 + [("Nothing here", "Nichts hier")] * 20
    annotated, count = augment_with_terms(*zip(*pairs), index, DEFAULT_GLOSSARY_ANNOTATION, rate=0.5, seed=0)
    assert annotated[-20:] == ["Nothing here"] * 20  # nothing supported: unchanged
    changed = [text for text in annotated[:200] if text != source]
    assert count == len(changed) and 60 < count < 140  # about half of the supporting pairs
    used = {text.count(" [ ") for text in changed}
    assert used == {1, 2, 3}  # one to all three, each written as the annotation writes it
    assert (
        "storage [ Speicher ]" in changed[0]
        or "milestone [ Meilenstein ]" in changed[0]
        or ("report [ Bericht ]" in changed[0])
    )
    assert augment_with_terms([source], [reference], index, DEFAULT_GLOSSARY_ANNOTATION, rate=0.0)[0] == [source]
