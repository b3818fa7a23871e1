#!/usr/bin/env python
"""Concatenate translation files into one training file: the main job's data conditions (messages, + DDTP, +
backtranslation) are unions of such files.

    python -m training.data.mix --output train.jsonl.gz --inputs messages.jsonl.gz ddtp.jsonl.gz bt.jsonl

Each input is JSON lines (optionally gzipped) of `{"translation": {<source>: ..., <target>: ...}, ...}`; the output
keeps the `translation` field only, in input order, and `<output>.stats.json` counts the pairs taken from each input.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

__all__ = ["mix", "main"]


def _open(path: Path, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if path.suffix == ".gz" else open(path, mode, encoding="utf-8")


def mix(inputs: list[str | Path], output: str | Path) -> dict[str, int]:
    """Write the pairs of every input, in order, to `output`; returns the pair count per input.

    Raises:
        ValueError: a line that is not JSON or has no `translation` object (the message names file and line).
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
                    out.write(json.dumps({"translation": pair}, ensure_ascii=False) + "\n")
                    counts[str(path)] += 1
    Path(f"{output}.stats.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True)
    parser.add_argument("--inputs", nargs="+", required=True)
    args = parser.parse_args(argv)
    return mix(args.inputs, args.output)


if __name__ == "__main__":
    main()
