"""A minimal Hugging Face Hub stand-in on loopback, for tests.

Standard library only. It implements just enough of the Hub HTTP API for huggingface_hub 2.4 and
transformers 5.x to push (``push_to_hub``, ``upload_folder``, ``create_commit``, ``Trainer.push_to_hub``)
and to download (``from_pretrained``, ``hf_hub_download``, ``snapshot_download``).

huggingface_hub reads ``HF_ENDPOINT`` when it is imported, so clients must run in a subprocess whose
environment comes from :func:`client_env`::

    with hub_server(tmp_path / "hub") as base_url:
        env = client_env(base_url, tmp_path / "hf_home")
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    HubStorage(tmp_path / "hub").list_files("tester/tiny")   # inspect what was pushed

Endpoints (``{type}`` is ``models``, ``datasets`` or ``spaces``; ``{repo}`` is ``name`` or ``user/name``):

    GET    /api/whoami-v2
    POST   /api/repos/create                       DELETE /api/repos/delete
    POST   /api/validate-yaml
    GET    /api/{type}/{repo}                      GET    /api/{type}/{repo}/revision/{rev}
    GET    /api/{type}/{repo}/tree/{rev}[/{path}]  POST   /api/{type}/{repo}/paths-info/{rev}
    GET    /api/{type}/{repo}/refs                 GET    /api/{type}/{repo}/commits/{rev}
    POST   /api/{type}/{repo}/branch/{name}        DELETE /api/{type}/{repo}/branch/{name}
    POST   /api/{type}/{repo}/preupload/{rev}      POST   /api/{type}/{repo}/commit/{rev}
    HEAD   [/datasets|/spaces]/{repo}/resolve/{rev}/{path}     (and GET, with Range support)
    POST   [/datasets|/spaces]/{repo}.git/info/lfs/objects/batch  (legacy LFS: basic transfer)
    PUT    /lfs-upload/{sha256}                    POST   /lfs-verify/{sha256}

The preupload answer is "regular" for every file (so hf_xet is never involved) unless the server is
started with ``lfs_threshold=N``: then files of N bytes or more are "lfs" (uploaded through the legacy
LFS batch API when ``HF_HUB_DISABLE_XET=1``; the Xet protocol itself is not implemented).

Storage on disk, under ``root_dir``: ``blobs/<sha256>`` (file contents) and
``repos/<type>s--<namespace>--<name>.json`` (branches and commits, each commit holding its full file
list). A repo starts with an "initial commit" holding ``.gitattributes``, like the real Hub. Each commit
gets a fresh 40-hex commit id. Set ``HUB_SERVER_DEBUG=1`` to log requests to stderr.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

DEFAULT_USER = "tester"
REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIXES = {"datasets": "dataset", "spaces": "space"}  # prefix of web/resolve URLs
API_ACTIONS = {"revision", "tree", "paths-info", "refs", "commits", "branch", "preupload", "commit"}
GITATTRIBUTES = (
    "*.bin filter=lfs diff=lfs merge=lfs -text\n"
    "*.pt filter=lfs diff=lfs merge=lfs -text\n"
    "*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
).encode()


class HubError(Exception):
    """An error answered to the client: HTTP status, optional X-Error-Code, message."""

    def __init__(
        self, status: int, message: str, code: str | None = None, headers: dict | None = None, extra: dict | None = None
    ):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}
        self.extra = extra or {}  # more keys for the JSON body


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


class HubStorage:
    """Repos, branches and commits, stored as JSON files plus content-addressed blobs under ``root``.

    State is re-read from disk at every call, so a second instance on the same folder (e.g. in the
    test process) sees what the server wrote.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        (self.root / "repos").mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._counter = 0

    # -- blobs ---------------------------------------------------------------------------------
    def blob_path(self, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise HubError(400, f"invalid sha256 {sha256!r}")
        return self.root / "blobs" / sha256

    def put_blob(self, data: bytes) -> str:
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.blob_path(sha256)
        if not path.exists():
            tmp = path.with_name(f"{sha256}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return sha256

    def has_blob(self, sha256: str) -> bool:
        return self.blob_path(sha256).exists()

    # -- repo state ----------------------------------------------------------------------------
    def _state_path(self, repo_type: str, repo_id: str) -> Path:
        return self.root / "repos" / f"{repo_type}s--{repo_id.replace('/', '--')}.json"

    def exists(self, repo_type: str, repo_id: str) -> bool:
        return self._state_path(repo_type, repo_id).exists()

    def _load(self, repo_type: str, repo_id: str) -> dict:
        path = self._state_path(repo_type, repo_id)
        if not path.exists():
            raise HubError(404, f"Repository Not Found: {repo_type} {repo_id}", "RepoNotFound")
        return json.loads(path.read_text())

    def _save(self, state: dict) -> None:
        path = self._state_path(state["repo_type"], state["repo_id"])
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
        os.replace(tmp, path)

    def _new_commit(self, state: dict, parent: str | None, files: dict, title: str, description: str) -> str:
        self._counter += 1
        seed = json.dumps([state["repo_id"], parent, files, title, time.time_ns(), self._counter])
        sha = hashlib.sha1(seed.encode()).hexdigest()
        state["commits"][sha] = {
            "parents": [parent] if parent else [],
            "title": title,
            "message": description,
            "date": _now(),
            "files": files,
        }
        return sha

    def _file_entry(self, data_sha256: str, size: int, lfs: bool, data: bytes | None = None) -> dict:
        if lfs:
            oid = _git_oid(_lfs_pointer(data_sha256, size))
        else:
            oid = _git_oid(data if data is not None else self.blob_path(data_sha256).read_bytes())
        return {"sha256": data_sha256, "size": size, "oid": oid, "lfs": lfs}

    # -- repo operations -----------------------------------------------------------------------
    def create_repo(self, repo_type: str, repo_id: str, private: bool = False) -> bool:
        """Create the repo with an initial commit; return False if it already exists."""
        with self._lock:
            if self.exists(repo_type, repo_id):
                return False
            state = {
                "repo_id": repo_id,
                "repo_type": repo_type,
                "private": bool(private),
                "created_at": _now(),
                "branches": {},
                "commits": {},
                "next_pr": 1,
            }
            sha = self.put_blob(GITATTRIBUTES)
            files = {".gitattributes": self._file_entry(sha, len(GITATTRIBUTES), False, GITATTRIBUTES)}
            state["branches"]["main"] = self._new_commit(state, None, files, "initial commit", "")
            self._save(state)
            return True

    def delete_repo(self, repo_type: str, repo_id: str) -> None:
        with self._lock:
            self._load(repo_type, repo_id)
            self._state_path(repo_type, repo_id).unlink()

    def resolve(self, repo_type: str, repo_id: str, revision: str = "main") -> tuple[dict, str, dict]:
        """Return (repo state, commit id, files) of a branch name or a full commit id."""
        state = self._load(repo_type, repo_id)
        sha = state["branches"].get(revision)
        if sha is None and revision in state["commits"]:
            sha = revision
        if sha is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return state, sha, state["commits"][sha]["files"]

    def commit(
        self,
        repo_type: str,
        repo_id: str,
        revision: str,
        operations: list[dict],
        title: str,
        description: str = "",
        parent_commit: str | None = None,
        create_pr: bool = False,
    ) -> dict:
        """Apply NDJSON commit operations (file / lfsFile / deletedFile / deletedFolder) to a branch."""
        with self._lock:
            state, head, files = self.resolve(repo_type, repo_id, revision)
            if parent_commit is not None and parent_commit != head:
                raise HubError(412, f"parentCommit {parent_commit} is not the head of {revision} ({head})")
            if revision not in state["branches"] and not create_pr:
                raise HubError(400, f"Cannot commit to {revision}: it is a commit id, not a branch")
            files = dict(files)
            for op in operations:
                key, value = op.get("key"), op.get("value", {})
                path = value.get("path", "")
                if key == "file":
                    if value.get("encoding", "base64") == "base64":
                        data = base64.b64decode(value["content"])
                    else:
                        data = value["content"].encode()
                    files[path] = self._file_entry(self.put_blob(data), len(data), False, data)
                elif key == "lfsFile":
                    oid = value["oid"]
                    if not self.has_blob(oid):
                        raise HubError(422, f"LFS object {oid} for {path!r} was never uploaded")
                    size = self.blob_path(oid).stat().st_size
                    files[path] = self._file_entry(oid, size, True)
                elif key == "deletedFile":
                    if path not in files:
                        raise HubError(404, f"Cannot delete {path!r}: no such file", "EntryNotFound")
                    del files[path]
                elif key == "deletedFolder":
                    prefix = path.rstrip("/") + "/"
                    files = {p: f for p, f in files.items() if not p.startswith(prefix)}
                else:
                    raise HubError(400, f"Unknown commit operation key {key!r}")
            branch = revision
            pr_url = None
            if create_pr:
                number = state["next_pr"]
                state["next_pr"] += 1
                branch = f"refs/pr/{number}"
                pr_url = f"/{repo_id}/discussions/{number}"
            sha = self._new_commit(state, head, files, title, description)
            state["branches"][branch] = sha
            self._save(state)
            return {"commit": sha, "pr_url": pr_url}

    def create_branch(self, repo_type: str, repo_id: str, branch: str, starting_point: str | None) -> None:
        with self._lock:
            state, sha, _ = self.resolve(repo_type, repo_id, starting_point or "main")
            if branch in state["branches"]:
                raise HubError(409, f"Reference {branch} already exists")
            state["branches"][branch] = sha
            self._save(state)

    def delete_branch(self, repo_type: str, repo_id: str, branch: str) -> None:
        with self._lock:
            state = self._load(repo_type, repo_id)
            if branch not in state["branches"]:
                raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            del state["branches"][branch]
            self._save(state)

    def history(self, repo_type: str, repo_id: str, revision: str = "main") -> list[tuple[str, dict]]:
        state, sha, _ = self.resolve(repo_type, repo_id, revision)
        out = []
        while sha:
            commit = state["commits"][sha]
            out.append((sha, commit))
            sha = commit["parents"][0] if commit["parents"] else None
        return out

    # -- conveniences for tests ----------------------------------------------------------------
    def list_files(self, repo_id: str, revision: str = "main", repo_type: str = "model") -> list[str]:
        return sorted(self.resolve(repo_type, repo_id, revision)[2])

    def read_file(self, repo_id: str, path: str, revision: str = "main", repo_type: str = "model") -> bytes:
        files = self.resolve(repo_type, repo_id, revision)[2]
        if path not in files:
            raise KeyError(path)
        return self.blob_path(files[path]["sha256"]).read_bytes()

    def head(self, repo_id: str, revision: str = "main", repo_type: str = "model") -> str:
        return self.resolve(repo_type, repo_id, revision)[1]


class HubRequestHandler(BaseHTTPRequestHandler):
    """Routes requests to the HubStorage in ``self.server.storage``."""

    protocol_version = "HTTP/1.1"
    server_version = "hf-pgen-test-hub/1.0"

    # -- plumbing ------------------------------------------------------------------------------
    def log_message(self, format, *args):  # noqa: A002 (signature of the base class)
        if os.environ.get("HUB_SERVER_DEBUG"):
            sys.stderr.write(f"[hub_server] {self.address_string()} {format % args}\n")

    @property
    def storage(self) -> HubStorage:
        return self.server.storage  # type: ignore[attr-defined]

    @property
    def base_url(self) -> str:
        return self.server.base_url  # type: ignore[attr-defined]

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict | None = None,
        content_type: str = "application/json",
        send_body: bool = True,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def _json(self, obj, status: int = 200, headers: dict | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _handle(self, method: str) -> None:
        self.body = self._read_body()
        url = urlsplit(self.path)
        self.query = parse_qs(url.query)
        segs = [unquote(s) for s in url.path.strip("/").split("/")]
        try:
            self._route(method, segs)
        except HubError as err:
            headers = dict(err.headers)
            if err.code:
                headers["X-Error-Code"] = err.code
            headers["X-Error-Message"] = err.message.encode("ascii", "replace").decode()
            self._send(
                err.status,
                json.dumps({"error": err.message, **err.extra}).encode(),
                headers,
                send_body=method != "HEAD",
            )
        except Exception as exc:  # a bug in this server: answer 500 with the reason
            self._send(500, json.dumps({"error": f"hub_server crashed: {exc!r}"}).encode())
            raise

    def do_GET(self):
        self._handle("GET")

    def do_HEAD(self):
        self._handle("HEAD")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def _unknown(self, method: str) -> None:
        raise HubError(404, f"hub_server: no route for {method} {urlsplit(self.path).path}")

    def _body_json(self) -> dict:
        try:
            return json.loads(self.body or b"{}")
        except ValueError:
            raise HubError(400, "request body is not JSON")

    def _split_repo(self, repo_type: str, segs: list[str], keywords: set[str]) -> tuple[str, list[str]]:
        """Split ``segs`` into a repo id (``name`` or ``ns/name``) and the rest of the path."""
        if not segs or not segs[0]:
            self._unknown(self.command)
        if len(segs) >= 2 and self.storage.exists(repo_type, f"{segs[0]}/{segs[1]}"):
            return f"{segs[0]}/{segs[1]}", segs[2:]
        if len(segs) == 1 or segs[1] in keywords:
            return segs[0], segs[1:]
        return f"{segs[0]}/{segs[1]}", segs[2:]

    # -- routing -------------------------------------------------------------------------------
    def _route(self, method: str, segs: list[str]) -> None:
        if segs[0] == "api":
            return self._route_api(method, segs[1:])
        if segs[0] == "lfs-upload" and len(segs) == 2 and method == "PUT":
            sha = self.storage.put_blob(self.body)
            if sha != segs[1]:
                raise HubError(400, f"uploaded content has sha256 {sha}, expected {segs[1]}")
            return self._json({})
        if segs[0] == "lfs-verify" and len(segs) == 2 and method == "POST":
            if not self.storage.has_blob(segs[1]):
                raise HubError(404, f"LFS object {segs[1]} not found")
            return self._json({})
        repo_type = "model"
        if segs[0] in URL_PREFIXES and len(segs) > 1:
            repo_type, segs = URL_PREFIXES[segs[0]], segs[1:]
        git = next((i for i, s in enumerate(segs[:2]) if s.endswith(".git")), None)
        if git is not None and segs[git + 1 :] == ["info", "lfs", "objects", "batch"] and method == "POST":
            repo_id = "/".join(segs[:git] + [segs[git][: -len(".git")]])
            return self._lfs_batch(repo_type, repo_id)
        if method in ("GET", "HEAD") and "resolve" in segs[1:3]:
            repo_id, rest = self._split_repo(repo_type, segs, {"resolve"})
            if len(rest) >= 3 and rest[0] == "resolve":
                return self._resolve(method, repo_type, repo_id, rest[1], "/".join(rest[2:]))
        self._unknown(method)

    def _route_api(self, method: str, segs: list[str]) -> None:
        if segs == ["whoami-v2"] and method == "GET":
            return self._json(
                {
                    "type": "user",
                    "name": DEFAULT_USER,
                    "fullname": "Test User",
                    "email": "tester@example.com",
                    "emailVerified": True,
                    "isPro": False,
                    "orgs": [],
                    "auth": {"type": "access_token", "accessToken": {"displayName": "test", "role": "write"}},
                }
            )
        if segs == ["repos", "create"] and method == "POST":
            return self._create_repo()
        if segs == ["repos", "delete"] and method == "DELETE":
            body = self._body_json()
            repo_id = f"{body.get('organization') or DEFAULT_USER}/{body['name']}"
            self.storage.delete_repo(body.get("type") or "model", repo_id)
            return self._json({})
        if segs == ["validate-yaml"] and method == "POST":
            return self._json({"errors": [], "warnings": []})
        if not segs or segs[0] not in REPO_TYPES:
            self._unknown(method)
        repo_type = REPO_TYPES[segs[0]]
        repo_id, rest = self._split_repo(repo_type, segs[1:], API_ACTIONS)
        action = rest[0] if rest else None
        arg = rest[1] if len(rest) > 1 else "main"
        if method == "GET" and action is None:
            return self._repo_info(repo_type, repo_id, "main")
        if method == "GET" and action == "revision" and len(rest) == 2:
            return self._repo_info(repo_type, repo_id, arg)
        if method == "GET" and action == "tree" and len(rest) >= 2:
            return self._tree(repo_type, repo_id, arg, "/".join(rest[2:]))
        if method == "POST" and action == "paths-info" and len(rest) == 2:
            return self._paths_info(repo_type, repo_id, arg)
        if method == "GET" and action == "refs" and len(rest) == 1:
            return self._refs(repo_type, repo_id)
        if method == "GET" and action == "commits" and len(rest) == 2:
            return self._commits(repo_type, repo_id, arg)
        if action == "branch" and len(rest) == 2 and method in ("POST", "DELETE"):
            if method == "POST":
                self.storage.create_branch(repo_type, repo_id, arg, self._body_json().get("startingPoint"))
            else:
                self.storage.delete_branch(repo_type, repo_id, arg)
            return self._json({})
        if method == "POST" and action == "preupload" and len(rest) == 2:
            return self._preupload(repo_type, repo_id, arg)
        if method == "POST" and action == "commit" and len(rest) == 2:
            return self._commit(repo_type, repo_id, arg)
        self._unknown(method)

    # -- endpoints -----------------------------------------------------------------------------
    def _repo_url(self, repo_type: str, repo_id: str) -> str:
        prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[repo_type]
        return f"{self.base_url}/{prefix}{repo_id}"

    def _create_repo(self) -> None:
        body = self._body_json()
        name, organization = body.get("name"), body.get("organization")
        if not name:
            raise HubError(400, "missing repo name")
        repo_type = body.get("type") or "model"
        repo_id = f"{organization or DEFAULT_USER}/{name}"
        private = body.get("private", body.get("visibility") == "private")
        url = self._repo_url(repo_type, repo_id)
        if not self.storage.create_repo(repo_type, repo_id, private):
            # create_repo(exist_ok=True) reads "url" from the 409 answer too
            raise HubError(409, f"You already created this {repo_type} repo", extra={"url": url})
        return self._json({"url": url, "name": repo_id, "id": repo_id})

    def _repo_info(self, repo_type: str, repo_id: str, revision: str) -> None:
        state, sha, files = self.storage.resolve(repo_type, repo_id, revision)
        siblings = []
        for path, f in sorted(files.items()):
            sibling = {"rfilename": path, "size": f["size"], "blobId": f["oid"]}
            if f["lfs"]:
                sibling["lfs"] = {
                    "sha256": f["sha256"],
                    "size": f["size"],
                    "pointerSize": len(_lfs_pointer(f["sha256"], f["size"])),
                }
            siblings.append(sibling)
        author = repo_id.split("/")[0] if "/" in repo_id else None
        self._json(
            {
                "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
                "id": repo_id,
                "modelId": repo_id,
                "author": author,
                "sha": sha,
                "lastModified": state["commits"][sha]["date"],
                "createdAt": state["created_at"],
                "private": state["private"],
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "siblings": siblings,
            }
        )

    def _tree_entries(self, files: dict, path: str, recursive: bool) -> list[dict]:
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        entries: dict[str, dict] = {}
        for fpath, f in sorted(files.items()):
            if not fpath.startswith(prefix):
                continue
            parts = fpath[len(prefix) :].split("/")
            for depth in range(1, len(parts)):  # folders on the way to the file
                folder = prefix + "/".join(parts[:depth])
                if depth > 1 and not recursive:
                    break
                entries.setdefault(
                    folder,
                    {"type": "directory", "path": folder, "size": 0, "oid": hashlib.sha1(folder.encode()).hexdigest()},
                )
            if len(parts) == 1 or recursive:
                entry = {"type": "file", "path": fpath, "size": f["size"], "oid": f["oid"]}
                if f["lfs"]:
                    entry["lfs"] = {
                        "oid": f["sha256"],
                        "size": f["size"],
                        "pointerSize": len(_lfs_pointer(f["sha256"], f["size"])),
                    }
                entries[fpath] = entry
        return list(entries.values())

    def _tree(self, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        _, _, files = self.storage.resolve(repo_type, repo_id, revision)
        recursive = self.query.get("recursive", ["false"])[0].lower() in ("1", "true")
        entries = self._tree_entries(files, path, recursive)
        if path.strip("/") and not entries:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        self._json(entries)

    def _paths_info(self, repo_type: str, repo_id: str, revision: str) -> None:
        _, _, files = self.storage.resolve(repo_type, repo_id, revision)
        if self.headers.get("Content-Type", "").startswith("application/json"):
            paths = self._body_json().get("paths", [])
        else:
            paths = parse_qs(self.body.decode()).get("paths", [])
        all_entries = {e["path"]: e for e in self._tree_entries(files, "", recursive=True)}
        self._json([all_entries[p.strip("/")] for p in paths if p.strip("/") in all_entries])

    def _refs(self, repo_type: str, repo_id: str) -> None:
        state = self.storage._load(repo_type, repo_id)
        branches, prs = [], []
        for name, sha in sorted(state["branches"].items()):
            if name.startswith("refs/pr/"):
                prs.append({"name": name.split("/")[-1], "ref": name, "targetCommit": sha})
            else:
                branches.append({"name": name, "ref": f"refs/heads/{name}", "targetCommit": sha})
        self._json({"branches": branches, "converts": [], "tags": [], "pullRequests": prs})

    def _commits(self, repo_type: str, repo_id: str, revision: str) -> None:
        self._json(
            [
                {
                    "id": sha,
                    "title": c["title"],
                    "message": c["message"],
                    "date": c["date"],
                    "authors": [{"user": DEFAULT_USER}],
                }
                for sha, c in self.storage.history(repo_type, repo_id, revision)
            ]
        )

    def _preupload(self, repo_type: str, repo_id: str, revision: str) -> None:
        _, _, files = self.storage.resolve(repo_type, repo_id, revision)
        threshold = self.server.lfs_threshold  # type: ignore[attr-defined]
        answer = []
        for f in self._body_json().get("files", []):
            lfs = threshold is not None and f.get("size", 0) >= threshold
            existing = files.get(f["path"])
            oid = None
            if existing is not None:  # the client skips files whose local oid equals this one
                oid = existing["sha256"] if existing["lfs"] else existing["oid"]
            answer.append(
                {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid}
            )
        self._json({"files": answer, "commitOid": self.storage.head(repo_id, revision, repo_type)})

    def _commit(self, repo_type: str, repo_id: str, revision: str) -> None:
        lines = [json.loads(line) for line in self.body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "commit payload must start with a header line")
        header = lines[0]["value"]
        create_pr = self.query.get("create_pr", ["0"])[0] in ("1", "true", "True")
        result = self.storage.commit(
            repo_type,
            repo_id,
            revision,
            lines[1:],
            header.get("summary", ""),
            header.get("description", ""),
            header.get("parentCommit"),
            create_pr,
        )
        url = self._repo_url(repo_type, repo_id)
        self._json(
            {
                "success": True,
                "commitOid": result["commit"],
                "commitUrl": f"{url}/commit/{result['commit']}",
                "pullRequestUrl": f"{self.base_url}{result['pr_url']}" if result["pr_url"] else None,
                "hookOutput": "",
            }
        )

    def _lfs_batch(self, repo_type: str, repo_id: str) -> None:
        self.storage._load(repo_type, repo_id)  # RepoNotFound if missing
        body = self._body_json()
        if body.get("operation") != "upload":
            raise HubError(400, "hub_server: only LFS uploads are supported (downloads use /resolve)")
        objects = []
        for obj in body.get("objects", []):
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if not self.storage.has_blob(obj["oid"]):
                entry["actions"] = {
                    "upload": {"href": f"{self.base_url}/lfs-upload/{obj['oid']}", "header": {}},
                    "verify": {"href": f"{self.base_url}/lfs-verify/{obj['oid']}", "header": {}},
                }
            objects.append(entry)
        self._send(
            200,
            json.dumps({"transfer": "basic", "objects": objects}).encode(),
            content_type="application/vnd.git-lfs+json",
        )

    def _resolve(self, method: str, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        _, sha, files = self.storage.resolve(repo_type, repo_id, revision)
        f = files.get(path)
        if f is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": sha})
        etag = f["sha256"] if f["lfs"] else f["oid"]
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{etag}"',
            "Accept-Ranges": "bytes",
            "Content-Disposition": f'inline; filename="{path.rsplit("/", 1)[-1]}"',
        }
        if method == "HEAD":
            headers["Content-Length"] = str(f["size"])
            return self._send(200, b"", headers, "application/octet-stream", send_body=False)
        data = self.storage.blob_path(f["sha256"]).read_bytes()
        status = 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        if match and (match.group(1) or match.group(2)):
            start = int(match.group(1) or 0)
            end = int(match.group(2)) if match.group(2) else len(data) - 1
            if start >= len(data) and len(data) > 0:
                raise HubError(416, "Range Not Satisfiable", headers={"Content-Range": f"bytes */{len(data)}"})
            headers["Content-Range"] = f"bytes {start}-{min(end, len(data) - 1)}/{len(data)}"
            data, status = data[start : end + 1], 206
        self._send(status, data, headers, "application/octet-stream")


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client that hangs up is not worth a traceback; a crash in a handler is (it also answered 500).
        if isinstance(sys.exc_info()[1], ConnectionError) and not os.environ.get("HUB_SERVER_DEBUG"):
            return
        super().handle_error(request, client_address)


def start_hub_server(root_dir: str | os.PathLike, lfs_threshold: int | None = None):
    """Start the server on 127.0.0.1 (ephemeral port) in a thread; return ``(base_url, stop_fn)``."""
    server = _HubHTTPServer(("127.0.0.1", 0), HubRequestHandler)
    server.storage = HubStorage(root_dir)  # type: ignore[attr-defined]
    server.base_url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    server.lfs_threshold = lfs_threshold  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="hub_server", daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return server.base_url, stop  # type: ignore[attr-defined]


@contextlib.contextmanager
def hub_server(root_dir: str | os.PathLike | None = None, lfs_threshold: int | None = None):
    """Context manager: ``with hub_server(tmp_path / "hub") as base_url: ...``."""
    with contextlib.ExitStack() as stack:
        if root_dir is None:
            root_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="hub_server_"))
        base_url, stop = start_hub_server(root_dir, lfs_threshold=lfs_threshold)
        stack.callback(stop)
        yield base_url


_CLEARED_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "HF_MODULES_CACHE",
    "HF_TOKEN_PATH",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_HUB_ETAG_TIMEOUT",
    "HF_HUB_DISABLE_XET",
)


def client_env(base_url: str, hf_home: str | os.PathLike, token: str = "hf_test_token", **extra: str) -> dict:
    """Environment for a client subprocess that talks to the server at ``base_url``."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED_ENV}
    Path(hf_home).mkdir(parents=True, exist_ok=True)
    env.update(
        HF_ENDPOINT=base_url,
        HF_TOKEN=token,
        HF_HOME=str(hf_home),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )
    env.update(extra)
    return env


if __name__ == "__main__":  # manual use: python tests/hub_server.py [root_dir]
    root = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="hub_server_")
    url, stop_server = start_hub_server(root)
    print(f"HF_ENDPOINT={url}  (storage: {root}); Ctrl-C to stop", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        stop_server()
