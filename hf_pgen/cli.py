"""`hf-pgen`: translate or summarise with a saved pointer-generator from the command line.

```bash
hf-pgen translate my-model "Delete %(name)s from Nakamura-Øresund?" "Open Zyxwvut"   # one line per text
hf-pgen translate my-model < messages.txt > messages.de.txt                         # stdin, line by line
hf-pgen translate my-model --num-beams 4 --protect placeholders --json < messages.txt > records.jsonl
hf-pgen translate my-model --explain copies.html "Open Zyxwvut"                     # and a page to look at
hf-pgen translate my-model --glossary terms.tsv < messages.txt                      # a term base's terms placed
hf-pgen summarize my-summariser < descriptions.txt > synopses.txt                   # the same, summarising
```

`summarize` takes the same options as `translate` and runs `pipeline("summarization")`. Output: one line per input,
in order (a newline inside an output is written as the two characters `\\n`, so output
line i always belongs to input line i). `--json` writes one copy record per line instead (see `hf_pgen.visualize`).
Errors (no such model folder, a folder that is not a pointer-generator, input that is not UTF-8, a bad `--protect`)
exit with status 2 and one line on stderr, `hf-pgen: error: ...`. Progress, warnings and Transformers' logging go to
stderr; stdout holds the outputs only.

Also `python -m hf_pgen.cli translate ...` (or `summarize ...`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

__all__ = ["main"]

_DEFAULT_BATCH_SIZE = 16
# "name" or "org/name": what could be a Hub model id rather than a local folder
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# what tokenizer.save_pretrained writes, for any tokenizer class (fast, SentencePiece, BPE vocab + merges)
_TOKENIZER_FILE = re.compile(r"^(tokenizer.*|vocab.*|merges\.txt|.*\.model|.*\.spm)$")

_PROTECT_HELP = """\
guarantee copies of spans of every input: "placeholders" (format placeholders such as %%(name)s, {count}, %%1, <b>
and URLs), "oov" (every word the vocabulary lacks), "re:REGEX" (every match of a Python regular expression, e.g.
're:[A-Z][a-z]+-\\d+'), or "text:STRING" (every occurrence of a literal string; repeat the option for several, e.g.
--protect text:Nakamura --protect text:Øresund). Without it, nothing is forced"""


class _Error(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line too, with a pointer to --help."""

    def error(self, message: str):
        self.exit(2, f"hf-pgen: error: {message} (see `{self.prog} --help`)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


# What each command does: its pipeline task, the result key it prints, and the words its help uses.
_COMMANDS = {
    "translate": ("translation", "translation_text", "translate", "translated", "messages.txt", "messages.de.txt"),
    "summarize": ("summarization", "summary_text", "summarise", "summarised", "descriptions.txt", "synopses.txt"),
}


def _build_parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The `hf-pgen` parser and its commands' own (parsed intermixed: options may follow the texts)."""
    from . import __version__

    parser = _Parser(
        prog="hf-pgen",
        description="Pointer-generator (copy mechanism) models for Transformers, from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"hf-pgen {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    return parser, {name: _add_command(commands, name) for name in _COMMANDS}


def _add_command(commands, name: str) -> argparse.ArgumentParser:
    """`translate` or `summarize`: the same options, another pipeline."""
    task, _, verb, _, inputs, written = _COMMANDS[name]
    command = commands.add_parser(
        name,
        help=f"{verb} texts with a saved pointer-generator",
        description=(
            f"{verb.capitalize()} the TEXT arguments, or standard input line by line (in batches), with a saved\n"
            f"pointer-generator (pipeline({task!r})). Prints one line per input, in order; a newline inside an\n"
            "output is written as \\n. Errors exit with status 2 and one line on stderr."
        ),
        epilog=(
            "examples:\n"
            + (
                f'  hf-pgen {name} my-model "Delete %(name)s from Nakamura-Øresund?"\n'
                if name == "translate"
                else f'  hf-pgen {name} my-model "Zyxwvut converts WDG-3 files into plain text. It keeps every field."\n'
            )
            + f"  hf-pgen {name} my-model --num-beams 4 < {inputs} > {written}\n"
            f"  hf-pgen {name} my-model --protect placeholders --json --explain copies.html < {inputs}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "model",
        metavar="MODEL",
        help="a folder written by model.save_pretrained and processor.save_pretrained (or a Hub id of such a model)",
    )
    # default=[]: a "*" positional without a default counts as required, and a missing MODEL was reported as
    # "required: MODEL, TEXT" although TEXT may be left out
    command.add_argument(
        "texts",
        metavar="TEXT",
        nargs="*",
        default=[],
        help=f"texts to {verb}; none: read standard input, one text per line",
    )
    command.add_argument(
        "--num-beams",
        type=_positive_int,
        metavar="N",
        help="beam search width (default: the model's generation config)",
    )
    command.add_argument(
        "--max-new-tokens",
        type=_positive_int,
        metavar="N",
        help="longest output in tokens (default: as long as the model's positions allow)",
    )
    command.add_argument(
        "--no-repeat-ngram-size",
        type=_positive_int,
        metavar="N",
        help="never repeat a token n-gram of this size within an output (generate()'s no_repeat_ngram_size; 2 "
        "suits short summaries)",
    )
    command.add_argument(
        "--batch-size",
        type=_positive_int,
        metavar="N",
        help=f"inputs done together (default: {_DEFAULT_BATCH_SIZE}; 1 when typing at a terminal); each "
        "batch is printed as soon as it is done",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="write one JSON copy record per line (p_gen, copy share, attention, source spans)",
    )
    command.add_argument(
        "--explain", metavar="FILE.html", help="also write a standalone HTML page that shows what each output copied"
    )
    command.add_argument("--protect", action="append", metavar="SPEC", help=_PROTECT_HELP)
    command.add_argument(
        "--glossary",
        metavar="FILE",
        help="a term base, two columns per line (source term, target term; TSV, or CSV for .csv files): where a "
        "source term occurs as whole words, its target term is placed in the output; a summary of how many "
        "entries applied goes to stderr",
    )
    command.add_argument(
        "--glossary-mode",
        choices=("guarantee", "hint"),
        default="guarantee",
        help="guarantee (default): each term comes out at least once; hint: the terms are only "
        "written into the source, for a model trained to read them (run_translation --glossary_augmentation)",
    )
    command.add_argument(
        "--glossary-ignore-case", action="store_true", help="match source terms in any case (Storage, sToRaGe)"
    )
    command.add_argument(
        "--glossary-match",
        choices=("inflected", "exact"),
        default="inflected",
        help="inflected (default): a source term also matches its inflected forms (server: servers; upload: "
        "uploading) and the capitals a text brings (Create, SERVER); exact: only as written",
    )
    command.add_argument(
        "--device", default="cpu", help='where the model runs: "cpu" (default), "cuda", "cuda:1", "mps"'
    )
    command.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    command.set_defaults(run=_generate, name=name)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run `hf-pgen` with `argv` (default: the process's arguments); returns the exit status.

    ```python
    from hf_pgen.cli import main
    main(["translate", "my-model", "Open Zyxwvut", "--num-beams", "4"])   # prints the translation, returns 0
    ```
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, commands = _build_parsers()
    if argv[:1] and argv[0] in commands:
        # intermixed: `translate MODEL --num-beams 4 "some text"` keeps the text (plain parsing drops it)
        args = commands[argv[0]].parse_intermixed_args(argv[1:])
    else:
        args = parser.parse_args(argv)  # --help, --version, or a missing / unknown command
    stdout = sys.stdout
    try:
        return args.run(args, stdout)
    except _Error as error:
        print(f"hf-pgen: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's exit flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 1


# -- translate, summarize ---------------------------------------------------------------------------------------------


def _generate(args: argparse.Namespace, stdout: TextIO) -> int:
    protect = _parse_protect(args.protect)
    glossary = _load_glossary(args)
    device = _check_device(args.device)
    if args.explain:
        _check_writable(args.explain)
    copy_info = bool(args.json or args.explain)
    from_stdin = not args.texts
    batch_size = args.batch_size or (1 if from_stdin and sys.stdin.isatty() else _DEFAULT_BATCH_SIZE)
    if from_stdin and sys.stdin.isatty() and not args.quiet:
        print(
            "hf-pgen: no TEXT given, reading standard input: type one text per line, Ctrl-D to end (or pass the "
            f'texts as arguments, hf-pgen {args.name} {shlex.quote(args.model)} "TEXT" ..., or a file, < texts.txt)',
            file=sys.stderr,
        )

    task, key, _, done_what, _, _ = _COMMANDS[args.name]
    # Libraries that print go to stderr: stdout carries the outputs only.
    with contextlib.redirect_stdout(sys.stderr):
        translator = _load(args.model, device, task)
        if glossary is not None:
            try:  # before any input is read
                translator._processor.check_glossary_mode(args.glossary_mode)
            except ValueError as error:
                raise _Error(f"--glossary-mode {args.glossary_mode}: {_first_line(error)}") from None
        call: dict[str, Any] = {}
        if args.num_beams is not None:
            call["num_beams"] = args.num_beams
        if args.no_repeat_ngram_size is not None:
            call["no_repeat_ngram_size"] = args.no_repeat_ngram_size
        if args.max_new_tokens is not None:
            call["max_new_tokens"] = args.max_new_tokens
            # The saved max_length (from_base sets the decoder's positions) is for calls without a length; left in
            # place, generate() warns on every batch that both are set.
            translator.model.generation_config.max_length = None
        if protect is not None:
            call["protect"] = protect
        if glossary is not None:
            call.update(glossary=glossary, glossary_mode=args.glossary_mode)
        if copy_info:
            call["return_copy_info"] = True

        texts = args.texts if args.texts else _stdin_lines()
        total = len(args.texts) if args.texts else None
        records, done, applied = [], 0, []
        for batch in _batches(texts, batch_size):
            if glossary is not None:
                from .glossary import apply_glossaries

                applied += apply_glossaries(batch, glossary, None)[2]
            try:
                results = translator(batch, batch_size=len(batch), **call)
            except ValueError as error:  # the pipeline's own checks (e.g. overlapping protected literals)
                raise _Error(f"{_first_line(error)} (in input lines {done + 1}-{done + len(batch)})") from None
            lines = []
            for result in results:
                if copy_info:
                    records.append(result)
                lines.append(json.dumps(result, ensure_ascii=False) if args.json else one_line(result[key]))
            _write_utf8(stdout, "".join(line + "\n" for line in lines))
            done += len(batch)
            if not args.quiet and (done > batch_size or (total or 0) > batch_size):
                print(f"hf-pgen: {done_what} {done}{f'/{total}' if total else ''} lines", file=sys.stderr, flush=True)

    if glossary is not None and not args.quiet:
        from .glossary import term_base_summary

        print(f"hf-pgen: {args.glossary}: {term_base_summary(glossary, applied)}", file=sys.stderr)
    if args.explain:
        from . import visualize

        visualize.to_html(records, args.explain)
        if not args.quiet:
            print(f"hf-pgen: wrote {args.explain} ({len(records)} records)", file=sys.stderr)
    return 0


def _write_utf8(stream: TextIO, text: str) -> None:
    """Write and flush `text` as UTF-8, whatever the stream's own encoding (the input is read as UTF-8 too)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text-only stream (io.StringIO)
        stream.write(text)
        stream.flush()
        return
    stream.flush()  # anything already in the text layer goes first
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def one_line(text: str) -> str:
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _stdin_lines() -> Iterator[str]:
    """Standard input's lines without their line ends, decoded strictly as UTF-8 (one bad byte is an error)."""
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _Error(
                f"input line {number} is not valid UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1}): "
                "convert the input to UTF-8 first, e.g. `iconv -f latin1 -t utf-8`"
            ) from None
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte order mark is not part of the first text
        yield line.removesuffix("\n").removesuffix("\r")


def _load_glossary(args: argparse.Namespace) -> Any:
    """--glossary FILE -> a Glossary, read before the model loads, so that a bad line fails at once."""
    if args.glossary is None:
        if args.glossary_mode != "guarantee" or args.glossary_ignore_case or args.glossary_match != "inflected":
            raise _Error("--glossary-mode, --glossary-ignore-case and --glossary-match need --glossary FILE")
        return None
    from .glossary import Glossary

    try:
        return Glossary.from_file(args.glossary, ignore_case=args.glossary_ignore_case, match=args.glossary_match)
    except (OSError, ValueError) as error:
        raise _Error(f"--glossary: {_first_line(error)}") from None


def _parse_protect(specs: list[str] | None) -> Any:
    """--protect values -> the pipeline's `protect=`: "placeholders", "oov", a regex string or a list of literals."""
    if not specs:
        return None
    literals = [spec[len("text:") :] for spec in specs if spec.startswith("text:")]
    if (literals and len(literals) < len(specs)) or (not literals and len(specs) > 1):
        raise _Error(
            "--protect takes one of placeholders, oov or re:REGEX, or any number of text:STRING; got "
            + ", ".join(repr(spec) for spec in specs)
        )
    if literals:
        protect = literals
    elif specs[0] in ("placeholders", "oov"):
        return specs[0]
    elif specs[0].startswith("re:"):
        protect = specs[0][len("re:") :]
        try:
            re.compile(protect)
        except re.error as error:
            raise _Error(f"--protect {specs[0]!r} is not a valid regular expression: {error}") from None
    else:
        raise _Error(
            f"--protect {specs[0]!r} is not a protection: use placeholders, oov, re:REGEX or text:STRING "
            f"(e.g. --protect 're:{specs[0]}' for a pattern)"
        )
    from .protection_pointer_generator import find_protected_spans

    try:  # the library's own checks: a pattern that only matches "", an empty literal
        find_protected_spans("", protect)
    except (ValueError, TypeError) as error:
        raise _Error(f"--protect: {_first_line(error)}") from None
    return protect


def _check_device(device: str) -> str:
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise _Error(f'--device {device!r} is not a device: use "cpu", "cuda", "cuda:1" or "mps"') from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise _Error(f"--device {device}: no CUDA device is available here (torch.cuda.is_available() is False)")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise _Error(f"--device {device}: MPS is not available here")
    return device


def _check_writable(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        raise _Error(f"--explain {path!r}: cannot write a file there (its folder must exist and it must not be one)")


def _load(model: str, device: str, task: str = "translation"):
    """`transformers.pipeline(task, model=model)`, after checking that `model` is a pointer-generator."""
    # hf_pgen's own import (which runs before this module's) registered the model type and the pipeline tasks.
    from transformers import AutoConfig, pipeline
    from transformers.utils import logging as transformers_logging

    from .configuration_pointer_generator import is_pointer_generator

    transformers_logging.disable_progress_bar()  # a bar per loaded file: our progress lines are enough
    if os.path.isfile(model):
        raise _Error(f"MODEL {model!r} is a file: pass the folder that model.save_pretrained wrote")
    if not os.path.isdir(model) and not _HUB_ID.match(model):
        raise _Error(
            f"no model folder {model!r}: pass the folder that model.save_pretrained and processor.save_pretrained wrote"
        )
    if os.path.isdir(model) and not os.path.isfile(os.path.join(model, "config.json")):
        raise _Error(
            f"{model!r} is not a model folder (it has no config.json): pass the folder that model.save_pretrained wrote"
        )
    try:
        config = AutoConfig.from_pretrained(model)
    except (OSError, ValueError, KeyError) as error:
        where = f"{model!r} is not a model folder" if os.path.isdir(model) else f"no model folder {model!r}"
        raise _Error(f"{where}, and it could not be loaded: {_first_line(error)}") from None
    if not is_pointer_generator(config):
        raise _Error(
            f"{model!r} holds a {getattr(config, 'model_type', None) or 'non-pointer-generator'} model, not a "
            "pointer-generator: it has no copy information to show. Run it with "
            f"transformers.pipeline({task!r}, model={model!r}) (with hf_pgen imported), or wrap it first with "
            "PointerGeneratorForConditionalGeneration.from_base"
        )
    if os.path.isdir(model) and not any(_TOKENIZER_FILE.match(name) for name in os.listdir(model)):
        raise _Error(
            f"{model!r} has no tokenizer files (tokenizer.json, tokenizer_config.json, ...): save the tokenizer "
            f"next to the model, processor.save_pretrained({model!r}) or tokenizer.save_pretrained({model!r})"
        )
    try:
        return pipeline(task, model=model, device=device)
    except (OSError, ValueError) as error:
        raise _Error(f"could not load {model!r}: {_first_line(error)}") from None


if __name__ == "__main__":
    sys.exit(main())
