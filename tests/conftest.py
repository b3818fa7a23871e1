"""Fixtures shared by the test modules; the helpers they use live in testing_utils.py."""

import pytest
import torch
from testing_utils import TEST_CASES, UNK, corpus_texts, tiny_base, word_level_tokenizer


@pytest.fixture(params=["bart", "marian", "t5"])
def family(request):
    return request.param


@pytest.fixture(scope="module")
def one_torch_thread():
    """Modules that train or run subprocesses use one torch thread (as CI's 2 cores are shared), then restore it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(params=TEST_CASES)
def case(request):
    """(family, pointer, copy settings): one row of the TEST_CASES table."""
    return request.param


@pytest.fixture
def case_model(case):
    """A pointer-generator around a tiny base for one TEST_CASES row (p_gen starts at 0.5, so both sides matter)."""
    from hf_pgen import PointerGeneratorForConditionalGeneration

    family, pointer, settings = case
    model = PointerGeneratorForConditionalGeneration.from_base(
        tiny_base(family), pointer=pointer, unk_token_id=UNK, p_gen_bias_init=0.0, **settings
    ).eval()
    # Selective read and copy-next start at zero (exactly the model without them): give them weights that matter.
    generator = torch.Generator().manual_seed(0)
    for name, param in model.named_parameters():
        if name.startswith(("selective_read.", "copy_next.")):
            param.data.copy_(
                torch.randn(param.shape, generator=generator) * 0.5 + (1.0 if name.endswith("bias") else 0)
            )
    return model


# -- a tiny pointer-generator trained on real text --------------------------------------------------------------------


@pytest.fixture(scope="session")
def trained_copier():
    """A tiny BART pointer-generator trained (about 10 s) to copy English messages through a 200-word vocabulary.

    Most content words are outside the vocabulary, so they can only come out by copying. Returns the model, its
    tokenizer and unseen test messages.
    """
    from hf_pgen import DataCollatorForPointerGenerator, PointerGeneratorForConditionalGeneration, encode_with_oovs

    train_texts = corpus_texts("train", limit=3000)
    test_texts = corpus_texts("test", limit=64)
    tokenizer = word_level_tokenizer(train_texts, vocab_size=200)
    base = tiny_base(
        "bart", tokenizer=tokenizer, d_model=64, max_position_embeddings=64, dropout=0.0, decisive_init=False
    )
    model = PointerGeneratorForConditionalGeneration.from_base(
        base, unk_token_id=tokenizer.unk_token_id, p_gen_bias_init=0.0
    )
    model.generation_config.update(max_length=24, num_beams=1)
    features = encode_with_oovs(tokenizer, train_texts, text_target=train_texts, vocab_size=model.config.vocab_size)
    rows = [
        {key: features[key][i] for key in ("input_ids", "attention_mask", "extended_input_ids", "labels")}
        for i in range(len(train_texts))
    ]
    collate = DataCollatorForPointerGenerator(tokenizer, model=model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    generator = torch.Generator().manual_seed(0)
    for step in range(300):
        batch = collate([rows[i] for i in torch.randint(len(rows), (32,), generator=generator).tolist()])
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    return model, tokenizer, test_texts
