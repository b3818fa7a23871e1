#!/usr/bin/env python
"""Concatenate translation files into one training file: the main job's data conditions (messages, + DDTP, +
backtranslation) are unions of such files.

    python -m training.data.mix --output train.jsonl.gz --inputs messages.jsonl.gz ddtp.jsonl.gz bt.jsonl
    python -m training.data.mix --output bt-tag.jsonl --inputs bt.jsonl --tag "<BT>" --source_lang en

Each input is JSON lines (optionally gzipped) of `{"translation": {<source>: ..., <target>: ...}, ...}`; the output
keeps the `translation` field only, in input order, and `<output>.stats.json` counts the pairs taken from each input.
`--tag` puts a text and a space before every source (Caswell et al.'s tagged backtranslation), so a tagged copy of
synthetic data differs from the untagged one by the tag alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

__all__ = ["mix", "main"]


def _open(path: Path, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if path.suffix == ".gz" else open(path, mode, encoding="utf-8")


def mix(
    inputs: list[str | Path], output: str | Path, tag: str | None = None, source_lang: str = "en"
) -> dict[str, int]:
    """Write the pairs of every input, in order, to `output`; returns the pair count per input.

    Args:
        inputs: translation files (JSON lines, optionally gzipped).
        output: the file to write (gzipped if it ends in `.gz`).
        tag: if given, written with a space before every `source_lang` text (`"<BT>"`).
        source_lang: the side the tag goes on.

    Raises:
        ValueError: a line that is not JSON or has no `translation` object, or (with a tag) a pair without a
            `source_lang` text; the message names file and line.
    """
    counts: dict[str, int] = {}
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with _open(output, "w") as out:
        for path in map(Path, inputs):
            counts[str(path)] = 0
            with _open(path, "r") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise ValueError(f"{path}, line {number} is not JSON: {error}.") from None
                    pair = record.get("translation") if isinstance(record, dict) else None
                    if not isinstance(pair, dict):
                        raise ValueError(f"{path}, line {number} has no 'translation' object.")
                    if tag is not None:
                        if not isinstance(pair.get(source_lang), str):
                            raise ValueError(f"{path}, line {number} has no {source_lang!r} text to tag.")
                        pair = {**pair, source_lang: f"{tag} {pair[source_lang]}"}
                    out.write(json.dumps({"translation": pair}, ensure_ascii=False) + "\n")
                    counts[str(path)] += 1
    Path(f"{output}.stats.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True)
    parser.add_argument("--inputs", nargs="+", required=True)
    parser.add_argument("--tag", default=None, help='Text put before every source, then a space (e.g. "<BT>").')
    parser.add_argument("--source_lang", default="en", help="The side --tag goes on (default: en).")
    args = parser.parse_args(argv)
    if args.tag is not None and not args.tag.strip():
        parser.error("--tag must hold some text (or leave it out).")
    return mix(args.inputs, args.output, args.tag, args.source_lang)


if __name__ == "__main__":
    main()
