"""The Dockerfile and compose.yaml hold what a deployment relies on, checked without a
container engine: a slim Python base, the postgres extra, a non-root user, the /data
volume, ``serve --host 0.0.0.0``, health checks on ``/ready``, API keys required, and only
``KNOWHUB_*`` variables that name real settings (the configuration is strict: a misspelt
one would stop the container at start)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from knowhub.config import Settings, check_env
from tests.docs.markdown import DOCS, REPO, read

DOCKERFILE = REPO / "Dockerfile"
COMPOSE = REPO / "compose.yaml"


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def _env_pairs(argument: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", argument))


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="pyyaml is not installed: compose.yaml not parsed")
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def test_dockerfile_base_install_and_user(dockerfile: list[tuple[str, str]]) -> None:
    words = [word for word, _ in dockerfile]
    base = dict(dockerfile)["FROM"]
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", base), base
    installs = [i for i, (word, arg) in enumerate(dockerfile) if word == "RUN" and "pip install" in arg]
    assert installs and '".[postgres]"' in dockerfile[installs[0]][1]
    users = [i for i, word in enumerate(words) if word == "USER"]
    assert users, "the image must not run as root"
    user = dockerfile[users[-1]][1]
    assert user not in ("root", "0") and not user.startswith(("0:", "root:"))
    assert users[-1] > installs[-1], "switch to the unprivileged user after installing"
    assert "useradd" in dockerfile[installs[0]][1] and "chown knowhub:knowhub /data" in dockerfile[installs[0]][1]


def test_dockerfile_volume_command_and_health(dockerfile: list[tuple[str, str]]) -> None:
    env: dict[str, str] = {}
    for word, arg in dockerfile:
        if word == "ENV":
            env.update(_env_pairs(arg))
    assert env["KNOWHUB_DATA_DIR"] == "/data"
    assert json.loads(dict(dockerfile)["VOLUME"]) == ["/data"]
    assert dict(dockerfile)["EXPOSE"] == "8765"
    command = json.loads(dict(dockerfile)["ENTRYPOINT"]) + json.loads(dict(dockerfile)["CMD"])
    assert command == ["knowhub", "serve", "--host", "0.0.0.0"]
    health = dict(dockerfile)["HEALTHCHECK"]
    assert "http://127.0.0.1:8765/ready" in health and "--start-period" in health
    check_env({name: value for name, value in env.items() if name.startswith("KNOWHUB_")})
    # nothing in the image configures a key: the operator must, so a bind without keys
    # (refused by check_bind_allowed) is never the default
    assert not any(name.startswith("KNOWHUB_AUTH") for name in env)


def test_dockerignore_sends_only_the_package() -> None:
    lines = [line for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    assert lines[0] == "*" and {"!pyproject.toml", "!README.md", "!src/"} <= set(lines)


def test_compose_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"db", "knowhub"}
    db = services["db"]
    assert re.fullmatch(r"pgvector/pgvector:0\.8\.\d+-pg1[5-9]", db["image"]), "pgvector >= 0.8: HNSW with iterative scans"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in db["volumes"])
    app = services["knowhub"]
    assert app["build"] == "."
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert "knowhub-data:/data" in app["volumes"]
    assert all(p.startswith("127.0.0.1:") for p in app["ports"]), "publish on loopback; a proxy adds TLS"
    assert "/ready" in " ".join(app["healthcheck"]["test"])
    assert set(compose["volumes"]) == {"pgdata", "knowhub-data"}


def test_compose_environment_names_real_settings(compose: dict[str, Any]) -> None:
    env = compose["services"]["knowhub"]["environment"]
    check_env({name: "x" for name in env})  # a misspelt KNOWHUB_ name would stop the server
    assert ":?" in env["KNOWHUB_AUTH__KEYS"], "API keys must be required, not defaulted"
    url = env["KNOWHUB_DATABASE_URL"]
    assert re.fullmatch(r"postgresql\+psycopg://knowhub:\$\{KH_DB_PASSWORD:-knowhub\}@db:5432/knowhub", url), url
    # the one URL, with the default password filled in, puts every engine in the database
    settings = Settings.load(None, database_url=url.replace("${KH_DB_PASSWORD:-knowhub}", "pw"))
    assert all(settings.engine_urls().values()), settings.engine_urls()


def test_the_deployment_doc_names_what_the_files_need() -> None:
    doc = read(DOCS / "deployment.md")
    for needle in ("KNOWHUB_AUTH__KEYS", "KH_DB_PASSWORD", "KH_PORT", "compose.yaml", "Dockerfile",
                   "/ready", "/metrics", "pgvector/pgvector:0.8.2-pg17"):
        assert needle in doc, f"docs/deployment.md does not mention {needle}"
