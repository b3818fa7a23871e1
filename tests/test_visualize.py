"""hf_pgen.visualize: the standalone HTML page (parsed, and driven in a real headless Chromium) and the PNG picture.

The copy records are built by hand here, to the contract the pipeline's `return_copy_info=True` follows, so these
tests need no model.
"""

import json
import re
import struct
import sys
from html.parser import HTMLParser

import pytest
from browser import chromium

from hf_pgen import visualize

VOCAB = 200  # token ids >= VOCAB are copied out-of-vocabulary words
_WORDS = re.compile(r"%\(\w+\)s|</?\w+>|\w+|[^\w\s]")


def make_record(source, outputs, protected_spans=()):
    """A copy record for `source` (word-level tokens + "</s>") and `outputs`: (text, p_gen, attended word or None,
    copied, protected, out of vocabulary) per output token. Each token's attention puts 0.7 on the word it attends
    (or on the position of its own index), the rest spread evenly."""
    source_tokens = [{"text": m.group(), "span": [m.start(), m.end()]} for m in _WORDS.finditer(source)]
    source_tokens.append({"text": "</s>", "span": None})
    n = len(source_tokens)
    tokens = []
    for i, (text, p_gen, attended, copied, protected, oov) in enumerate(outputs):
        j = min(i, n - 1) if attended is None else [t["text"] for t in source_tokens].index(attended)
        attention = [0.7 if k == j else 0.3 / (n - 1) for k in range(n)]
        tokens.append(
            {
                "text": text,
                "token_id": VOCAB + i if oov else 10 + i,
                "p_gen": p_gen,
                "copy_share": round((1 - p_gen) * (0.97 if copied else 0.1), 4),
                "source_span": source_tokens[j]["span"] if copied else None,
                "attention": attention,
                "protected": protected,
            }
        )
    return {
        "translation_text": "".join(t["text"] for t in tokens),
        "source": source,
        "source_tokens": source_tokens,
        "tokens": tokens,
        "protected_spans": list(protected_spans),
    }


@pytest.fixture(scope="module")
def records():
    # markup, a placeholder (protected), quotes and "&", non-ASCII words the vocabulary lacks (copied OOV)
    first = make_record(
        'Delete %(name)s from <b>Nakamura-Øresund</b> & "Zyxwvut"?',
        [
            ("Lösche", 0.93, "Delete", False, False, False),
            (" %(name)s", 0.05, "%(name)s", True, True, False),
            (" aus", 0.88, "from", False, False, False),
            (" <b>", 0.2, "<b>", True, False, False),
            ("Nakamura", 0.03, "Nakamura", True, False, True),
            ("-", 0.6, "-", False, False, False),
            ("Øresund", 0.02, "Øresund", True, False, True),
            ("</b>", 0.3, "</b>", True, False, False),
            (" &", 0.7, "&", False, False, False),
            (' "', 0.9, None, False, False, False),
            ("Zyxwvut", 0.04, "Zyxwvut", True, False, True),
            ('"?', 0.8, "?", False, False, False),
        ],
        protected_spans=["%(name)s"],
    )
    second = make_record(
        "Open the file now",
        [
            ("Öffne", 0.97, "Open", False, False, False),
            (" die", 0.95, "the", False, False, False),
            (" Datei", 0.9, "file", False, False, False),
            (" jetzt", 0.96, "now", False, False, False),
        ],
    )
    for record in (first, second):
        assert json.loads(json.dumps(record)) == record  # records are plain JSON
    return [first, second]


# -- the page, parsed --------------------------------------------------------------------------------------------------


class _Element:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    @property
    def classes(self):
        return set((self.attrs.get("class") or "").split())

    def text(self):
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def iter(self):
        for child in self.children:
            if isinstance(child, _Element):
                yield child
                yield from child.iter()

    def select(self, cls=None, tag=None):
        return [e for e in self.iter() if (cls is None or cls in e.classes) and (tag is None or e.tag == tag)]

    def by_id(self, element_id):
        return next(e for e in self.iter() if e.attrs.get("id") == element_id)


class _TreeBuilder(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = _Element("#document", {})

    def handle_starttag(self, tag, attrs):
        element = _Element(tag, attrs, self.current)
        self.current.children.append(element)
        if tag not in self.VOID:
            self.current = element

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, f"</{tag}> closes nothing: the page is not well formed"
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def _parse(page):
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, f"<{builder.current.tag}> is never closed"
    return builder.root


def test_page_holds_each_record_escaped_and_marked(records, tmp_path):
    path = visualize.to_html(records, tmp_path / "copies.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    root = _parse(page)

    # standalone: nothing to fetch
    assert not re.search(r"https?://|\burl\(|@import", page)
    assert all("src" not in e.attrs and "href" not in e.attrs for e in root.iter())
    assert root.select(tag="style") and root.select(tag="script")

    sections = root.select("pg-record")
    assert [s.attrs["id"] for s in sections] == ["pg-r0", "pg-r1"]
    for index, (section, record) in enumerate(zip(sections, records)):
        rid = f"pg-r{index}"
        # the text reads exactly as given: markup in a source or translation is text, never elements
        output = section.by_id(f"{rid}-output")
        assert output.text() == record["translation_text"]
        assert not [e for e in output.iter() if e.tag not in ("span",)]
        source = section.by_id(f"{rid}-source")
        specials = source.select("pg-special")
        assert [e.text() for e in specials] == ["</s>"]
        assert (
            "".join(
                c if isinstance(c, str) else ("" if "pg-special" in c.classes else c.text()) for c in source.children
            )
            == record["source"]
        )
        assert not source.select(tag="b") and not output.select(tag="b")

        # one element per attended source position, one focusable element per output token
        positions = [int(e.attrs["data-index"]) for e in source.select("pg-src")]
        assert positions == list(range(len(record["source_tokens"])))
        outs = output.select("pg-out")
        assert len(outs) == len(record["tokens"])
        for position, (element, token) in enumerate(zip(outs, record["tokens"])):
            assert element.attrs["id"] == f"{rid}-t{position}" and element.attrs["tabindex"] == "0"
            assert element.text() == token["text"].strip()
            assert float(element.attrs["data-p-gen"]) == pytest.approx(token["p_gen"])
            assert float(element.attrs["data-copy-share"]) == pytest.approx(token["copy_share"])
            weights = [float(w) for w in element.attrs["data-attention"].split(",")]
            assert weights == pytest.approx(token["attention"], abs=1e-6)
            assert ("pg-copied" in element.classes) == (token["source_span"] is not None)
            assert ("pg-protected" in element.classes) == token["protected"]
            span = token["source_span"]
            assert element.attrs["data-source-span"] == ("" if span is None else f"{span[0]},{span[1]}")
            label = element.attrs["aria-label"]
            assert f"p_gen {token['p_gen']:.2f}" in label and ("copied" in label) == (span is not None)
            assert element.attrs["aria-describedby"] == f"{rid}-inspector"
        inspector = section.by_id(f"{rid}-inspector")
        assert inspector.attrs["role"] == "status" and inspector.attrs["aria-live"] == "polite"

    # protected spans: listed, and marked on the source tokens they cover
    first = sections[0]
    assert [e.text() for e in first.select("pg-protected-span")] == ["%(name)s"]
    assert [e.text() for e in first.by_id("pg-r0-source").select("pg-protected")] == ["%(name)s"]
    assert not sections[1].select("pg-protected-span")
    # a quote inside an attribute survives escaping
    assert outs[0].attrs["aria-label"].startswith("Öffne: generated")
    assert root.by_id("pg-r0-t9").attrs["aria-label"].startswith('": generated')
    # the legend explains every marking
    legend = root.select("pg-legend")[0]
    assert {"pg-ramp-copy", "pg-ramp-attention", "pg-copied", "pg-protected", "pg-copy-source"} <= set().union(
        *(e.classes for e in legend.iter())
    )


def test_page_takes_one_record_or_pipeline_lists(records):
    one = _parse(visualize.html_page(records[0]))
    assert len(one.select("pg-record")) == 1
    # pipe(texts, num_return_sequences=k, return_copy_info=True) gives one list of k records per text
    nested = _parse(visualize.html_page([[records[0]], [records[1], records[0]]]))
    assert len(nested.select("pg-record")) == 3
    # an empty input and output still make a section, with an empty translation
    empty = _parse(visualize.html_page([make_record("", [])])).select("pg-record")[0]
    assert empty.by_id("pg-r0-output").text() == "" and not empty.select("pg-out")
    assert [e.text() for e in empty.select("pg-src")] == ["</s>"]


def test_page_refuses_what_is_not_a_copy_record(records):
    with pytest.raises(ValueError, match=r"record 1 lacks \['tokens'\].*return_copy_info=True"):
        visualize.html_page([records[0], {"translation_text": "x", "source": "x", "source_tokens": []}])
    broken = json.loads(json.dumps(records[1]))
    broken["tokens"][2]["attention"] = broken["tokens"][2]["attention"][:-1]
    with pytest.raises(ValueError, match="output token 2: its attention has 4 weights but the record has 5 source"):
        visualize.to_html(broken, "unused.html")
    with pytest.raises(TypeError, match="record 0 is a str"):
        visualize.html_page(["Open the file"])


# -- the page, in a real browser -------------------------------------------------------------------------------------


def _alpha(color):
    """The alpha of a computed CSS colour ("rgba(25, 95, 210, 0.45)" or "rgb(...)")."""
    values = re.findall(r"[\d.]+", color)
    return float(values[3]) if len(values) == 4 else 1.0


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_page_in_headless_chromium_on_hover_and_keyboard_focus(records, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path = visualize.to_html(records, tmp_path / "copies.html")
    with chromium() as driver:
        driver.get(path.as_uri())
        find = lambda element_id: driver.find_element(By.ID, element_id)  # noqa: E731
        inspector = find("pg-r0-inspector")
        assert "Hover over an output token" in inspector.text

        def attended(rid="pg-r0"):
            return [e.get_attribute("id") for e in driver.find_elements(By.CSS_SELECTOR, f"#{rid} .pg-attended")]

        # the browser shows markup in the source as text
        assert find("pg-r0-source").text.startswith('Delete %(name)s from <b>Nakamura-Øresund</b> & "Zyxwvut"?')
        assert not driver.find_elements(By.CSS_SELECTOR, "#pg-r0-source b")

        # hover "Nakamura" (a copied out-of-vocabulary word): its source word lights up, the panel says why
        ActionChains(driver).move_to_element(find("pg-r0-t4")).perform()
        assert attended() == ["pg-r0-s4"]
        copied_from = find("pg-r0-s4")
        assert "pg-copy-source" in copied_from.get_attribute("class")
        assert _alpha(copied_from.value_of_css_property("background-color")) == pytest.approx(0.45, abs=0.01)
        assert _alpha(find("pg-r0-s0").value_of_css_property("background-color")) < 0.05
        assert inspector.find_element(By.CLASS_NAME, "pg-i-pgen").text == "p_gen = 0.03"
        assert inspector.find_element(By.CLASS_NAME, "pg-i-share").text == "copy share = 94%"
        assert "copied from the source \u201cNakamura\u201d (characters 24\u201332)" in inspector.text
        assert "leaned 97% toward copying" in inspector.text
        assert "Nakamura" in inspector.find_element(By.CLASS_NAME, "pg-i-attended").text
        assert attended("pg-r1") == [] and "Hover over" in find("pg-r1-inspector").text  # records are independent
        hover_shot = tmp_path / "copies-hover.png"
        driver.save_screenshot(str(hover_shot))

        # moving on to a generated word: the highlight follows, then leaving clears it
        ActionChains(driver).move_to_element(find("pg-r0-t0")).perform()
        assert attended() == ["pg-r0-s0"] and "generated from the vocabulary" in inspector.text
        assert inspector.find_element(By.CLASS_NAME, "pg-i-pgen").text == "p_gen = 0.93"
        ActionChains(driver).move_to_element(driver.find_element(By.TAG_NAME, "h1")).perform()
        assert attended() == [] and "Hover over" in inspector.text

        # keyboard only: Tab reaches the first output token, then the protected placeholder; arrows move along
        driver.find_element(By.TAG_NAME, "body").click()
        ActionChains(driver).send_keys(Keys.TAB).perform()
        assert driver.switch_to.active_element.get_attribute("id") == "pg-r0-t0"
        assert attended() == ["pg-r0-s0"]
        ActionChains(driver).send_keys(Keys.TAB).perform()
        assert driver.switch_to.active_element.get_attribute("id") == "pg-r0-t1"
        assert attended() == ["pg-r0-s1"]
        assert inspector.find_element(By.CLASS_NAME, "pg-i-pgen").text == "p_gen = 0.05"
        assert "protected span" in inspector.find_element(By.CLASS_NAME, "pg-i-protected").text
        ActionChains(driver).send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT).perform()
        assert driver.switch_to.active_element.get_attribute("id") == "pg-r0-t4"
        assert attended() == ["pg-r0-s4"] and inspector.get_attribute("data-token") == "4"
        focus_shot = tmp_path / "copies-focus.png"
        driver.save_screenshot(str(focus_shot))
        # the focus ring is visible
        assert find("pg-r0-t4").value_of_css_property("outline-style") == "solid"
        ActionChains(driver).send_keys(Keys.END).perform()
        assert driver.switch_to.active_element.get_attribute("id") == "pg-r0-t11"
        assert driver.get_log("browser") == []  # no script error, nothing blocked

    for shot in (hover_shot, focus_shot):
        width, height = _png_size(shot)
        assert width >= 800 and height >= 600 and shot.stat().st_size > 20_000
        print(f"screenshot: {shot}")


# -- the picture -----------------------------------------------------------------------------------------------------


def test_plot_writes_a_png_with_the_tokens_as_labels(records, tmp_path):
    record = records[0]
    pyplot_loaded = "matplotlib.pyplot" in sys.modules
    path = visualize.plot(record, tmp_path / "copies.png")
    width, height = _png_size(path)
    assert 900 <= width <= 3000 and 800 <= height <= 3000 and path.stat().st_size > 20_000
    assert pyplot_loaded or "matplotlib.pyplot" not in sys.modules  # the user's pyplot state is left alone
    print(f"picture: {path}")

    figure = visualize._figure(record)
    heat = figure.axes[0]
    assert [label.get_text() for label in heat.get_xticklabels()] == [t["text"] for t in record["source_tokens"]]
    rows = heat.get_yticklabels()
    assert [label.get_text() for label in rows] == [t["text"].strip() for t in record["tokens"]]
    assert [label.get_fontweight() == "bold" for label in rows] == [
        t["source_span"] is not None for t in record["tokens"]
    ]
    assert rows[1].get_color() != rows[0].get_color()  # the protected placeholder stands out
    image = heat.get_images()[0].get_array()
    assert image.shape == (len(record["tokens"]), len(record["source_tokens"]))
    assert image[4].argmax() == 4  # "Nakamura" attends to its source word
    p_gen_texts = [text.get_text() for text in figure.axes[1].texts]
    assert p_gen_texts == [f"{t['p_gen']:.2f}" for t in record["tokens"]]
    assert [text.get_text() for text in figure.axes[2].texts] == [f"{t['copy_share']:.2f}" for t in record["tokens"]]
    assert "Nakamura-Øresund" in "".join(text.get_text() for text in figure.texts)


def test_plot_grows_with_the_text(records):
    """Each token keeps a cell of the same size (so its label stays legible): a longer text makes a bigger figure."""
    words = "The file %(filename)s could not be saved to Øresund because the disk is full, please try again".split()
    outputs = [((" " if i else "") + w, 0.5, None, False, False, False) for i, w in enumerate(words * 2)]
    cells, sizes = [], []
    for record in (records[1], make_record(" ".join(words), outputs)):
        figure = visualize._figure(record)
        width, height = figure.get_size_inches()
        box = figure.axes[0].get_position()  # the heatmap, in figure fractions
        cells.append((box.width * width / len(record["source_tokens"]), box.height * height / len(record["tokens"])))
        sizes.append((width, height))
    assert cells[0] == pytest.approx(cells[1]) and min(cells[0]) >= 0.25  # inches per token
    assert sizes[1][0] > sizes[0][0] + 2 and sizes[1][1] > sizes[0][1] + 8


def test_plot_takes_what_a_pipeline_returns_for_one_text(records, tmp_path):
    assert _png_size(visualize.plot([records[1]], tmp_path / "one.png"))[0] > 0  # pipe(text) gives [record]
    with pytest.raises(ValueError, match="plot draws one record, got 2"):
        visualize.plot(records, tmp_path / "two.png")


def test_plot_names_the_package_to_install(records, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(ImportError, match="pip install matplotlib"):
        visualize.plot(records[0], tmp_path / "copies.png")


pytestmark = pytest.mark.slow  # left out by `make test-fast`
