"""The loopback Hub stand-in (tests/hub_server.py) against real huggingface_hub / transformers clients.

Every client runs in a subprocess: huggingface_hub reads HF_ENDPOINT at import time. Each download
uses a fresh, empty HF_HOME, so a passing download really went through the server.
"""

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_server import HubStorage, client_env, hub_server  # noqa: E402

pytestmark = pytest.mark.slow  # a loopback Hub server, with uploads in subprocesses

# Builds a tiny BART (testing_utils.tiny_base) and a WordLevel tokenizer offline; defines checksum(model).
COMMON = textwrap.dedent(
    """
    import hashlib, json, os, sys
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast
    sys.path.insert(0, TESTS_DIR)
    from testing_utils import tiny_base

    def build_tokenizer():
        lines = ["the cat sat on the mat", "a dog ran in the park", "copy the rare word zyx"]
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"]))
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                       pad_token="<pad>", unk_token="<unk>")

    def build_model():  # the tokenizer's special ids
        return tiny_base("bart", vocab_size=100, d_model=16, layers=1, heads=2, max_position_embeddings=64,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2, decisive_init=False)

    def checksum(model):
        h = hashlib.sha256()
        for name, tensor in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(bytes(tensor.detach().float().contiguous().view(torch.uint8).flatten().tolist()))
        return h.hexdigest()

    SENTENCE = "the rare cat sat zyx"
    """
).replace("TESTS_DIR", repr(str(Path(__file__).resolve().parent)))

PUSH = COMMON + textwrap.dedent(
    """
    model, tokenizer = build_model(), build_tokenizer()
    model.push_to_hub("tester/tiny")
    tokenizer.push_to_hub("tester/tiny")
    print(json.dumps({"checksum": checksum(model), "ids": tokenizer(SENTENCE)["input_ids"]}))
    """
)

PULL = COMMON + textwrap.dedent(
    """
    from huggingface_hub import snapshot_download
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer
    config = AutoConfig.from_pretrained("tester/tiny")
    model = AutoModelForSeq2SeqLM.from_pretrained("tester/tiny")
    tokenizer = AutoTokenizer.from_pretrained("tester/tiny")
    folder = snapshot_download("tester/tiny")
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    print(json.dumps({"checksum": checksum(model), "ids": tokenizer(SENTENCE)["input_ids"],
                      "model_class": type(model).__name__, "d_model": config.d_model, "files": files,
                      "hf_home": os.environ["HF_HOME"], "folder": folder}))
    """
)

TRAIN = COMMON + textwrap.dedent(
    """
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments
    model, tokenizer = build_model(), build_tokenizer()
    pairs = [("the cat sat on the mat", "the cat sat"), ("a dog ran in the park", "a dog ran")]
    train = [{"input_ids": tokenizer(s)["input_ids"], "labels": tokenizer(t)["input_ids"]} for s, t in pairs]
    args = Seq2SeqTrainingArguments(output_dir=sys.argv[1], push_to_hub=True, hub_model_id="tester/trained",
                                    max_steps=1, per_device_train_batch_size=2, report_to=[], use_cpu=True)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                             data_collator=DataCollatorForSeq2Seq(tokenizer, model=model))
    trainer.train()
    info = trainer.push_to_hub()
    print(json.dumps({"checksum": checksum(model), "commit": info.oid}))
    """
)


def run_client(code, env, *args, timeout=120):
    """Run `code` in a fresh interpreter; return the JSON object on the last stdout line."""
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        print(proc.stdout)
        print(proc.stderr, file=sys.stderr)
        pytest.fail(f"client subprocess failed with code {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def hub(tmp_path):
    """(base_url, HubStorage) of a server storing under tmp_path/hub."""
    with hub_server(tmp_path / "hub") as base_url:
        yield base_url, HubStorage(tmp_path / "hub")


def test_push_then_download_in_fresh_process(hub, tmp_path):
    base_url, storage = hub
    pushed = run_client(PUSH, client_env(base_url, tmp_path / "home_push"))

    files = storage.list_files("tester/tiny")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert name in files, files
    assert len(storage.history("model", "tester/tiny")) >= 3  # initial commit + model + tokenizer

    home = tmp_path / "home_pull"
    pulled = run_client(PULL, client_env(base_url, home))
    assert pulled["hf_home"] == str(home) and pulled["folder"].startswith(str(home))
    assert pulled["model_class"] == "BartForConditionalGeneration" and pulled["d_model"] == 16
    assert pulled["checksum"] == pushed["checksum"]
    assert pulled["ids"] == pushed["ids"]
    # snapshot_download got every file of the repo, byte for byte
    assert sorted(pulled["files"]) == files
    for name, digest in pulled["files"].items():
        assert digest == hashlib.sha256(storage.read_file("tester/tiny", name)).hexdigest()


def test_trainer_push_to_hub(hub, tmp_path):
    base_url, storage = hub
    out = run_client(TRAIN, client_env(base_url, tmp_path / "home_train"), str(tmp_path / "out"))
    files = storage.list_files("tester/trained")
    for name in ("config.json", "model.safetensors", "README.md"):
        assert name in files, files
    assert not any(name.startswith("checkpoint-") for name in files), files
    assert storage.head("tester/trained") == out["commit"]
    assert b"generated_from_trainer" in storage.read_file("tester/trained", "README.md")
    weights = (tmp_path / "out" / "model.safetensors").read_bytes()
    assert storage.read_file("tester/trained", "model.safetensors") == weights
    # the final checkpoint save pushed once already (hub_strategy="every_save"), then push_to_hub()
    titles = [commit["title"] for _, commit in storage.history("model", "tester/trained")]
    assert titles[0] == "End of training" and titles[-1] == "initial commit", titles


def test_errors_and_namespaces(hub, tmp_path):
    base_url, storage = hub
    # A repo id without namespace, like "gpt2". huggingface_hub 2.4 cannot commit to one (its
    # RepoUrl rejects a one-segment commit URL), so the test fills it server-side.
    storage.create_repo("model", "bare")
    storage.commit("model", "bare", "main", [{"key": "file", "value": {"path": "dir/a.txt", "content": "aGk="}}], "add")
    code = textwrap.dedent(
        """
        import json, huggingface_hub as h
        from huggingface_hub.errors import RemoteEntryNotFoundError, RepositoryNotFoundError
        api = h.HfApi()
        out = {"user": api.whoami()["name"], "created": api.create_repo("noname").repo_id}
        out["bare"] = api.list_repo_files("bare")
        out["text"] = open(h.hf_hub_download("bare", "dir/a.txt")).read()
        out["siblings"] = [s.rfilename for s in api.model_info("bare").siblings]
        api.upload_file(path_or_fileobj=b"hi", path_in_repo="dir/a.txt", repo_id="tester/noname")
        api.delete_file("dir/a.txt", repo_id="tester/noname")
        out["after_delete"] = api.list_repo_files("tester/noname")
        for repo, name in (("bare", "nope.txt"), ("tester/missing", "x")):
            try:
                h.hf_hub_download(repo, name)
            except (RemoteEntryNotFoundError, RepositoryNotFoundError) as e:
                out.setdefault("errors", []).append(type(e).__name__)
        print(json.dumps(out))
        """
    )
    out = run_client(code, client_env(base_url, tmp_path / "home"))
    assert out["user"] == "tester" and out["created"] == "tester/noname"
    assert out["bare"] == out["siblings"] == [".gitattributes", "dir/a.txt"] and out["text"] == "hi"
    assert out["after_delete"] == [".gitattributes"]
    assert out["errors"] == ["RemoteEntryNotFoundError", "RepositoryNotFoundError"]


def test_lfs_upload_when_xet_is_off(tmp_path):
    """preupload answers "lfs" for files >= lfs_threshold; without hf_xet the legacy LFS batch API is used."""
    with hub_server(tmp_path / "hub", lfs_threshold=1000) as base_url:
        code = textwrap.dedent(
            """
            import json, os, huggingface_hub as h
            api = h.HfApi()
            api.create_repo("tester/lfs")
            data = os.urandom(5000)
            api.upload_file(path_or_fileobj=data, path_in_repo="w/big.bin", repo_id="tester/lfs")
            api.upload_file(path_or_fileobj=b"small", path_in_repo="small.txt", repo_id="tester/lfs")
            lfs = {f.path: f.lfs is not None for f in api.list_repo_tree("tester/lfs", recursive=True)
                   if isinstance(f, h.hf_api.RepoFile)}
            same = open(h.hf_hub_download("tester/lfs", "w/big.bin"), "rb").read() == data
            print(json.dumps({"lfs": lfs, "same": same}))
            """
        )
        env = client_env(base_url, tmp_path / "home", HF_HUB_DISABLE_XET="1")
        out = run_client(code, env)
    assert out == {"lfs": {".gitattributes": False, "small.txt": False, "w/big.bin": True}, "same": True}


def test_unknown_route_names_itself(hub):
    import urllib.error
    import urllib.request

    base_url, _ = hub
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{base_url}/api/no/such/thing")
    assert err.value.code == 404
    assert "GET /api/no/such/thing" in json.loads(err.value.read())["error"]
