"""Model cards for pointer-generators (and plain hf_pgen baselines): what `push_to_hub`, the Trainer and
`training/run_translation.py` write as README.md.

>>> from hf_pgen.modelcard import render_model_card
>>> card = render_model_card(model, base_model="facebook/bart-base", tokenizer=tokenizer, repo_id="you/pg",
...                          results={"eval_bleu": 31.2, "eval_chrf": 55.0}, language=["en", "de"])
>>> card.save("pg/README.md")        # a huggingface_hub.ModelCard; card.data holds the YAML metadata

One builder and one template (`TEMPLATE`, Jinja, here in the module so that a saved model folder carries it): the
Hub metadata (pipeline tag, `library_name: transformers`, tags, base model, languages, licence, model-index from
`results`), the evaluation table with what each metric measures, usage snippets that run (with
`trust_remote_code=True` in a Python without hf_pgen, and with hf_pgen), the copy settings, how the model was
trained when the caller says so (`training_details`), the limitations. `model_card.md` at the top of the repository is
a card rendered from it.

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`; the model's push_to_hub imports
it): it imports only the standard library, torch, transformers, huggingface_hub (which renders with Jinja2, a dependency
of torch) and its sibling modules.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .configuration_pointer_generator import is_pointer_generator

__all__ = ["render_model_card", "usage_snippet", "pipeline_task", "is_hub_id", "hub_has_model_card", "push_model_card"]

TASKS = ("translation", "summarization", "text2text-generation")
_OUTPUT_KEYS = {
    "translation": "translation_text",
    "summarization": "summary_text",
    "text2text-generation": "generated_text",
}
_EXAMPLES = {
    "translation": "Delete the file %(name)s from Nakamura-Øresund?",
    "summarization": "Nakamura-Øresund Ltd. renamed its product Zyxwvut to Zyxwvut Pro on Monday.",
    "text2text-generation": "Delete the file %(name)s from Nakamura-Øresund?",
}
# (result key without its split prefix, metric type in the model-index (None: the card's table only), display name,
# digits in the table, what it measures)
METRICS = (
    ("bleu", "bleu", "sacreBLEU", 2, "corpus BLEU from `sacrebleu` (13a tokenisation), 0-100."),
    ("chrf", "chrf", "chrF", 2, "`sacrebleu`'s chrF (character 6-grams, β = 2), 0-100."),
    (
        "rouge1",
        "rouge",
        "ROUGE-1",
        2,
        "unigram overlap, F1 averaged over the examples (`rouge-score`, stemmed), 0-100.",
    ),
    ("rouge2", "rouge", "ROUGE-2", 2, "bigram overlap, F1 as ROUGE-1."),
    ("rougeL", "rouge", "ROUGE-L", 2, "longest common subsequence of the whole output and reference, F1 as ROUGE-1."),
    (
        "rougeLsum",
        "rouge",
        "ROUGE-Lsum",
        2,
        "longest common subsequences sentence by sentence (sentences split by `hf_pgen.metrics.split_sentences`, no "
        "download), F1 as ROUGE-1.",
    ),
    (
        "names_kept",
        "names_kept",
        "Names kept",
        3,
        "of the reference words taken from the source that look like names (capitalised after the first word, "
        "holding a digit, or an inner `.`, `+` or `-`), the share the output keeps (`hf_pgen.metrics.names_kept`).",
    ),
    (
        "bigram_repeats",
        None,
        "Outputs repeating a bigram",
        3,
        "share of outputs in which a word bigram occurs twice or more (what coverage is for).",
    ),
    (
        "placeholder_preservation",
        "placeholder_preservation",
        "Placeholder preservation",
        3,
        "share of outputs, among sources with at least one placeholder (printf `%s`, `%(name)s`, `%1`, `{name}`, "
        "`{0}`, ICU `{n, number}`, HTML tags, URLs), that contain every source placeholder exactly as often as the "
        "source and invent none (`hf_pgen.metrics.placeholder_preservation`).",
    ),
    (
        "oov_copy_rate",
        "oov_copy_rate",
        "OOV copy rate",
        3,
        "share of source words outside the tokenizer's vocabulary that the reference contains and the output contains "
        "too (`hf_pgen.metrics.oov_copy_rate`).",
    ),
    (
        "mean_p_gen",
        None,
        "Mean p_gen",
        3,
        "the copy switch averaged over reference tokens (teacher-forced); 1 = always generate, 0 = always copy.",
    ),
)
_SPLITS = (("predict_", "test"), ("test_", "test"), ("eval_", "validation"))


def pipeline_task(model, task: str | None = None) -> str:
    """The pipeline task of a card: `task` normalised ("translation_en_to_de" -> "translation"), else the one task
    the base's `task_specific_params` name (T5 names several: "text2text-generation"), else "text2text-generation"."""

    def known(name: str) -> str | None:
        return next((t for t in TASKS if name.startswith(t.split("-")[0])), None)

    if task:
        if known(task) is None:
            raise ValueError(f"task={task!r} is not one of {TASKS} (or translation_xx_to_yy).")
        return known(task)
    named = {known(name) for name in getattr(_base_config(model), "task_specific_params", None) or {}} - {None}
    return named.pop() if len(named) == 1 else "text2text-generation"


def usage_snippet(
    repo_id: str,
    *,
    copy_mechanism: bool,
    task: str = "translation",
    example: str | None = None,
    max_new_tokens: int = 64,
) -> str:
    """Markdown with Python code that loads `repo_id` and runs it on `example`.

    A pointer-generator gets two snippets: `pipeline(task, model=repo_id, trust_remote_code=True)` (the folder
    carries its code; Transformers 5 has no translation / summarization pipeline of its own) and the hf_pgen API,
    which decodes copied words with the example's OOV table. A plain model (no copy head, e.g. an hf_pgen
    baseline) gets `AutoModelForSeq2SeqLM` + `generate` + `batch_decode`, which needs neither hf_pgen nor remote code.
    """
    example = example or _EXAMPLES.get(task, _EXAMPLES["translation"])
    repo, text = _literal(repo_id), _literal(example)
    if not copy_mechanism:
        return (
            "```python\n"
            "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer\n\n"
            f"model = AutoModelForSeq2SeqLM.from_pretrained({repo})\n"
            f"tokenizer = AutoTokenizer.from_pretrained({repo})\n"
            f'inputs = tokenizer([{text}], return_tensors="pt")\n'
            f"outputs = model.generate(**inputs, max_new_tokens={max_new_tokens})\n"
            "print(tokenizer.batch_decode(outputs, skip_special_tokens=True))\n"
            "```\n"
        )
    key = _literal(_OUTPUT_KEYS.get(task, "generated_text"))
    return (
        "In a Python without hf_pgen (the folder carries its modelling and pipeline code):\n\n"
        "```python\n"
        "from transformers import pipeline\n\n"
        f"pipe = pipeline({_literal(task)}, model={repo}, trust_remote_code=True)\n"
        f"print(pipe([{text}], max_new_tokens={max_new_tokens})[0][{key}])\n"
        "```\n\n"
        "With hf_pgen installed (`import hf_pgen` registers the classes, no remote code runs):\n\n"
        "```python\n"
        "import hf_pgen\n"
        "from transformers import AutoModelForSeq2SeqLM\n\n"
        f"model = AutoModelForSeq2SeqLM.from_pretrained({repo})\n"
        f"processor = hf_pgen.PointerGeneratorProcessor.from_pretrained({repo})  # tokenizer + model's vocab_size\n"
        f'batch = processor([{text}], return_tensors="pt")\n'
        f"ids = model.generate(**batch, max_new_tokens={max_new_tokens})\n"
        "print(processor.batch_decode(ids, batch))  # copied words come back from each input's table\n"
        "```\n"
    )


def _literal(text: str) -> str:
    """A Python string literal for `text`, double-quoted, non-ASCII kept readable."""
    return json.dumps(text, ensure_ascii=False)


# The card, for every model hf_pgen writes one for. Rendered by `huggingface_hub.ModelCard.from_template` (Jinja2).
TEMPLATE = """---
{{ card_data }}
---

# {{ title }}

{{ description }}
{% if result_rows %}
## Evaluation

{{ evaluation }}

| metric | value |
|---|---:|
{% for label, value in result_rows -%}
| {{ label }} | {{ value }} |
{% endfor %}
{% for name, note in metric_notes -%}
- **{{ name }}**: {{ note }}
{% endfor -%}
{% endif %}
## How to use

{{ usage }}
{%- if copy_settings %}
## Copy settings

| setting | value |
|---|---|
{% for name, value in copy_settings -%}
| `{{ name }}` | `{{ value }}` |
{% endfor -%}
{% endif %}
{%- if training_details %}
## Training details

{{ training_details }}
{% endif %}
## Limitations

{% for line in limitations -%}
- {{ line }}
{% endfor %}
## Citation

```bibtex
@inproceedings{see-etal-2017-get,
  title = "Get To The Point: Summarization with Pointer-Generator Networks",
  author = "See, Abigail and Liu, Peter J. and Manning, Christopher D.",
  booktitle = "Proceedings of the 55th Annual Meeting of the Association for Computational Linguistics",
  year = "2017",
  pages = "1073--1083",
}
```
"""


def render_model_card(
    model,
    *,
    base_model: str | None = None,
    tokenizer=None,
    results: dict[str, Any] | None = None,
    task: str | None = None,
    language: str | list[str] | None = None,
    dataset: str | list[str] | None = None,
    dataset_name: str | None = None,
    repo_id: str | None = None,
    model_name: str | None = None,
    license: str | None = None,
    tags: list[str] | None = None,
    example: str | None = None,
    max_new_tokens: int | None = None,
    training_details: str | None = None,
) -> ModelCard:
    """The model card of `model` (a pointer-generator, or a plain encoder-decoder such as an hf_pgen baseline).

    Args:
        model: the model (its config gives the copy settings and the base architecture).
        base_model: Hub id of the pretrained model it was wrapped from / fine-tuned from (`base_model:` metadata).
            A local path is mentioned in the text but left out of the metadata, which must name a Hub repository.
        tokenizer: its tokenizer, to say what counts as out of vocabulary (byte-level BPE: nothing).
        results: evaluation metrics, e.g. `trainer.evaluate()` / `trainer.predict().metrics` (`eval_bleu`,
            `predict_chrf`, ... or unprefixed `bleu`); the test split's (`predict_` / `test_`) win over validation's.
            Known metrics (sacreBLEU, chrF, ROUGE, placeholder preservation, OOV copy rate) enter the model-index;
            mean p_gen and the split's `*_samples` enter the text.
        task: "translation", "summarization" or "text2text-generation" (or "translation_en_to_de"); default: from
            the base's `task_specific_params`, else "text2text-generation".
        language: language code(s), e.g. `["en", "de"]`.
        dataset: Hub dataset id(s) it was trained / evaluated on (`datasets:` metadata, model-index).
        dataset_name: a readable name of the evaluation data (default: the dataset id, else "evaluation data").
        repo_id: where the model is served (Hub id or folder), used in the usage snippets; default `model_name`.
        model_name: the card's title; default the last part of `repo_id`, else "pointer-generator".
        license: SPDX licence id.
        tags: more tags.
        example: the input text of the usage snippets.
        max_new_tokens: what the usage snippets generate at most (default 64; keep it within the model's positions).
        training_details: Markdown on how the model was made (data, settings, hardware), shown under "Training
            details"; `training/run_translation.py` passes its run's.
    """
    config = model.config
    copy = is_pointer_generator(model)
    base_config = _base_config(model)
    task = pipeline_task(model, task)
    model_name = model_name or (repo_id.rstrip("/").split("/")[-1] if repo_id else "pointer-generator")
    repo_id = repo_id or model_name
    languages = [language] if isinstance(language, str) else list(language or []) or None
    hub_base = base_model if base_model and is_hub_id(base_model) else None
    datasets = [dataset] if isinstance(dataset, str) else list(dataset or [])
    hub_datasets = [d for d in datasets if is_hub_id(d)]
    dataset_name = dataset_name or (datasets[0] if datasets else None)

    # -- results --
    split, metrics = _split_results(results or {})
    eval_results, result_rows, metric_notes = [], [], []
    for key, metric_type, display, digits, note in METRICS:
        value = metrics.get(key)
        if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
            continue
        result_rows.append((display, f"{value:.{digits}f}"))
        if note:
            metric_notes.append((display, note))
        if metric_type is not None:
            eval_results.append(
                EvalResult(
                    task_type=task,
                    dataset_type=hub_datasets[0] if hub_datasets else "custom",
                    dataset_name=dataset_name or "evaluation data",
                    dataset_split=split,
                    metric_type=metric_type,
                    metric_name=display,
                    metric_value=round(float(value), 4),
                )
            )
    samples = metrics.get("samples")
    evaluation = (
        f"The {split} split"
        + (f" of {dataset_name}" if dataset_name else "")
        + (f" ({samples} examples)" if isinstance(samples, int) else "")
        + "."
    )

    card_tags = ["hf_pgen", task, "seq2seq"]
    if copy:
        card_tags[1:1] = ["pointer-generator", "copy-mechanism"]
    if getattr(base_config, "model_type", None):
        card_tags.append(base_config.model_type)
    card_tags += [t for t in (tags or []) if t not in card_tags]
    card_data = ModelCardData(
        model_name=model_name,
        language=languages,
        license=license,
        library_name="transformers",
        pipeline_tag=task,
        tags=card_tags,
        base_model=hub_base,
        datasets=hub_datasets or None,
        metrics=list(dict.fromkeys(r.metric_type for r in eval_results)) or None,
        eval_results=eval_results or None,
    )
    copy_settings = [
        (name, repr(getattr(config, name, None)))
        for name in (
            "pointer",
            "coverage",
            "coverage_weight",
            "selective_read",
            "copy_next",
            "force_p_gen",
            "p_gen_bias_init",
            "unk_token_id",
        )
    ]
    return ModelCard.from_template(
        card_data,
        template_str=TEMPLATE,
        title=model_name,
        description=_description(model, copy, base_config, base_model, task, languages),
        evaluation=evaluation,
        result_rows=result_rows,
        metric_notes=metric_notes,
        usage=usage_snippet(
            repo_id, copy_mechanism=copy, task=task, example=example, max_new_tokens=max_new_tokens or 64
        ),
        copy_settings=copy_settings if copy else None,
        training_details=(training_details or "").strip(),
        limitations=_limitations(copy, tokenizer),
    )


# ---------------------------------------------------------------------------------------------------------------------


def hub_has_model_card(repo_id: str, token: str | None = None) -> bool:
    """Whether the Hub repository `repo_id` exists and already has a README.md (a card its owner may have written)."""
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    try:
        ModelCard.load(repo_id, token=token)
    except (EntryNotFoundError, RepositoryNotFoundError):
        return False
    return True


def push_model_card(
    model,
    repo_id: str,
    *,
    tags: list[str] | None = None,
    token: str | None = None,
    revision: str | None = None,
    create_pr: bool = False,
):
    """Render `model`'s card (`render_model_card`) and upload it as the README.md of `repo_id`."""
    base_model = getattr(_base_config(model), "_name_or_path", None) or None
    card = render_model_card(model, base_model=base_model, repo_id=repo_id, tags=tags)
    return card.push_to_hub(
        repo_id, token=token, revision=revision, create_pr=create_pr, commit_message="Add the hf_pgen model card"
    )


def _base_config(model):
    config = model.config
    return getattr(config, "base_config", None) or config


def is_hub_id(name: str) -> bool:
    """A Hub repository id ("owner/name" or a canonical "name"), not a local path."""
    if not name or os.path.isabs(name) or name.startswith((".", "~")) or os.path.exists(name):
        return False
    parts = name.split("/")
    return len(parts) <= 2 and all(parts) and not any(c in name for c in " \\:")


def _split_results(results: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    for prefix, split in _SPLITS:
        found = {k[len(prefix) :]: v for k, v in results.items() if k.startswith(prefix)}
        if any(key in found for key, *_ in METRICS):
            return split, found
    return "validation", dict(results)


def _description(model, copy: bool, base_config, base_model: str | None, task: str, languages) -> str:
    architecture = type(model.base).__name__ if copy and hasattr(model, "base") else type(model).__name__
    what = {"translation": "translation", "summarization": "summarisation"}.get(task, "text-to-text generation")
    if languages and task == "translation" and len(languages) == 2:
        what = f"{languages[0]} → {languages[1]} translation"
    origin = f"wrapping `{base_model}`" if base_model else "trained from a configuration"
    if not copy:
        return (
            f"A {architecture} ({origin}) for {what} **without a copy mechanism**, saved by hf_pgen (for "
            "instance the no-copy baseline of a pointer-generator comparison). It is a plain Transformers model: "
            "words outside its vocabulary come out as the unknown token."
        )
    return (
        f"A {architecture} ({origin}) for {what} with the **pointer-generator copy mechanism** of See et al. "
        "(2017), made with hf_pgen. At every step the model mixes generating a word "
        "from its vocabulary with copying a word from the source, weighted by a learnt switch p_gen, so names, "
        "numbers, identifiers and placeholders that the vocabulary lacks can come out verbatim: they get "
        "extended ids `vocab_size + k` that the hf_pgen decoder (or the folder's pipeline) turns back into "
        "the source's text."
    )


def _limitations(copy: bool, tokenizer) -> list[str]:
    lines = []
    if copy:
        lines.append("Loading without hf_pgen needs `trust_remote_code=True`: the folder's own modelling code runs.")
        lines.append(
            "Copied words have ids >= `vocab_size`, which `tokenizer.decode` drops silently: decode with "
            "`hf_pgen.PointerGeneratorProcessor.batch_decode` and the OOV table of each input, or use the "
            "pipeline."
        )
        lines.append(
            "Copying is literal: words that should be translated or inflected may be copied instead, and a "
            "placeholder can still be dropped or duplicated; check outputs with "
            "`hf_pgen.metrics.placeholder_preservation`."
        )
        backend = getattr(tokenizer, "backend_tokenizer", None)
        byte_level = backend is not None and type(backend.pre_tokenizer).__name__ == "ByteLevel"
        if tokenizer is not None and (byte_level or getattr(tokenizer, "unk_token_id", None) is None):
            lines.append(
                "Its tokenizer leaves nothing out of vocabulary (byte-level or without an unknown token): "
                "only in-vocabulary pieces are copied, and no word needs an extended id."
            )
        else:
            lines.append(
                "What counts as out of vocabulary depends on the tokenizer: with a word-level vocabulary "
                "every unseen word, with subword vocabularies only characters the vocabulary lacks."
            )
    else:
        lines.append("No copy mechanism: names, identifiers and placeholders outside the vocabulary are lost.")
    lines.append("Scores hold for the evaluation data named above; they do not transfer to other domains.")
    return lines
