"""Does a real term base's entry reach the output where a real text inflects or capitalises it?

Term bases give lemmas (`server`, `access point`, `upload`); documentation says `servers`, `Access Points`,
`uploading`, `Create a folder`. This measures the glossary guarantee the way the WMT terminology task does (a term
counts when its target form appears in the output, lower-cased) on texts nobody on the team wrote:

- *texts*: sentences of the Python standard library's docstrings (documentation, PSF licence, installed with
  Python) and the embedded corpus' `heldout_tools` split (messages of command-line tools, never used for tuning);
- *terms*: Debian's FreeDict English-German dictionary (`make dictionary`), its headwords as they stand (lemmas),
  content words only (as `training/terminology.py` picks them);
- *which entries a text holds*: decided by an independent lemmatizer, `simplemma` (a dictionary lookup, not the
  `lemminflect` forms hf_pgen matches with): an entry applies where each of its words is a text word or that word's
  lemma, lower-cased. Each text gets the entries it holds as its own term base (the list form), as a translator's
  per-document term list, with the first German target of each.

Every text is then decoded with its term base guaranteed (`glossary_mode="guarantee"`) by a perfect copier (the
tests' scripted oracle over a unigram tokenizer trained on the corpus: it copies its source, so every target term is
one the guarantee put there) under `glossary_match="inflected"` (the default) and `"exact"` (how entries matched
before). Reported per text set and setting: guaranteed TSR, the entries the library found and did not, and whether
every miss was named in a warning (the per-input "apply nowhere" warning, or a term the model cannot spell).

    python -m experiments.term_bases                 # -> experiments/results/term_bases.{json,md}
    python -m experiments.term_bases --limit 50      # a smoke run
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import random
import re
import sys
import warnings
from pathlib import Path

from training.terminology import without_placeholders

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted oracle (tests/testing_oracles.py), read only

# Standard-library modules whose docstrings are user documentation (not tests, not private helpers).
STDLIB = (
    "argparse", "asyncio", "base64", "bz2", "calendar", "cmd", "codecs", "collections", "concurrent.futures",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email.message",
    "enum", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib", "functools", "getpass", "gettext", "glob",
    "gzip", "hashlib", "heapq", "hmac", "html.parser", "http.client", "http.server", "imaplib", "inspect",
    "ipaddress", "itertools", "json", "locale", "logging", "logging.handlers", "lzma", "mailbox", "mimetypes",
    "multiprocessing", "netrc", "numbers", "operator", "optparse", "os", "pathlib", "pickle", "pkgutil", "platform",
    "poplib", "pprint", "queue", "random", "re", "sched", "secrets", "selectors", "shelve", "shlex", "shutil",
    "signal", "smtplib", "socket", "socketserver", "sqlite3", "ssl", "statistics", "string", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "timeit", "tomllib", "trace", "traceback", "types", "typing",
    "unittest", "urllib.parse", "urllib.request", "uuid", "venv", "warnings", "weakref", "webbrowser", "wsgiref",
    "xml.dom.minidom", "xml.etree.ElementTree", "zipfile", "zipimport",
)  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def docstring_sentences() -> list[str]:
    """Prose sentences of 6 to 40 words from the docstrings of `STDLIB`'s public functions, classes and methods."""
    sentences: dict[str, None] = {}
    for name in STDLIB:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module] + [v for k, v in vars(module).items() if not k.startswith("_")]
        objects += [m for o in objects if inspect.isclass(o) for k, m in vars(o).items() if not k.startswith("_")]
        for obj in objects:
            doc = inspect.getdoc(obj) if callable(obj) or inspect.ismodule(obj) else None
            for paragraph in (doc or "").split("\n\n"):
                if any(line.startswith((" ", ">>>", "...")) for line in paragraph.splitlines()):
                    continue  # code, doctests, tables
                for sentence in _SENTENCE_END.split(" ".join(paragraph.split())):
                    words = sentence.split()
                    if 6 <= len(words) <= 40 and sentence[0].isupper() and not re.search(r"[=(){}\[\]_`]", sentence):
                        sentences[sentence] = None
    return list(sentences)


def heldout_messages() -> list[str]:
    from hf_pgen.corpus import load_en_de_messages

    return [pair["en"] for pair in load_en_de_messages("heldout_tools")["translation"] if len(pair["en"].split()) >= 4]


class Lemmas:
    """Text words and their lemmas (`simplemma`), lower-cased: what an entry's words are matched against."""

    def __init__(self):
        import simplemma

        self._lemmatize = simplemma.lemmatize

    def words(self, text: str) -> list[set[str]]:
        """Per word of `text` (placeholders are code, not words: `%(exception)s`), the forms an entry word may equal:
        the word and its lemma, lower-cased."""
        return [
            {w.lower(), self._lemmatize(w, lang="en").lower()} for w in re.findall(r"\w+", without_placeholders(text))
        ]

    def is_lemma(self, word: str) -> bool:
        return self._lemmatize(word, lang="en").lower() == word.lower()


def entries_held(text: str, words: list[set[str]], by_first: dict[str, list[tuple[tuple[str, ...], str, str]]]):
    """The dictionary entries whose words stand, in order, as words of `text` or their lemmas; where two cover one
    word (FreeDict lists `service` and `services`, `paste` and `paste into`), the longer, then the one that stands as
    written, as a term list for the text would give one entry per place."""
    candidates = []
    surface = [w.lower() for w in re.findall(r"\w+", without_placeholders(text))]
    for position, forms in enumerate(words):
        for first in forms:
            for term_words, term, target in by_first.get(first, ()):
                span = words[position : position + len(term_words)]
                if len(span) == len(term_words) and all(w in f for w, f in zip(term_words, span)):
                    exact = tuple(surface[position : position + len(term_words)]) == term_words
                    candidates.append((-len(term_words), not exact, position, term, target))
    taken: set[int] = set()
    found: dict[str, str] = {}
    for length, _, position, term, target in sorted(candidates):
        covered = set(range(position, position - length))
        if not covered & taken and term not in found:
            taken |= covered
            found[term] = target
    return found


def dictionary_index(path: str, lemmas: Lemmas) -> dict[str, list[tuple[tuple[str, ...], str, str]]]:
    """FreeDict's content-word entries (as `training.terminology.TermIndex` keeps them) whose headword is a lemma, as
    term bases write them (FreeDict also lists inflected forms, `services`, `pasted`: left out), by their first word:
    (words, headword, first German target)."""
    from training.terminology import TermIndex, load_dictionary

    index = TermIndex(load_dictionary(path))
    by_first: dict[str, list] = {}
    for first, entries in index._by_first.items():  # noqa: SLF001 - the same content-word filter, read once
        for words, term, targets in entries:
            if term.islower() and all(lemmas.is_lemma(w) for w in words):
                by_first.setdefault(first, []).append((words, term, targets[0]))
    return by_first


def evaluate(texts: list[str], bases: list[dict[str, str]], match: str, model, processor, batch_size: int = 16):
    """Guaranteed TSR of `texts` each with its term base, and the misses and whether each was warned about."""
    from testing_oracles import CopyTheSource
    from transformers import LogitsProcessorList

    from hf_pgen.glossary import apply_glossaries, glossaries_for, unapplied_entries

    hits = total = found = 0
    misses, unwarned = [], []
    for start in range(0, len(texts), batch_size):
        chunk, chunk_bases = texts[start : start + batch_size], bases[start : start + batch_size]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batch = processor(chunk, glossary=chunk_bases, glossary_match=match, padding=True, return_tensors="pt")
            targets = [ids[m.bool()].tolist() for ids, m in zip(batch["extended_input_ids"], batch["attention_mask"])]
            room = max(map(len, targets)) + 8 * max(len(b) for b in chunk_bases)
            oracle = CopyTheSource(targets, model.config.eos_token_id)
            ids = model.generate(**batch, logits_processor=LogitsProcessorList([oracle]), max_new_tokens=room)
        outputs = processor.batch_decode(ids, batch)
        said = " ".join(str(w.message) for w in caught)
        glossaries = glossaries_for(chunk_bases, len(chunk), match=match)
        unapplied = set(unapplied_entries(glossaries, apply_glossaries(chunk, glossaries, None)[2]))
        for row, (output, base) in enumerate(zip(outputs, chunk_bases)):
            placed = {span["text"] for span in batch["protected_spans"][row]["spans"]}
            for term, target in base.items():
                total += 1
                found += target in placed
                if target.lower() in output.lower():
                    hits += 1
                    continue
                misses.append({"text": chunk[row], "term": term, "target": target})
                named = (row, term) in unapplied or f"{target!r}" in said
                if not named:
                    unwarned.append(misses[-1])
    return {
        "terms": total,
        "found": found,
        "tsr": round(hits / total, 4) if total else None,
        "misses": len(misses),
        "misses_warned": len(misses) - len(unwarned),
        "examples_missed": misses[:12],
        "examples_unwarned": unwarned[:12],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dictionary", default="/usr/share/dictd/freedict-eng-deu.dict.dz")
    parser.add_argument("--limit", type=int, default=400, help="texts per set (a fixed random sample)")
    parser.add_argument("--out", default=str(ROOT / "experiments" / "results" / "term_bases"))
    args = parser.parse_args(argv)

    import torch
    from testing_oracles import oracle_copy_model

    from hf_pgen import PointerGeneratorProcessor
    from hf_pgen.corpus import load_en_de_messages
    from hf_pgen.tokenizer_training import train_shared_tokenizer

    torch.manual_seed(0)
    train = load_en_de_messages("train")["translation"]
    tokenizer = train_shared_tokenizer([p["en"] for p in train] + [p["de"] for p in train], "unigram", 8000)
    model = oracle_copy_model(tokenizer)
    processor = PointerGeneratorProcessor.from_model(model, tokenizer)
    lemmas = Lemmas()
    by_first = dictionary_index(args.dictionary, lemmas)
    results = {}
    for name, texts in (("python-docstrings", docstring_sentences()), ("heldout_tools", heldout_messages())):
        random.Random(name).shuffle(texts)
        chosen, bases = [], []
        for text in texts:
            base = entries_held(text, lemmas.words(text), by_first)
            if base:
                chosen.append(text)
                bases.append(base)
            if len(chosen) == args.limit:
                break
        results[name] = {"texts": len(chosen)}
        for match in ("inflected", "exact"):
            results[name][match] = evaluate(chosen, bases, match, model, processor)
            print(name, match, {k: v for k, v in results[name][match].items() if not k.startswith("ex")}, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    rows = [
        "| texts | entries held | matching | found | guaranteed TSR | misses (warned) |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for name, result in results.items():
        for match in ("inflected", "exact"):
            r = result[match]
            rows.append(
                f"| {name} ({result['texts']}) | {r['terms']} | {match} | {r['found']} | {r['tsr']:.3f} | "
                f"{r['misses']} ({r['misses_warned']}) |"
            )
    out.with_suffix(".md").write_text("\n".join(rows) + "\n", encoding="utf-8")
    print("\n".join(rows))
    return results


if __name__ == "__main__":
    main()
