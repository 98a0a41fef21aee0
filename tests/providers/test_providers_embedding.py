"""HashingEmbedder and OpenAICompatibleEmbedder: the shared contract plus their specifics.

The OpenAI-compatible client talks to a fake ``/v1/embeddings`` server started on
127.0.0.1 that answers with (scaled, shuffled) HashingEmbedder vectors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from knowhub.config import EmbeddingSettings
from knowhub.errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
)
from knowhub.providers.embedding import (
    Embedder,
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    build_embedder,
    embed_in_background,
)

try:
    from tests.providers.contract import EmbedderContract
except ModuleNotFoundError:  # plain `pytest` run without the repo root on sys.path
    from contract import EmbedderContract  # type: ignore[no-redef]

FAKE_DIM = 48
SECRET = "sk-test-secret-123456"


class _FakeEmbeddingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.source = HashingEmbedder(dim=FAKE_DIM)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out on purpose close the socket before the answer is sent.
        return

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: _FakeEmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        self.server.requests.append(body)
        self.server.auth_headers.append(self.headers.get("Authorization", ""))
        if self.path != "/v1/embeddings":
            self._send(404, {"error": {"message": "no such route"}})
            return
        model = body.get("model")
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if model == "fail":
            auth = self.headers.get("Authorization", "")
            self._send(500, {"error": {"message": f"exploded for {auth}", "type": "server_error"}})
            return
        if model == "slow":
            time.sleep(1.5)
        matrix = self.server.source.embed_matrix(texts) * 3.0  # unnormalized on purpose
        if model == "short":
            matrix = matrix[:-1]
        if model == "wide":
            matrix = np.hstack([matrix, matrix])
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
            for i, row in enumerate(matrix)
        ]
        data.reverse()  # clients must order by "index", not by position
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            },
        )


@pytest.fixture(scope="module")
def fake_server() -> Iterator[_FakeEmbeddingServer]:
    server = _FakeEmbeddingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class TestHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder(dim=64)


class TestHashingEmbedderDefaultDim(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder()


class TestOpenAICompatibleEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self, fake_server: _FakeEmbeddingServer) -> Iterator[Embedder]:
        client = OpenAICompatibleEmbedder(
            base_url=fake_server.base_url, model="fake-embed", api_key=SECRET, batch_size=2
        )
        yield client
        client.close()


# -- HashingEmbedder specifics ---------------------------------------------------------------


def test_hashing_is_deterministic_across_processes() -> None:
    texts = ["cross process stability", "跨进程稳定", "C++ 和 Python"]
    here = HashingEmbedder(dim=32).embed_matrix(texts)
    code = (
        "import json,sys; from knowhub.providers.embedding import HashingEmbedder;"
        "print(json.dumps(HashingEmbedder(dim=32).embed_matrix(json.loads(sys.argv[1])).tolist()))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(texts)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        )
        assert np.array_equal(np.asarray(json.loads(out.stdout), dtype=np.float32), here)


def test_hashing_name_and_dim() -> None:
    embedder = HashingEmbedder(dim=128, ngram=4)
    assert embedder.dim == 128
    assert "128" in embedder.name
    assert HashingEmbedder(dim=128).name != HashingEmbedder(dim=256).name
    with pytest.raises(InvalidInputError):
        HashingEmbedder(dim=1)
    with pytest.raises(InvalidInputError):
        HashingEmbedder(ngram=0)


def test_hashing_cache_bound_does_not_change_vectors() -> None:
    texts = [f"document number {i} about topic {i % 7}" for i in range(50)]
    reference = HashingEmbedder(dim=64).embed_matrix(texts)
    tiny = HashingEmbedder(dim=64)
    tiny.CACHE_SIZE = 5
    assert np.array_equal(tiny.embed_matrix(texts), reference)
    assert len(tiny._slots) <= 5


def test_hashing_handles_traditional_fullwidth_and_typos() -> None:
    embedder = HashingEmbedder(dim=256)
    simp, trad, other = embedder.embed_matrix(["机器学习", "機器學習", "天气预报"])
    assert float(simp @ trad) == pytest.approx(1.0, abs=1e-5)
    assert float(simp @ other) < 0.3
    full, half = embedder.embed_matrix(["ＰＹＴＨＯＮ", "python"])
    assert float(full @ half) == pytest.approx(1.0, abs=1e-5)
    right, typo, unrelated = embedder.embed_matrix(["configuration", "configuraton", "weather"])
    assert float(right @ typo) > 0.4 > float(right @ unrelated)


def test_hashing_punctuation_only_text_is_zero() -> None:
    matrix = HashingEmbedder(dim=32).embed_matrix(["!!! ... ，。", "   "])
    assert not matrix.any()


def test_hashing_large_batch_crosses_chunks() -> None:
    embedder = HashingEmbedder(dim=32)
    texts = [f"t{i} 文{i % 10}" for i in range(4100)]
    matrix = embedder.embed_matrix(texts)
    assert matrix.shape == (4100, 32)
    assert np.allclose(matrix[4099], embedder.embed_matrix([texts[4099]])[0])


# -- OpenAICompatibleEmbedder specifics ----------------------------------------------------


def test_openai_normalizes_orders_batches_and_skips_empty(
    fake_server: _FakeEmbeddingServer,
) -> None:
    client = OpenAICompatibleEmbedder(
        base_url=fake_server.base_url, model="fake-embed", api_key=SECRET, batch_size=2
    )
    before = len(fake_server.requests)
    texts = ["alpha", "", "beta", "gamma", "  ", "delta", "epsilon"]
    matrix = client.embed_matrix(texts)
    sent = fake_server.requests[before:]
    assert [r["input"] for r in sent] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert all(r["encoding_format"] == "float" for r in sent)
    assert "dimensions" not in sent[0]
    assert fake_server.auth_headers[-1] == f"Bearer {SECRET}"
    expected = fake_server.source.embed_matrix(texts)
    assert np.allclose(matrix, expected, atol=1e-5)
    assert not matrix[1].any() and not matrix[4].any()
    assert client.dim == FAKE_DIM
    client.close()


def test_openai_learns_dim_with_a_probe(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(base_url=fake_server.base_url, model="fake-embed")
    assert client.dim == FAKE_DIM
    assert fake_server.auth_headers[-1] == "Bearer no-key"
    assert client.embed_matrix([""]).shape == (1, FAKE_DIM)
    client.close()


def test_openai_dimension_mismatch_is_a_config_error(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(base_url=fake_server.base_url, model="fake-embed", dim=16)
    with pytest.raises(ConfigError, match=r"embedding\.dim = 48"):
        client.embed_matrix(["hello"])
    client.close()


def test_openai_given_dim_is_verified_when_first_read(fake_server: _FakeEmbeddingServer) -> None:
    """An engine reads ``dim`` when it opens: a wrong setting must fail there, before the
    engine writes anything, not at its first embedding."""
    wrong = OpenAICompatibleEmbedder(base_url=fake_server.base_url, model="fake-embed", dim=16)
    before = len(fake_server.requests)
    with pytest.raises(ConfigError, match=r"returns 48-dimensional vectors, but embedding\.dim is 16"):
        _ = wrong.dim
    assert len(fake_server.requests) == before + 1
    wrong.close()
    right = OpenAICompatibleEmbedder(base_url=fake_server.base_url, model="fake-embed", dim=FAKE_DIM)
    assert right.dim == FAKE_DIM and right.dim == FAKE_DIM
    right.embed_matrix(["hello"])
    assert len(fake_server.requests) == before + 3  # one probe, one embedding: dim asked once
    right.close()


def test_openai_sends_dimensions_only_to_openai_v3_models(
    fake_server: _FakeEmbeddingServer,
) -> None:
    client = OpenAICompatibleEmbedder(
        base_url=fake_server.base_url, model="text-embedding-3-small", dim=FAKE_DIM
    )
    client.embed_matrix(["hello"])
    assert fake_server.requests[-1]["dimensions"] == FAKE_DIM
    client.close()


def test_openai_wrong_vector_count_is_a_response_error(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(base_url=fake_server.base_url, model="short")
    with pytest.raises(LLMResponseError):
        client.embed_matrix(["one", "two"])
    client.close()


def test_openai_model_override_in_embed_texts(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(
        base_url=fake_server.base_url, model="fake-embed", dim=FAKE_DIM
    )
    vectors = client.embed_texts(["hello"], model="wide")
    assert fake_server.requests[-1]["model"] == "wide"
    assert vectors[0].model == "wide"
    assert len(vectors[0].dense_vector) == 2 * FAKE_DIM
    assert client.dim == FAKE_DIM
    client.close()


def test_openai_http_error_is_llm_error_without_key(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(
        base_url=fake_server.base_url, model="fail", api_key=SECRET, max_retries=0
    )
    with pytest.raises(LLMError) as info:
        client.embed_matrix(["x"])
    assert info.value.context["status"] == 500
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value.to_dict())
    client.close()


def test_openai_timeout_is_llm_timeout_error(fake_server: _FakeEmbeddingServer) -> None:
    client = OpenAICompatibleEmbedder(
        base_url=fake_server.base_url, model="slow", timeout_s=0.3, max_retries=0
    )
    with pytest.raises(LLMTimeoutError):
        client.embed_matrix(["x"])
    client.close()


def test_openai_unreachable_server_is_llm_error() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    server.server_close()  # nothing listens on this port any more
    client = OpenAICompatibleEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1", model="fake-embed", max_retries=0, timeout_s=2
    )
    with pytest.raises(LLMError):
        client.embed_matrix(["x"])
    client.close()


def test_openai_rejects_bad_arguments() -> None:
    with pytest.raises(InvalidInputError):
        OpenAICompatibleEmbedder(batch_size=0)
    with pytest.raises(InvalidInputError):
        OpenAICompatibleEmbedder(dim=0)


# -- build_embedder --------------------------------------------------------------------------


def test_build_embedder_hashing() -> None:
    embedder = build_embedder(EmbeddingSettings(provider="hashing", dim=96))
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dim == 96


def test_embedding_dim_is_detected_when_unset(fake_server: _FakeEmbeddingServer) -> None:
    assert EmbeddingSettings().dim is None
    assert build_embedder(EmbeddingSettings(provider="hashing")).dim == HashingEmbedder().dim
    remote = build_embedder(EmbeddingSettings(provider="openai", base_url=fake_server.base_url, model="fake-embed"))
    assert remote.dim == FAKE_DIM
    assert remote.embed_matrix(["hello"]).shape == (1, FAKE_DIM)
    remote.close()  # type: ignore[attr-defined]


def test_build_embedder_openai(fake_server: _FakeEmbeddingServer) -> None:
    settings = EmbeddingSettings(
        provider="openai",
        base_url=fake_server.base_url,
        model="fake-embed",
        api_key=SECRET,
        dim=FAKE_DIM,
        timeout_s=5,
    )
    embedder = build_embedder(settings)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.embed_matrix(["hello"]).shape == (1, FAKE_DIM)
    assert fake_server.auth_headers[-1] == f"Bearer {SECRET}"
    embedder.close()


def test_embed_in_background_runs_elsewhere_and_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A costly embedder's query embedding starts on a worker thread at once (so it overlaps
    the index's lexical stage) and its error reaches the caller when the result is asked
    for; the hashing embedder computes inline."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    started = threading.Event()
    release = threading.Event()
    threads: list[str] = []

    def slow() -> np.ndarray:
        threads.append(threading.current_thread().name)
        started.set()
        assert release.wait(5)
        return np.ones(4, dtype=np.float32)

    costly = object()  # any embedder that is not the hashing one
    result = embed_in_background(costly, slow)  # type: ignore[arg-type]
    assert started.wait(5)  # running before anyone waits for it
    release.set()
    assert np.array_equal(result(), np.ones(4))
    assert threads and threads[0] != threading.current_thread().name

    def broken() -> np.ndarray:
        raise LLMError("endpoint down")

    with pytest.raises(LLMError, match="endpoint down"):
        embed_in_background(costly, broken)()  # type: ignore[arg-type]
    inline: list[str] = []
    embed_in_background(HashingEmbedder(), lambda: inline.append(threading.current_thread().name) or np.zeros(1))
    assert inline == [threading.current_thread().name]
