"""`hf-pgen translate`, run as the command line it is (`python -m hf_pgen.cli`), on a tiny saved pointer-generator.

Each subprocess imports torch and Transformers (seconds of CPU), so the command runs three times: texts as
arguments, a stream on stdin with every copy option, and input that is not UTF-8. The other error cases go through
`main(argv)` in this process, the same code the console script runs.
"""

import io
import json
import logging
import math
import os
import select
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from testing_utils import corpus_texts, tiny_base, word_level_tokenizer
from transformers import AutoConfig, pipeline
from transformers.utils import logging as transformers_logging

from hf_pgen import PointerGeneratorForConditionalGeneration
from hf_pgen.cli import main, one_line

ARGUMENTS = ["Delete %(name)s from Nakamura", "", "Open the file\nnow", 'Save <b>Zyxwvut</b> & "Qwerfdsa"']
LINES = [
    "Delete %(name)s from Nakamura-Øresund?",
    "Open the file",
    "",
    "Close <b>Zyxwvut</b> & {count} items",
    "Save the file as Blorptastic",
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A random tiny pointer-generator folder (p_gen starts at 0.5: it copies and generates) and its plain base."""
    tokenizer = word_level_tokenizer(corpus_texts("train", limit=300), vocab_size=150)
    base = tiny_base("bart", vocab_size=len(tokenizer))
    model = PointerGeneratorForConditionalGeneration.from_base(
        base, unk_token_id=tokenizer.unk_token_id, p_gen_bias_init=0.0
    )
    copier, plain = tmp_path_factory.mktemp("copier"), tmp_path_factory.mktemp("plain-bart")
    model.save_pretrained(copier)
    tokenizer.save_pretrained(copier)
    base.save_pretrained(plain)
    tokenizer.save_pretrained(plain)
    return copier, plain


def _command(*args):
    return [sys.executable, "-m", "hf_pgen.cli", "translate", *map(str, args)]


def _env():
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def _run(args, tmp_path, stdin=b""):
    result = subprocess.run(_command(*args), input=stdin, capture_output=True, env=_env(), cwd=tmp_path, timeout=300)
    return result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")


@pytest.mark.slow  # runs the command in a subprocess
def test_translates_each_argument_to_one_line(folders, tmp_path):
    copier, _ = folders
    # options after the texts too; a text with a newline in it is still one input, one output line
    code, out, err = _run([copier, *ARGUMENTS, "--num-beams", "2", "--max-new-tokens", "6", "-q"], tmp_path)
    assert code == 0, err
    expected = pipeline("translation", model=str(copier))(
        ARGUMENTS, num_beams=2, max_new_tokens=6, batch_size=len(ARGUMENTS)
    )
    assert out.split("\n") == [one_line(r["translation_text"]) for r in expected] + [""]
    assert out.split("\n")[1] == ""  # a blank input gives a blank line, in its place
    assert "Traceback" not in err and "hf-pgen:" not in err  # -q: no progress


def _assert_same_records(got, expected, where="records"):
    """Equal structure, texts, ids and spans; floats equal up to what another process's thread count may move
    (the CLI runs in its own interpreter, and reductions may be summed in a different order there)."""
    if isinstance(expected, float):
        assert isinstance(got, (int, float)) and math.isclose(got, expected, rel_tol=1e-4, abs_tol=1e-5), where
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), where
        for key in expected:
            _assert_same_records(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for index, (a, b) in enumerate(zip(got, expected)):
            _assert_same_records(a, b, f"{where}[{index}]")
    else:
        assert got == expected, where


@pytest.mark.slow  # runs the command in a subprocess
def test_stdin_is_translated_in_streamed_batches_with_copy_records(folders, tmp_path):
    copier, _ = folders
    page = tmp_path / "copies.html"
    args = [
        copier,
        "--batch-size",
        "2",
        "--max-new-tokens",
        "8",
        "--protect",
        "placeholders",
        "--json",
        "--explain",
        page,
    ]
    process = subprocess.Popen(
        _command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=tmp_path
    )
    try:
        # streaming: the first batch is printed while the rest of the input has not even been written
        process.stdin.write("".join(line + "\n" for line in LINES[:2]).encode("utf-8"))
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "no output for the first batch before the end of the input"
        first = [process.stdout.readline().decode("utf-8") for _ in range(2)]  # the batch is written at once
        process.stdin.write("".join(line + "\n" for line in LINES[2:]).encode("utf-8"))
        process.stdin.close()
        rest, err = process.stdout.read().decode("utf-8"), process.stderr.read().decode("utf-8")
        code = process.wait(timeout=240)
    finally:
        process.kill()
    assert code == 0, err
    records = [json.loads(line) for line in "".join(first + [rest]).splitlines()]
    assert '"source": "Delete %(name)s from Nakamura-Øresund?"' in first[0]  # UTF-8 as is, not \u escapes

    # the records are the pipeline's own, batch for batch
    translator = pipeline("translation", model=str(copier))
    expected = translator(LINES, batch_size=2, max_new_tokens=8, protect="placeholders", return_copy_info=True)
    _assert_same_records(records, json.loads(json.dumps(expected)))

    # and they keep the contract
    vocab_size = AutoConfig.from_pretrained(copier).vocab_size
    copied_oov = 0
    for line, record in zip(LINES, records):
        assert record["source"] == line
        assert "".join(token["text"] for token in record["tokens"]) == record["translation_text"]
        spans = [tuple(t["span"]) for t in record["source_tokens"] if t["span"] is not None]
        for token in record["tokens"]:
            assert 0.0 <= token["p_gen"] <= 1.0 and 0.0 <= token["copy_share"] <= 1.0
            assert len(token["attention"]) == len(record["source_tokens"])
            assert math.isclose(sum(token["attention"]), 1.0, abs_tol=1e-3)
            if token["source_span"] is not None:
                assert tuple(token["source_span"]) in spans
            if token["token_id"] >= vocab_size:  # a copied out-of-vocabulary word comes back as its source text
                start, end = token["source_span"]
                assert token["text"].strip() == line[start:end]
                copied_oov += 1
    assert copied_oov > 0  # p_gen is 0.5: the random model copies
    assert records[0]["protected_spans"] == ["%(name)s"] and records[1]["protected_spans"] == []
    assert {"<b>", "</b>", "{count}"} <= set(records[3]["protected_spans"])
    assert records[2]["translation_text"] == ""

    # progress and messages on stderr only
    assert "hf-pgen: translated 4 lines" in err and "hf-pgen: translated 5 lines" in err
    assert "Traceback" not in err

    # the page holds every record, its text escaped
    text = page.read_text(encoding="utf-8")
    assert text.count('<section class="pg-record"') == len(LINES)
    assert _source_texts(text) == LINES and "<b>Zyxwvut" not in text
    assert f"wrote {page.name}" in err or f"wrote {page}" in err


def _source_texts(page):
    """The text of each `.pg-source` paragraph of a page, its special-token badges left out."""

    class Sources(HTMLParser):
        def __init__(self):
            super().__init__()
            self.texts, self.stack = [], []

        def handle_starttag(self, tag, attrs):
            classes = (dict(attrs).get("class") or "").split()
            if tag == "p" and "pg-source" in classes:
                self.texts.append("")
            inside = bool(self.stack) or (tag == "p" and "pg-source" in classes)
            self.stack.append("special" if "pg-special" in classes else tag) if inside else None

        def handle_endtag(self, tag):
            if self.stack:
                self.stack.pop()

        def handle_data(self, data):
            if self.stack and "special" not in self.stack:
                self.texts[-1] += data

    parser = Sources()
    parser.feed(page)
    return parser.texts


@pytest.mark.slow  # runs the command in a subprocess
def test_input_that_is_not_utf8_stops_with_one_line(folders, tmp_path):
    copier, _ = folders
    stdin = b"Open the file\nCaf\xe9 au lait\nClose the file\n"  # Latin-1 on line 2
    code, out, err = _run([copier, "--batch-size", "1"], tmp_path, stdin=stdin)
    assert code == 2
    assert len(out.splitlines()) == 1  # the line before it was translated and printed
    assert err.splitlines() == [
        "hf-pgen: error: input line 2 is not valid UTF-8 (byte 0xe9 at column 4): convert the input to UTF-8 "
        "first, e.g. `iconv -f latin1 -t utf-8`"
    ]


# -- errors, through main(argv) ---------------------------------------------------------------------------------------


def _error(capsys, argv):
    code = main(["translate", *map(str, argv)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-pgen: error: "), captured.err
    return lines[0]


def test_a_plain_model_folder_is_refused_with_the_way_to_serve_it(folders, capsys):
    _, plain = folders
    message = _error(capsys, [plain, "Open the file"])
    assert "holds a bart model, not a pointer-generator" in message
    assert f"transformers.pipeline('translation', model='{plain}')" in message


def test_model_folder_errors(folders, tmp_path, capsys):
    assert "no model folder" in _error(capsys, [tmp_path / "missing", "Open"])
    assert "is not a model folder (it has no config.json)" in _error(capsys, [tmp_path, "Open"])
    (tmp_path / "weights.bin").write_bytes(b"")
    assert "is a file" in _error(capsys, [tmp_path / "weights.bin", "Open"])


def test_a_model_folder_without_its_tokenizer_says_how_to_add_it(folders, tmp_path, capsys):
    copier, _ = folders
    model_only = tmp_path / "model-only"
    shutil.copytree(copier, model_only, ignore=shutil.ignore_patterns("tokenizer*"))
    message = _error(capsys, [model_only, "Open the file"])
    assert message == (
        f"hf-pgen: error: {str(model_only)!r} has no tokenizer files (tokenizer.json, tokenizer_config.json, ...): "
        f"save the tokenizer next to the model, processor.save_pretrained({str(model_only)!r}) or "
        f"tokenizer.save_pretrained({str(model_only)!r})"
    )


def test_max_new_tokens_replaces_the_saved_length_without_a_warning(folders, capsys):
    copier, _ = folders
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_warning()
    transformers_logging.add_handler(handler)
    try:
        assert main(["translate", str(copier), "Open the file", "--max-new-tokens", "3", "-q"]) == 0
    finally:
        transformers_logging.remove_handler(handler)
        transformers_logging.set_verbosity(verbosity)
    assert [r.getMessage() for r in records if "max_length" in r.getMessage()] == []
    assert 1 <= len(capsys.readouterr().out.split()) <= 3  # word-level tokens: at most 3 words


class _Terminal(io.TextIOWrapper):
    def isatty(self):
        return True


def test_no_text_reads_the_terminal_and_says_how_to_pass_texts(folders, capsys, monkeypatch):
    copier, _ = folders
    monkeypatch.setattr(sys, "stdin", _Terminal(io.BytesIO(b"Open the file\nClose it\n"), encoding="utf-8"))
    assert main(["translate", str(copier), "--max-new-tokens", "4"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    assert captured.err.splitlines()[0] == (
        "hf-pgen: no TEXT given, reading standard input: type one text per line, Ctrl-D to end (or pass the texts "
        f'as arguments, hf-pgen translate {shlex.quote(str(copier))} "TEXT" ..., or a file, < texts.txt)'
    )


@pytest.mark.parametrize(
    "options, message",
    [
        (["--protect", "re:(unclosed"], "--protect 're:(unclosed' is not a valid regular expression: missing )"),
        (["--protect", "re:x*"], "matches the empty string"),
        (["--protect", "text:"], "empty string"),
        (["--protect", "placeholders", "--protect", "text:Open"], "--protect takes one of placeholders, oov or"),
        (["--protect", "names"], "--protect 'names' is not a protection: use placeholders, oov, re:REGEX or text:"),
        (["--device", "toaster"], "--device 'toaster' is not a device"),
    ],
)
def test_option_errors(folders, capsys, options, message):
    copier, _ = folders
    assert message in _error(capsys, [copier, "Open the file", *options])


def test_a_glossary_file_places_its_terms_and_its_errors_name_the_line(folders, tmp_path, capsys):
    copier, _ = folders
    terms = tmp_path / "terms.tsv"
    terms.write_text("file\tDelete\n", encoding="utf-8")  # a target the tiny word-level vocabulary can spell
    assert (
        main(["translate", str(copier), "Open the file", "Open it", "--glossary", str(terms), "--max-new-tokens", "12"])
        == 0
    )
    captured = capsys.readouterr()
    first, second = captured.out.splitlines()
    assert first.count("Delete") == 1 and "Delete" not in second
    # one summary line on stderr: a shared term base mostly does not apply to a given text
    assert f"hf-pgen: {terms}: Term base: 1 of its 1 entries apply to 1 of the 2 inputs" in captured.err
    # any case, letters whose case changes their length included: no traceback (exit 0)
    terms.write_text("İstanbul\tIstanbul\n", encoding="utf-8")
    assert main(["translate", str(copier), "visit Istanbul", "--glossary", str(terms), "--glossary-ignore-case"]) == 0
    assert "0 of its 1 entries apply" in capsys.readouterr().err
    terms.write_text("file\tDatei\nfolder\n", encoding="utf-8")
    message = _error(capsys, [copier, "Open the file", "--glossary", terms])
    assert "--glossary: Glossary" in message and "line 2 has 1 column" in message
    message = _error(capsys, [copier, "Open", "--glossary", tmp_path / "missing.tsv"])
    assert "--glossary" in message and "does not exist" in message
    terms.write_text("file\tDatei\n", encoding="utf-8")
    message = _error(capsys, [copier, "Open", "--glossary", terms, "--glossary-mode", "hint"])
    assert "not trained to read them" in message
    assert "need --glossary FILE" in _error(capsys, [copier, "Open", "--glossary-mode", "hint"])


def test_explain_needs_a_writable_place(folders, tmp_path, capsys):
    copier, _ = folders
    message = _error(capsys, [copier, "Open", "--explain", tmp_path / "no" / "such" / "page.html"])
    assert "--explain" in message and "cannot write a file there" in message


def test_usage_errors_are_one_line(folders, capsys):
    copier, _ = folders
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", str(copier), "Open", "--num-beams", "0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "hf-pgen: error: argument --num-beams: 0 is not positive (see `hf-pgen translate --help`)"
    ]


def test_a_missing_model_is_the_only_required_argument(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["translate"])  # TEXT may be left out (standard input is read): only MODEL is missing
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "hf-pgen: error: the following arguments are required: MODEL (see `hf-pgen translate --help`)"
    ]


def test_outputs_stay_on_one_line():
    assert one_line("Zeile eins\nZeile zwei\r\ndrei\rvier") == "Zeile eins\\nZeile zwei\\ndrei\\nvier"
    assert one_line("C:\\Users %(name)s") == "C:\\Users %(name)s"  # nothing else is escaped


def test_no_repeat_ngram_size_reaches_generate(folders, capsys):
    copier, _ = folders
    text = "Open the file Open the file Open the file"
    assert main(["summarize", str(copier), text, "--max-new-tokens", "12", "--no-repeat-ngram-size", "1", "-q"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    summarize = pipeline("summarization", model=str(copier))
    assert line == summarize([text], max_new_tokens=12, no_repeat_ngram_size=1)[0]["summary_text"]
    assert line != summarize([text], max_new_tokens=12)[0]["summary_text"]  # the option changes the output


def test_summarize_is_translate_through_the_summarization_pipeline(folders, tmp_path, capsys):
    """`hf-pgen summarize` takes translate's options and prints what pipeline("summarization") gives, a line per text;
    --json writes its copy records (with `summary_text`), --explain the page."""
    copier, _ = folders
    texts = ["Zyxwvut converts WDG-3 files into plain text. It keeps every field.", "Open the file now"]
    page = tmp_path / "copies.html"
    assert main(["summarize", str(copier), *texts, "--max-new-tokens", "6", "-q"]) == 0
    expected = pipeline("summarization", model=str(copier))(texts, max_new_tokens=6, batch_size=len(texts))
    assert capsys.readouterr().out.split("\n") == [one_line(r["summary_text"]) for r in expected] + [""]
    assert main(["summarize", str(copier), texts[0], "--max-new-tokens", "6", "--json", "--explain", str(page)]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["summary_text"] == expected[0]["summary_text"] and record["source"] == texts[0]
    assert "translation_text" not in record and len(record["tokens"]) > 0
    assert "Summary 1" in page.read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["summarize", "--help"])
    assert exit_info.value.code == 0
    assert "pipeline('summarization')" in capsys.readouterr().out
