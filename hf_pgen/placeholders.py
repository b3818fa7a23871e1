"""The placeholder grammar of hf_pgen: one pattern, used by the metrics and by protected decoding.

Software messages carry tokens that a translation must reproduce verbatim: printf / Python / ICU / brace
placeholders, HTML tags and URLs. `extract_placeholders` lists them (what `hf_pgen.metrics` scores);
`placeholder_spans` gives where they stand in the text (what `protect="placeholders"` protects).

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library.
"""

from __future__ import annotations

import re

# Protection also reads the grammar's facts PLACEHOLDER_MARKS, URL_PREFIXES, PERCENT_PREFIX, placeholder_end_at_start.
__all__ = ["PLACEHOLDER_PATTERN", "PLACEHOLDER_STARTS", "extract_placeholders", "placeholder_spans"]

_ICU_SIMPLE_TYPES = r"(?:number|integer|date|time|datetime|spellout|ordinal|duration)"
_ICU_COMPLEX_TYPES = r"(?:plural|selectordinal|select|choice)"
_PRINTF_FLAGS = r"[-#0+']*"  # no space flag: "50% off" must not read as "% o"
_PRINTF_WIDTH = r"(?:\*|\d+)?(?:\.(?:\*|\d+))?"
_PRINTF_LENGTH = r"(?:hh|h|ll|l|L|q|j|z|t|I64|I32)?"
# Element names that count as markup; "<new column>" or "<username>" in a message is text to translate.
_HTML_ELEMENTS = (
    "a|abbr|acronym|address|b|bdi|bdo|big|blockquote|body|br|button|caption|center|cite|code|col|dd|del|details|dfn|"
    "div|dl|dt|em|font|footer|form|h[1-6]|head|header|hr|html|i|iframe|img|input|ins|kbd|label|li|link|main|mark|"
    "meta|nav|ol|option|p|pre|q|s|samp|section|select|small|span|strike|strong|sub|summary|sup|table|tbody|td|"
    "textarea|tfoot|th|thead|time|title|tr|tt|u|ul|var|wbr"
)
_ATTRIBUTES = r"""(?:\s+[A-Za-z_:@][-\w:.@]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=`]+))?)*"""

# Alternatives are tried left to right at each position: longer / more specific forms first.
PLACEHOLDER_PATTERN = re.compile(
    "|".join(
        [
            # URLs (trailing sentence punctuation is not part of them).
            r"(?P<url>(?:(?:https?|ftp)://|www\.)[\w\[][^\s<>\"'`\u201c\u201d\u2018\u2019]*"
            r"[^\s<>\"'`\u201c\u201d\u2018\u2019.,;:!?)\]}])",
            # Markup: known HTML elements with any attributes (<b>, </a>, <br/>, <a href="...">), numbered rich-text
            # tags (<0>, </1>, <2/>), and any element that has at least one attribute with a value.
            r"(?P<tag></?(?i:" + _HTML_ELEMENTS + r")" + _ATTRIBUTES + r"\s*/?>|</?\d+\s*/?>"
            r"|<[A-Za-z][-\w:.]*(?:\s+[A-Za-z_:@][-\w:.@]*\s*=\s*(?:\"[^\"]*\"|'[^']*'))+\s*/?>)",
            # Template variables: {{ name }}, {{name|filter}}, ${name}, #{name}, %{name}.
            r"(?P<double>\{\{[^{}\n]{1,80}\}\})",
            r"(?P<dollar>[$#%]\{[A-Za-z_][\w.\-]*\})",
            # ICU MessageFormat simple arguments, whole: {n, number}, {d, date, short}.
            r"(?P<icu>\{\s*[A-Za-z_0-9][\w.]*\s*,\s*" + _ICU_SIMPLE_TYPES + r"\s*(?:,\s*[^{}\s][^{}]*)?\})",
            # str.format / .NET / Java MessageFormat: {}, {0}, {name}, {0:.2f}, {name!r}, {obj.attr}, {items[0]}.
            r"(?P<brace>\{(?:[A-Za-z_]\w*|\d+)?(?:\.[A-Za-z_]\w*|\[[^\[\]{}]*\])*(?:![rsa])?(?::[^{}]*)?\})",
            # printf: an escaped percent first (consumed so that "%%s" is not read as "%s", but not counted).
            r"(?P<escaped>%%)",
            r"(?P<pynamed>%\([^()\s]+\)" + _PRINTF_FLAGS + _PRINTF_WIDTH + r"[diouxXeEfFgGcrsa])",
            r"(?P<printf>%(?:\d+\$)?" + _PRINTF_FLAGS + _PRINTF_WIDTH + _PRINTF_LENGTH + r"[diouxXeEfFgGcsSpa@])",
            # Qt / Windows positional arguments: %1, %2, %L1.
            r"(?P<positional>%L?\d+)",
        ]
    )
)
# Every proper prefix of a placeholder above that begins with "%" (a superset: it only has to hold them all): "%{" and
# a name (dollar), "%(" and a name, closed or not, then flags, width and precision (pynamed), or flags, an argument
# number, width, precision and length (printf, positional). A text that begins with "%" and is not one of these ends
# every placeholder begun at its "%" within it: nothing appended can complete one there (protected decoding skips it).
PERCENT_PREFIX = re.compile(r"%(?:\{[\w.\-]*|\([^()\s]*(?:\)[-#0+'\d*.]*)?|[\d$\-#0+'*.hlLqjztI]*)")
# ICU plural/select/...: "{count, plural, one {# item} other {# items}}". The head "{count, plural," must survive;
# the sub-messages are translated text that may hold placeholders of their own.
_ICU_COMPLEX_HEAD = re.compile(r"\{\s*([A-Za-z_0-9][\w.]*)\s*,\s*(" + _ICU_COMPLEX_TYPES + r")\s*,")

# What every placeholder of the grammar (and ICU head) begins with: one of "%{<$#", or a URL's scheme or "www.". The
# first characters of PLACEHOLDER_PATTERN's alternatives, written out once (tests/test_metrics.py derives them from
# the pattern itself); protected decoding and the training augmentation read where a placeholder may begin from it.
PLACEHOLDER_MARKS = ("%", "{", "<", "$", "#")
URL_PREFIXES = ("https://", "http://", "ftp://", "www.")
PLACEHOLDER_STARTS = (*PLACEHOLDER_MARKS, *URL_PREFIXES)
# The same pattern behind a lookahead for those starts finds the same matches, but the regex engine skips the other
# positions at once instead of trying every alternative there (protected decoding scans a vocabulary with it). A
# text that holds none of the starts holds no placeholder at all.
_SCAN_PATTERN = re.compile(
    "(?=" + "|".join(map(re.escape, PLACEHOLDER_STARTS)) + ")(?:" + PLACEHOLDER_PATTERN.pattern + ")"
)


def _scan(text: str, start: int, end: int, found: list[tuple[int, int, str]]) -> None:
    for match in _SCAN_PATTERN.finditer(text, start, end):  # the pattern has no anchors: same as slicing
        if match.lastgroup == "escaped":
            continue
        value = match.group(0)
        if match.lastgroup in ("icu", "double"):
            value = re.sub(r"\s+", " ", value)
        found.append((match.start(), match.end(), value))


def _closing_brace(text: str, start: int, end: int) -> int | None:
    """Index of the brace closing the one opened just before `start` (depth 1) before `end`, or None."""
    depth = 1
    for index in range(start, end):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _extract(text: str, start: int, end: int, found: list[tuple[int, int, str]]) -> None:
    position = start
    while True:
        head = _ICU_COMPLEX_HEAD.search(text, position, end)
        if head is None:
            _scan(text, position, end, found)
            return
        _scan(text, position, head.start(), found)
        found.append((head.start(), head.end(), f"{{{head.group(1)}, {head.group(2)},"))
        close = _closing_brace(text, head.end(), end)
        if close is None:  # unbalanced: keep the head, read the rest as plain text
            position = head.end()
            continue
        # Sub-messages sit at depth 1 inside the block: "one {...} other {...}".
        index = head.end()
        while index < close:
            if text[index] == "{":
                inner = _closing_brace(text, index + 1, close)
                if inner is None:
                    break
                _extract(text, index + 1, inner, found)
                index = inner + 1
            else:
                index += 1
        position = close + 1


def _placeholders(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    if any(start in text for start in PLACEHOLDER_STARTS):
        _extract(text, 0, len(text), found)
    return found


def placeholder_end_at_start(text: str) -> int | None:
    """Where the placeholder that `placeholder_spans` finds at position 0 of `text` ends (None: none starts
    there), without scanning the rest of the text: `(0, n) in placeholder_spans(text)` is
    `placeholder_end_at_start(text) == n`."""
    head = _ICU_COMPLEX_HEAD.search(text) if "{" in text else None
    if head is not None and head.start() == 0:
        return head.end()
    # what _extract scans first: the text before the first ICU head
    match = _SCAN_PATTERN.match(text, 0, head.start() if head is not None else len(text))
    if match is None or match.lastgroup == "escaped":
        return None
    return match.end()


def extract_placeholders(text: str) -> list[str]:
    """The placeholders of `text` in order of appearance, repeats included.

    Recognised: URLs; HTML tags of known elements (`<b>`, `</a>`, `<br/>`, `<a href="...">`), numbered
    rich-text tags (`<0>`, `</0>`) and any tag with a valued attribute; `{{ var }}` / `${var}` / `%{var}`;
    ICU arguments (`{n, number}` whole; for `{n, plural, one {...} other {...}}` the head `{n, plural,` plus
    the placeholders inside the sub-messages, whose braces are not placeholders); brace fields (`{}`, `{0}`,
    `{name}`, `{0:.2f}`); printf (`%s`, `%5.2f`, `%1$s`, `%lu`); Python named (`%(name)s`) and
    positional `%1`. `%%` is an escaped percent sign, not a placeholder. Whitespace inside ICU arguments and
    `{{ }}` is normalised to single spaces.
    """
    return [value for _, _, value in _placeholders(text)]


def placeholder_spans(text: str) -> list[tuple[int, int]]:
    """Character spans `(start, end)` of `extract_placeholders`' placeholders in `text`, same order; the
    text there is the source's own (not whitespace-normalised). They never overlap."""
    return [(start, end) for start, end, _ in _placeholders(text)]
