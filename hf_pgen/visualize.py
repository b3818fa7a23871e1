"""See what a pointer-generator copied: a standalone HTML page and a static picture of its copy records.

A *copy record* is what `pipeline("translation", model=folder)(text, return_copy_info=True)` returns for each output
(the same dicts `hf-pgen translate --json` writes one per line; `pipeline("summarization")` and `hf-pgen summarize`
give the same records with a `summary_text`): the source, its tokens with character spans, the translation (or
summary) and, per output token, its text, `p_gen` (1 = generated, 0 = copied), `copy_share` (the share of its
probability that came from copying), `source_span` (where it was copied from, or None), the pointer `attention` over
the source tokens and whether it is `protected`.

```python
import hf_pgen
from hf_pgen import visualize
from transformers import pipeline

translator = pipeline("translation", model="my-pointer-generator")
records = translator(["Delete %(name)s from Nakamura-Øresund?", "Open <b>Zyxwvut</b>"], return_copy_info=True)
visualize.to_html(records, "copies.html")   # one file, no network: hover or tab through the output tokens
visualize.plot(records[0], "copies.png")    # attention heatmap with p_gen and copy share beside it
```

The page shades each output token by its copy share, underlines copied tokens, outlines protected ones, and, when an
output token is hovered or focused (Tab, then the arrow keys), shades the source tokens by the attention that token
paid them and says its p_gen and copy share in words. `plot` needs matplotlib (`pip install matplotlib`); it draws on
its own `Figure` with the Agg canvas, so pyplot's state and the user's backend are left alone.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["html_page", "to_html", "plot"]

_RECORD_KEYS = ("source", "source_tokens", "tokens")
# The output text of a record, by pipeline task: the key, its heading and the plural the page counts in.
_OUTPUTS = {
    "translation_text": ("Translation", "translations"),
    "summary_text": ("Summary", "summaries"),
    "generated_text": ("Output", "outputs"),
}
_TOKEN_KEYS = ("text", "p_gen", "copy_share", "source_span", "attention")


# -- records ----------------------------------------------------------------------------------------------------------


def _as_records(records: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record or a list of them (a pipeline's per-input lists of `num_return_sequences` records are flattened)."""
    if isinstance(records, Mapping):
        records = [records]
    flat = []
    for item in records:
        flat.extend([item] if isinstance(item, Mapping) else list(item))
    for index, record in enumerate(flat):
        _check_record(record, index)
    return flat


def _output_key(record: Mapping[str, Any]) -> str:
    """The key of a record's output text: `translation_text`, `summary_text` or `generated_text`."""
    return next(key for key in _OUTPUTS if key in record)


def _check_record(record: Any, index: int) -> None:
    where = f"record {index}"
    if not isinstance(record, Mapping):
        raise TypeError(f"{where} is a {type(record).__name__}, not a copy record (a dict).")
    missing = [key for key in _RECORD_KEYS if key not in record]
    if not any(key in record for key in _OUTPUTS):
        missing.insert(0, " or ".join(_OUTPUTS))
    if missing:
        raise ValueError(
            f"{where} lacks {missing}: pass copy records, e.g. pipe(texts, return_copy_info=True) or the lines of "
            "`hf-pgen translate --json` (or `hf-pgen summarize --json`)."
        )
    width = len(record["source_tokens"])
    for position, token in enumerate(record["tokens"]):
        missing = [key for key in _TOKEN_KEYS if key not in token]
        if missing:
            raise ValueError(f"{where}, output token {position} lacks {missing}.")
        if len(token["attention"]) != width:
            raise ValueError(
                f"{where}, output token {position}: its attention has {len(token['attention'])} weights but the "
                f"record has {width} source tokens; each weight belongs to one source token."
            )


def _number(value: Any) -> float:
    """A finite float, or NaN for a missing/non-finite value (formatted as "n/a")."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _protected_source_positions(record: Mapping[str, Any]) -> set[int]:
    """Source tokens that lie inside an occurrence of one of the record's protected span texts."""
    source = record["source"]
    ranges = []
    for span in record.get("protected_spans") or []:
        start = source.find(span) if span else -1
        while start >= 0:
            ranges.append((start, start + len(span)))
            start = source.find(span, start + 1)
    positions = set()
    for position, token in enumerate(record["source_tokens"]):
        span = token.get("span")
        if span is not None and any(start <= span[0] and span[1] <= end and span[0] < span[1] for start, end in ranges):
            positions.add(position)
    return positions


# -- HTML -------------------------------------------------------------------------------------------------------------


def html_page(records: Mapping[str, Any] | Sequence[Mapping[str, Any]], title: str = "What was copied") -> str:
    """The standalone HTML page (a string) for one copy record or a list of them; see `to_html`.

    ```python
    page = visualize.html_page(pipe("Open Zyxwvut", return_copy_info=True))
    ```
    """
    records = _as_records(records)
    sections = "\n".join(_record_html(record, index) for index, record in enumerate(records))
    kinds = {_output_key(record) for record in records}
    singular, plural = _OUTPUTS[kinds.pop()] if len(kinds) == 1 else ("output", "outputs")
    count = f"{len(records)} {plural if len(records) != 1 else singular.lower()}"
    return _PAGE.format(
        title=html.escape(title), count=count, legend=_LEGEND, sections=sections, style=_STYLE, script=_SCRIPT
    )


def to_html(
    records: Mapping[str, Any] | Sequence[Mapping[str, Any]], path: str | os.PathLike, title: str = "What was copied"
) -> Path:
    """Write one standalone HTML page (inline CSS and JavaScript, nothing fetched) showing the copy records.

    For each record the page shows the source and its translation (or summary). Output tokens are shaded by their copy share,
    copied ones are underlined and protected ones outlined. Hovering an output token, or focusing it with Tab (arrow
    keys then move along the output), shades the source tokens by the attention it paid them and says its p_gen and
    copy share in the panel below.

    ```python
    records = pipe(["Delete %(name)s from Nakamura-Øresund?"], return_copy_info=True)
    visualize.to_html(records, "copies.html")      # open it in any browser
    ```

    Returns the path written.
    """
    path = Path(path)
    path.write_text(html_page(records, title=title), encoding="utf-8")
    return path


def _attr(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _float_attr(value: Any) -> str:
    value = _number(value)
    return "nan" if math.isnan(value) else repr(round(value, 6))


def _record_html(record: Mapping[str, Any], index: int) -> str:
    rid = f"pg-r{index}"
    heading = _OUTPUTS[_output_key(record)][0]
    source_tokens = record["source_tokens"]
    tokens = record["tokens"]
    protected_positions = _protected_source_positions(record)
    copied = sum(token["source_span"] is not None for token in tokens)
    p_gens = [_number(token["p_gen"]) for token in tokens]
    p_gens = [value for value in p_gens if not math.isnan(value)]
    mean_p_gen = f", mean p_gen {sum(p_gens) / len(p_gens):.2f}" if p_gens else ""
    summary = f"{len(tokens)} output token{'s' if len(tokens) != 1 else ''}, {copied} copied{mean_p_gen}"

    protected = record.get("protected_spans") or []
    protected_html = ""
    if protected:
        items = " ".join(f'<code class="pg-protected-span">{html.escape(span)}</code>' for span in protected)
        protected_html = (
            f'<div class="pg-row"><span class="pg-label">Protected</span><p class="pg-protected-list">{items}</p></div>'
        )

    return f"""<section class="pg-record" id="{rid}" data-record="{index}" aria-labelledby="{rid}-title">
<h2 id="{rid}-title">{heading} {index + 1} <span class="pg-summary">{html.escape(summary)}</span></h2>
<div class="pg-row"><span class="pg-label" id="{rid}-source-label">Source</span>
<p class="pg-source" id="{rid}-source" dir="auto" aria-labelledby="{rid}-source-label">{
        _source_html(record["source"], source_tokens, protected_positions, rid)
    }</p></div>
<div class="pg-row"><span class="pg-label" id="{rid}-output-label">{heading}</span>
<p class="pg-translation" id="{rid}-output" dir="auto" aria-labelledby="{rid}-output-label">{
        _output_html(tokens, rid)
    }</p></div>
{protected_html}
<div class="pg-inspector" id="{rid}-inspector" role="status" aria-live="polite" aria-atomic="true">
<p class="pg-hint">Hover over an output token, or press Tab to reach one, to see where it came from.</p>
</div>
</section>"""


def _source_html(source: str, source_tokens: Sequence[Mapping[str, Any]], protected: set[int], rid: str) -> str:
    """The source as written (the text between tokens kept), each attended position an element of its own."""
    parts, cursor = [], 0
    for position, token in enumerate(source_tokens):
        span = token.get("span")
        classes = ["pg-src"]
        if position in protected:
            classes.append("pg-protected")
        common = f'id="{rid}-s{position}" data-index="{position}"'
        if span is None:  # a special token (</s>, a language code): shown as a badge, not part of the text
            parts.append(
                f'<span class="{" ".join(classes + ["pg-special"])}" {common} data-span="" '
                f'aria-label="special token {_attr(token["text"])}">{html.escape(token["text"])}</span>'
            )
            continue
        start, end = max(int(span[0]), cursor), max(int(span[1]), cursor)  # overlapping spans: show each char once
        parts.append(html.escape(source[cursor:start]))
        text = source[start:end]
        parts.append(
            f'<span class="{" ".join(classes)}" {common} data-span="{int(span[0])},{int(span[1])}">'
            f"{html.escape(text)}</span>"
        )
        cursor = end
    parts.append(html.escape(source[cursor:]))
    return "".join(parts)


def _output_html(tokens: Sequence[Mapping[str, Any]], rid: str) -> str:
    """Output tokens as focusable elements; the whitespace around a token's word stays outside its box."""
    parts = []
    for position, token in enumerate(tokens):
        text = token["text"]
        core = text.strip()
        lead = text[: len(text) - len(text.lstrip())] if core else ""
        trail = text[len(lead) + len(core) :] if core else ""
        shown = core if core else text
        share = _number(token["copy_share"])
        p_gen = _number(token["p_gen"])
        span = token["source_span"]
        classes = ["pg-out"]
        if span is not None:
            classes.append("pg-copied")
        if token.get("protected"):
            classes.append("pg-protected")
        if not core:
            classes.append("pg-blank")
        attention = ",".join(_float_attr(weight) for weight in token["attention"])
        origin = "copied" if span is not None else "generated"
        label = f"{core or 'whitespace'}: {origin}, copy share {_percent(share)}, p_gen {_fixed(p_gen)}" + (
            ", protected" if token.get("protected") else ""
        )
        # Background alpha = copy share: light enough at 1 for dark text (contrast > 7:1), see _STYLE.
        alpha = 0.0 if math.isnan(share) else min(max(share, 0.0), 1.0)
        parts.append(html.escape(lead))
        parts.append(
            f'<span class="{" ".join(classes)}" id="{rid}-t{position}" tabindex="0" data-index="{position}" '
            f'data-token-id="{_attr(token.get("token_id", ""))}" data-p-gen="{_float_attr(p_gen)}" '
            f'data-copy-share="{_float_attr(share)}" '
            f'data-source-span="{"" if span is None else f"{int(span[0])},{int(span[1])}"}" '
            f'data-protected="{"true" if token.get("protected") else "false"}" data-attention="{attention}" '
            f'style="--share:{alpha:.3f}" aria-label="{_attr(label)}" aria-describedby="{rid}-inspector">'
            f"{html.escape(shown)}</span>"
        )
        parts.append(html.escape(trail))
    return "".join(parts)


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.0f}%"


def _fixed(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


_LEGEND = """<div class="pg-legend" aria-label="Legend">
<div class="pg-legend-item"><span class="pg-ramp pg-ramp-copy" aria-hidden="true"></span>
<span>output token shading: share of its probability that came from <b>copying</b> (0% to 100%)</span></div>
<div class="pg-legend-item"><span class="pg-ramp pg-ramp-attention" aria-hidden="true"></span>
<span>source token shading: <b>attention</b> the hovered or focused output token paid it</span></div>
<div class="pg-legend-item"><span class="pg-sample pg-out pg-copied" aria-hidden="true">word</span>
<span>copied from the source</span></div>
<div class="pg-legend-item"><span class="pg-sample pg-out pg-protected" aria-hidden="true">word</span>
<span>protected span (guaranteed copy)</span></div>
<div class="pg-legend-item"><span class="pg-sample pg-src pg-copy-source" aria-hidden="true">word</span>
<span>source token it was copied from</span></div>
<div class="pg-legend-item"><span class="pg-sample pg-src pg-special" aria-hidden="true">&lt;/s&gt;</span>
<span>special token</span></div>
</div>"""

_STYLE = """
:root { --ink: #1b1b1f; --muted: #4a4f57; --rule: #d0d4da; --copy: 236, 120, 20; --attend: 25, 95, 210;
        --focus: #0b3fa8; --protect: #6b2fa0; }
* { box-sizing: border-box; }
body { margin: 0; padding: 1.5rem; background: #fff; color: var(--ink);
       font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
header, main { max-width: 72rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.05rem; margin: 0 0 .5rem; }
.pg-count, .pg-summary { color: var(--muted); font-weight: normal; font-size: .9rem; }
.pg-summary::before { content: "\\2014\\00a0"; }
.pg-legend { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; margin: .75rem 0 1.25rem; font-size: .9rem;
             color: var(--muted); }
.pg-legend-item { display: flex; align-items: center; gap: .5rem; }
.pg-ramp { display: inline-block; width: 5rem; height: .9rem; border: 1px solid var(--rule); border-radius: 3px; }
.pg-ramp-copy { background: linear-gradient(to right, rgba(var(--copy), 0), rgba(var(--copy), .75)); }
.pg-ramp-attention { background: linear-gradient(to right, rgba(var(--attend), 0), rgba(var(--attend), .45)); }
.pg-record { border: 1px solid var(--rule); border-radius: 8px; padding: 1rem 1.25rem; margin: 0 0 1rem; }
.pg-row { display: grid; grid-template-columns: 7rem 1fr; gap: 1rem; align-items: baseline; }
.pg-label { color: var(--muted); font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; }
.pg-source, .pg-translation { margin: .2rem 0; font-size: 1.1rem; line-height: 2.2; white-space: pre-wrap;
                              overflow-wrap: anywhere; }
.pg-src, .pg-out { padding: .15em .06em; border-radius: 3px; }
.pg-src { background: rgba(var(--attend), calc(var(--weight, 0) * .45)); transition: background-color .1s; }
.pg-src.pg-special { font-size: .75em; color: var(--muted); border: 1px solid var(--rule); margin: 0 .2em;
                     font-family: ui-monospace, monospace; }
.pg-src.pg-attended { box-shadow: inset 0 -3px 0 rgb(var(--attend)); }
.pg-src.pg-copy-source { outline: 2px solid rgb(var(--copy)); outline-offset: 1px; }
.pg-src.pg-protected { border-bottom: 2px dashed var(--protect); }
.pg-translation:empty::before { content: "(empty output)"; color: var(--muted); font-size: .9rem; }
.pg-out { background: rgba(var(--copy), calc(var(--share, 0) * .75)); cursor: default; }
.pg-out.pg-copied { text-decoration: underline 2px; text-underline-offset: .25em; }
.pg-out.pg-protected { box-shadow: inset 0 0 0 2px var(--protect); }
.pg-out.pg-blank { display: inline-block; min-width: .5em; }
.pg-out.pg-blank:empty::after { content: "\\00b7"; color: var(--muted); }
.pg-out:hover, .pg-out.pg-active { outline: 2px solid var(--ink); outline-offset: 1px; }
.pg-out:focus-visible, .pg-out:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
.pg-sample { font-size: .85rem; padding: 0 .3em; color: var(--ink); }
.pg-legend .pg-out.pg-copied { --share: .9; }
.pg-protected-list { margin: .1rem 0; font-size: .9rem; }
.pg-protected-span { border: 1px dashed var(--protect); border-radius: 3px; padding: 0 .25em; margin-right: .25em; }
.pg-inspector { margin: .75rem 0 0 8rem; padding: .5rem .75rem; min-height: 3.2rem; background: #f4f5f7;
                border-left: 4px solid var(--rule); border-radius: 4px; font-size: .95rem; }
.pg-inspector.pg-showing { border-left-color: rgb(var(--copy)); }
.pg-inspector p { margin: .1rem 0; }
.pg-hint { color: var(--muted); }
.pg-i-token { font-weight: 600; }
.pg-i-word { font-family: ui-monospace, monospace; background: #fff; border: 1px solid var(--rule);
             border-radius: 3px; padding: 0 .25em; white-space: pre; }
@media (max-width: 40rem) { .pg-row { grid-template-columns: 1fr; gap: 0; }
  .pg-inspector { margin-left: 0; } }
"""

# The page's behaviour. Record text only ever goes through textContent: none of it is parsed as HTML.
_SCRIPT = """
(function () {
  "use strict";
  function pct(x) { return isNaN(x) ? "n/a" : Math.round(100 * x) + "%"; }
  function fixed(x) { return isNaN(x) ? "n/a" : x.toFixed(2); }
  function para(parent, cls, parts) {
    var p = document.createElement("p");
    p.className = cls;
    parts.forEach(function (part) {
      if (typeof part === "string") { p.appendChild(document.createTextNode(part)); return; }
      var s = document.createElement("span");
      s.className = part[0];
      s.textContent = part[1];
      if (part[2] !== undefined) { s.setAttribute("data-value", part[2]); }
      p.appendChild(s);
    });
    parent.appendChild(p);
  }
  function quoted(el) {
    return el.classList.contains("pg-special") ? el.textContent : "\\u201c" + el.textContent + "\\u201d";
  }
  document.querySelectorAll(".pg-record").forEach(function (record) {
    var sources = Array.prototype.slice.call(record.querySelectorAll(".pg-src"));
    var outputs = Array.prototype.slice.call(record.querySelectorAll(".pg-out"));
    var inspector = record.querySelector(".pg-inspector");
    var hint = inspector.innerHTML;
    function clear() {
      sources.forEach(function (s) {
        s.style.removeProperty("--weight");
        s.classList.remove("pg-attended", "pg-copy-source");
        s.removeAttribute("data-weight");
      });
      outputs.forEach(function (o) { o.classList.remove("pg-active"); });
      inspector.innerHTML = hint;
      inspector.classList.remove("pg-showing");
      inspector.removeAttribute("data-token");
    }
    function show(out) {
      clear();
      out.classList.add("pg-active");
      var weights = out.getAttribute("data-attention").split(",").map(Number);
      var top = 0, best = -1;
      weights.forEach(function (w, i) { if (w > top) { top = w; best = i; } });
      var span = out.getAttribute("data-source-span");
      var from = null;
      sources.forEach(function (s, i) {
        var w = weights[i] || 0;
        s.style.setProperty("--weight", top > 0 ? (w / top).toFixed(3) : "0");
        s.setAttribute("data-weight", w.toFixed(4));
        // the most attended token, and every token with at least half its weight
        if (top > 0 && (i === best || w >= 0.5 * top)) { s.classList.add("pg-attended"); }
        if (span && s.getAttribute("data-span") === span) { s.classList.add("pg-copy-source"); from = s; }
      });
      var pGen = Number(out.getAttribute("data-p-gen"));
      var share = Number(out.getAttribute("data-copy-share"));
      var index = Number(out.getAttribute("data-index"));
      inspector.innerHTML = "";
      inspector.classList.add("pg-showing");
      inspector.setAttribute("data-token", String(index));
      var id = out.getAttribute("data-token-id");
      var chars = span ? " (characters " + span.replace(",", "\\u2013") + ")" : "";
      var origin = !span ? "generated from the vocabulary" :
                   "copied from the source " + (from ? quoted(from) + chars : chars.slice(1));
      var isProtected = out.getAttribute("data-protected") === "true";
      para(inspector, "pg-i-head", [["pg-i-token pg-i-word", out.textContent],
        " output token " + (index + 1) + " of " + outputs.length + (id ? " (id " + id + ")" : "") + ": ",
        ["pg-i-origin", origin], isProtected ? "; " : ".",
        isProtected ? ["pg-i-protected", "protected span (guaranteed copy)."] : ""]);
      para(inspector, "pg-i-numbers", [["pg-i-pgen", "p_gen = " + fixed(pGen), String(pGen)],
        isNaN(pGen) ? "" : " (the switch leaned " + (pGen >= 0.5 ? pct(pGen) + " toward generating" :
                                                   pct(1 - pGen) + " toward copying") + "); ",
        ["pg-i-share", "copy share = " + pct(share), String(share)],
        " of this token\\u2019s probability came from copying."]);
      if (best >= 0) {
        para(inspector, "pg-i-attention", ["Most attended source token: ",
          ["pg-i-attended", quoted(sources[best]), String(best)], " (" + pct(top) + " of the attention)."]);
      }
    }
    outputs.forEach(function (out, i) {
      out.addEventListener("mouseenter", function () { show(out); });
      out.addEventListener("focus", function () { show(out); });
      out.addEventListener("mouseleave", function () {
        var focused = record.querySelector(".pg-out:focus");
        if (focused) { show(focused); } else { clear(); }
      });
      out.addEventListener("blur", function () { if (!record.querySelector(".pg-out:hover")) { clear(); } });
      out.addEventListener("keydown", function (event) {
        var next = event.key === "ArrowRight" ? i + 1 : event.key === "ArrowLeft" ? i - 1 :
                   event.key === "Home" ? 0 : event.key === "End" ? outputs.length - 1 : -1;
        if (next >= 0 && next < outputs.length && (event.key !== "ArrowRight" || i + 1 < outputs.length)) {
          event.preventDefault();
          outputs[next].focus();
        }
      });
    });
  });
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>{title} <span class="pg-count">{count}</span></h1>
{legend}
</header>
<main>
{sections}
</main>
<script>{script}</script>
</body>
</html>
"""


# -- picture ----------------------------------------------------------------------------------------------------------


def plot(record: Mapping[str, Any] | Sequence[Mapping[str, Any]], path: str | os.PathLike, dpi: int = 150) -> Path:
    """Save a picture of one copy record: the pointer attention (output tokens x source tokens) as a heatmap, with
    a strip of p_gen and copy share beside it. Copied output tokens are bold, with the source cell they were copied
    from boxed; protected ones are purple. The figure grows with the token counts, so long texts stay legible.

    ```python
    record = pipe("Delete %(name)s from Nakamura-Øresund?", return_copy_info=True)[0]
    visualize.plot(record, "copies.png")        # any format matplotlib writes: .png, .svg, .pdf
    ```

    `record` may also be the list of one record that `pipe(text, return_copy_info=True)` returns. Needs matplotlib
    (`pip install matplotlib`). Returns the path written.
    """
    if isinstance(record, Sequence) and not isinstance(record, (str, bytes)):
        if len(record) != 1:  # pipe("text", ...) returns a list of one record: take that one, refuse several
            raise ValueError(
                f"plot draws one record, got {len(record)}: call it once per record, plot(records[i], ...)."
            )
        record = record[0]
    _check_record(record, 0)
    path = Path(path)
    figure = _figure(record)
    figure.savefig(path, dpi=dpi)
    return path


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "hf_pgen.visualize.plot needs matplotlib: `pip install matplotlib` (or `pip install hf_pgen[viz]`)."
        ) from error
    return Figure, FigureCanvasAgg


def _label(text: str, limit: int = 24) -> str:
    """A tick label for a token: its visible text, whitespace shown as a symbol, long ones shortened."""
    core = text.strip()
    if not core:
        return "\u2423" if text else "\u2205"  # open box for whitespace, empty set for an empty token
    return core if len(core) <= limit else core[: limit - 1] + "\u2026"


def _wrapped(text: str, width: int = 110, lines: int = 2) -> str:
    import textwrap

    wrapped = textwrap.wrap(" ".join(text.split()), width) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: width - 1] + "\u2026"
    return "\n".join(wrapped)


def _figure(record: Mapping[str, Any]):
    """The matplotlib `Figure` (Agg canvas, outside pyplot) that `plot` saves."""
    Figure, FigureCanvasAgg = _matplotlib()
    import numpy as np
    from matplotlib.patches import Rectangle

    source_tokens, tokens = record["source_tokens"], record["tokens"]
    rows, columns = max(len(tokens), 1), max(len(source_tokens), 1)
    attention = np.zeros((rows, columns))  # (output tokens, source tokens)
    for i, token in enumerate(tokens):
        attention[i, : len(source_tokens)] = [_number(w) for w in token["attention"]]
    attention = np.nan_to_num(attention)
    strip = np.full((rows, 2), np.nan)  # (output tokens, [p_gen, copy share])
    for i, token in enumerate(tokens):
        strip[i] = _number(token["p_gen"]), _number(token["copy_share"])

    # Sizes in inches: a fixed cell per token and room for the longest labels, so the text stays ~9 pt at any length.
    cell = 0.3
    row_labels = [_label(t["text"]) for t in tokens] or ["(empty)"]
    column_labels = [_label(t["text"]) for t in source_tokens] or ["(none)"]

    def label_in(labels: list[str]) -> float:  # ~0.075 in per character at 9 pt
        return 0.15 + 0.075 * max(len(label) for label in labels)

    left = 0.45 + label_in(row_labels)  # the axis title, then the labels
    strip_in, gap, bar_in = 1.1, 0.15, 1.0
    heat_w, heat_h = cell * columns, cell * rows
    width = max(left + heat_w + gap + strip_in + bar_in, 6.5)
    line = int((width - 1.0) / 0.075)  # characters of 9 pt text across the figure
    title = f"source: {_wrapped(record['source'], line)}\noutput: {_wrapped(record[_output_key(record)], line)}"
    top = 0.25 + 0.17 * (title.count("\n") + 1) + 0.45  # title lines, then the strip's column names
    bottom = 0.55 + 0.7 * label_in(column_labels) + 0.55  # footnote, rotated labels, axis title
    height = top + heat_h + bottom
    figure = Figure(figsize=(width, height), layout=None)
    FigureCanvasAgg(figure)
    text_props = {"parse_math": False}  # "$" in a token is a dollar sign, not mathtext
    # axes rectangles in figure fractions
    heat = figure.add_axes((left / width, bottom / height, heat_w / width, heat_h / height))
    p_gen_axes, share_axes = (
        figure.add_axes(
            (
                (left + heat_w + gap + k * strip_in / 2) / width,
                bottom / height,
                0.95 * strip_in / 2 / width,
                heat_h / height,
            )
        )
        for k in (0, 1)
    )
    bar_h = min(heat_h, 2.0)  # level with the heatmap's first rows
    bar = figure.add_axes(
        (
            (left + heat_w + gap + strip_in + 0.25) / width,
            (bottom + heat_h - bar_h) / height,
            0.12 / width,
            bar_h / height,
        )
    )

    top_weight = float(attention.max())  # the colours span the weights there are: sharper for diffuse attention
    image = heat.imshow(
        attention,
        cmap="Blues",
        vmin=0.0,
        vmax=top_weight if top_weight > 0 else 1.0,
        aspect="auto",
        interpolation="nearest",
    )
    heat.set_xticks(
        range(columns), column_labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=9, **text_props
    )
    heat.set_yticks(range(rows), row_labels, fontsize=9, **text_props)
    heat.set_xlabel("source tokens (pointer attention)", fontsize=9, labelpad=6)
    heat.set_ylabel("output tokens", fontsize=9)
    heat.set_xticks(np.arange(-0.5, columns), minor=True)
    heat.set_yticks(np.arange(-0.5, rows), minor=True)
    heat.grid(which="minor", color="white", linewidth=0.6)
    heat.tick_params(which="minor", length=0)
    spans = [tuple(t["span"]) if t.get("span") is not None else None for t in source_tokens]
    for i, token in enumerate(tokens):
        label = heat.get_yticklabels()[i]
        if token["source_span"] is not None:
            label.set_fontweight("bold")
            span = tuple(token["source_span"])
            if span in spans:  # box the cell it was copied from
                heat.add_patch(
                    Rectangle((spans.index(span) - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#e07a10", linewidth=1.8)
                )
        if token.get("protected"):
            label.set_color("#6b2fa0")

    # p_gen (1 = generated) and copy share (1 = copied) read in opposite directions: one colour map each.
    for axes, column, name, cmap in ((p_gen_axes, 0, "p_gen", "Greens"), (share_axes, 1, "copy\nshare", "Oranges")):
        values = strip[:, column : column + 1]  # (rows, 1)
        axes.imshow(
            np.nan_to_num(values, nan=0.0), cmap=cmap, vmin=0.0, vmax=1.6, aspect="auto", interpolation="nearest"
        )
        for i, value in enumerate(values[:, 0]):
            axes.text(
                0,
                i,
                "n/a" if np.isnan(value) else f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="#1b1b1f",
                **text_props,
            )
        axes.set_xticks([0], [name], fontsize=8)
        axes.xaxis.tick_top()
        axes.set_yticks([])
        axes.tick_params(length=0)

    colorbar = figure.colorbar(image, cax=bar)
    colorbar.ax.tick_params(labelsize=7)
    colorbar.set_label("attention", fontsize=8)

    figure.text(0.15 / width, 1 - 0.2 / height, title, ha="left", va="top", fontsize=9, **text_props)
    figure.text(
        0.15 / width,
        0.1 / height,
        "bold: copied (boxed: the source token it came from)    purple: protected\n"
        "p_gen: 1 = generated, 0 = copied    copy share: share of the probability from copying",
        ha="left",
        va="bottom",
        fontsize=7,
        color="#4a4f57",
        **text_props,
    )
    return figure
