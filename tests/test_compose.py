"""No Docker engine runs here, so docker-compose.yml is checked statically."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_it_has_the_services_of_the_product():
    assert {"postgres", "redis", "edge", "dashboard", "front", "importer", "publisher"} <= set(SERVICES)


def test_every_mounted_file_and_build_input_exists():
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (REPO / source).exists(), f"{name} mounts missing {source}"
        build = service.get("build")
        if build:
            assert (REPO / build["context"] / build["dockerfile"]).is_file(), name


def test_the_edge_is_openresty_with_our_conf_and_modules_where_the_conf_looks():
    edge = SERVICES["edge"]
    assert edge["image"].startswith("openresty/openresty:")
    mounts = {v.split(":")[0]: v.split(":")[1] for v in edge["volumes"]}
    assert mounts["./nginx.conf"] == "/usr/local/openresty/nginx/conf/nginx.conf"
    # nginx.conf loads modules from $prefix/edge; OpenResty's prefix is /usr/local/openresty/nginx/.
    assert 'lua_package_path "$prefix/edge/?.lua;;"' in (REPO / "nginx.conf").read_text()
    assert mounts["./edge"] == "/usr/local/openresty/nginx/edge"
    assert edge["stop_signal"] == "SIGQUIT"
    # The click spool (EDGE_CLICK_SPOOL_DIR's default, $prefix/spool) on a
    # volume of its own: a container that stops before Redis took its
    # clicks sends them when it starts again.
    assert mounts["edgespool"] == "/usr/local/openresty/nginx/spool"
    assert "edgespool" in COMPOSE["volumes"]
    assert 'ngx.config.prefix() .. "spool"' in (REPO / "edge/slingshot/config.lua").read_text()


def test_the_compose_edges_resolve_service_names_and_the_local_edge_needs_no_resolver():
    """REDIS_HOST=redis and http://dashboard:8000 are names: lua-resty-redis
    and proxy_pass look them up only through nginx's `resolver`, which the
    Compose edges get from an include file; the local stack's nginx.conf
    has none (its names are addresses)."""
    conf = (REPO / "nginx.conf").read_text()
    assert "resolver " not in conf.replace("include edge-resolver", "")
    http_block = conf.split("http {", 1)[1]
    assert "    include edge-resolver*.conf;" in http_block.split("server {", 1)[0]
    resolver = (REPO / "edge/docker-resolver.conf").read_text()
    assert re.search(r"^resolver 127\.0\.0\.11[ ;]", resolver, flags=re.M)
    mount = "./edge/docker-resolver.conf:/usr/local/openresty/nginx/conf/edge-resolver.conf:ro"
    scale_out = yaml.safe_load((REPO / "docker-compose.scale-out.yml").read_text())
    edges = [SERVICES["edge"], scale_out["x-edge-2"]]
    for edge in edges:
        assert mount in edge["volumes"]
    assert SERVICES["edge"]["environment"]["REDIS_HOST"] == "redis"


def test_people_reach_the_dashboard_through_its_front_and_the_edges_reach_gunicorn():
    """gunicorn is published only through `front` (dashboard/nginx.conf), an
    nginx that holds slow clients; the edges, nginx too, call gunicorn
    directly, on paths the front does not publish."""
    front, dashboard = SERVICES["front"], SERVICES["dashboard"]
    assert "ports" not in dashboard
    assert front["ports"] == ["${DASHBOARD_PORT:-8000}:8000"]
    assert front["image"] == SERVICES["edge"]["image"] and front["stop_signal"] == "SIGQUIT"
    mounts = {v.split(":")[0]: v.split(":")[1] for v in front["volumes"]}
    assert mounts["./dashboard/nginx.conf"] == "/usr/local/openresty/nginx/conf/nginx.conf"
    conf = (REPO / "dashboard/nginx.conf").read_text()
    # The front looks `dashboard` up through Docker's DNS, each time it may have moved.
    assert mounts["./edge/docker-resolver.conf"] == "/usr/local/openresty/nginx/conf/front-resolver.conf"
    assert "    include front-resolver*.conf;" in conf
    assert re.search(r"^\s+listen 8000;$", conf, flags=re.M)
    command = dashboard["command"]
    upstream = "http://" + command[command.index("--bind") + 1].replace("0.0.0.0", "dashboard")
    assert f"set $slingshot_gunicorn {upstream};" in conf and "proxy_pass $slingshot_gunicorn;" in conf
    assert SERVICES["edge"]["environment"]["EDGE_DASHBOARD_URL"] == "${EDGE_DASHBOARD_URL:-" + upstream + "}"
    assert "location ^~ /internal/ {\n            return 404;" in conf
    # The one proxy the dashboard believes about the client's address (slingshot/proxies.py).
    # Your proxies in front of Slingshot, as before the front came; the front is one more.
    assert dashboard["environment"]["TRUSTED_PROXY_COUNT"] == "${TRUSTED_PROXY_COUNT:-0}"
    assert dashboard["environment"]["DASHBOARD_FRONT"] == "true"
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in conf
    health = " ".join(front["healthcheck"]["test"])
    assert "/dev/tcp/127.0.0.1/8000" in health and "GET /healthz " in health
    assert SERVICES["locust-master"]["environment"]["SLINGSHOT_DASHBOARD_URL"] == "http://front:8000"


def test_edge_environment_names_are_declared_in_nginx_conf():
    declared = set(re.findall(r"^env (\w+);", (REPO / "nginx.conf").read_text(), flags=re.M))
    assert set(SERVICES["edge"]["environment"]) <= declared
    read_by_lua = set(re.findall(r'"((?:REDIS|EDGE)_\w+)"', (REPO / "edge/slingshot/config.lua").read_text()))
    assert read_by_lua == declared


def test_redis_keeps_an_append_only_file_and_services_wait_for_health():
    command = " ".join(SERVICES["redis"]["command"])
    assert "--appendonly yes --appendfsync always" in command
    # The password reaches Redis through a file, never its command line (ps).
    assert "requirepass" not in command.split("redis-server", 1)[1]
    assert "$$REDIS_PASSWORD" in command and SERVICES["redis"]["environment"]["REDIS_PASSWORD"]
    for name in ("postgres", "redis"):
        assert "healthcheck" in SERVICES[name]
    assert SERVICES["dashboard"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_no_secret_has_a_default():
    text = (REPO / "docker-compose.yml").read_text()
    for secret in ("SECRET_KEY", "POSTGRES_PASSWORD", "POSTGRES_SUPERUSER_PASSWORD", "REDIS_PASSWORD"):
        assert re.search(r"\$\{" + secret + r":\?", text), secret
        assert not re.search(r"\$\{" + secret + ":-", text), secret


def _settings_names() -> tuple[set[str], set[str]]:
    """Names the settings read from the environment, and those without a default."""
    text = "\n".join(path.read_text() for path in sorted((REPO / "dashboard/slingshot/settings").glob("*.py")))
    calls = re.findall(r'env(?:\.\w+)?\(\s*"(\w+)"([^)]*)\)', text)
    return {name for name, _ in calls}, {name for name, rest in calls if "default" not in rest}


def test_dashboard_services_set_only_settings_the_code_reads_and_every_required_one():
    read, required = _settings_names()
    for name in ("dashboard", "importer", "publisher", "migrate"):
        environment = set(SERVICES[name]["environment"])
        assert environment <= read, (name, environment - read)
        assert required <= environment, (name, required - environment)


def test_images_are_pinned_and_the_dashboard_runs_unprivileged():
    for name, service in SERVICES.items():
        if "image" in service:
            assert ":" in service["image"] and not service["image"].endswith(":latest"), name
    dockerfile = (REPO / "dashboard/Dockerfile").read_text()
    assert dockerfile.count("FROM ") >= 2, "multi-stage build"
    assert re.search(r"^USER (?!root)\w+", dockerfile, flags=re.M)
    # The pages' Chart.js and CSS are built from the lockfile into the image.
    assert "COPY --from=frontend /frontend/build dashboard/frontend/build" in dockerfile
    assert (REPO / "dashboard/frontend/package-lock.json").is_file()
    assert "node_modules" in (REPO / ".dockerignore").read_text()


def test_postgres_has_the_hll_extension_and_the_application_is_no_superuser():
    postgres = SERVICES["postgres"]
    assert postgres["build"]["context"] == "./sql"
    dockerfile = (REPO / "sql" / postgres["build"]["dockerfile"]).read_text()
    assert "postgresql-15-hll" in dockerfile and "/docker-entrypoint-initdb.d/" in dockerfile
    init = (REPO / "sql/docker-init.sh").read_text()
    assert "CREATE EXTENSION IF NOT EXISTS hll" in init and "NOSUPERUSER" in init
    environment = postgres["environment"]
    assert environment["POSTGRES_USER"] != environment["SLINGSHOT_DB_USER"]
    url = SERVICES["dashboard"]["environment"]["DATABASE_URL"]
    assert url.startswith(f"postgres://{environment['SLINGSHOT_DB_USER']}:")
    assert "POSTGRES_SUPERUSER_PASSWORD" not in str(SERVICES["dashboard"]["environment"])


def test_the_loadtest_profile_runs_locust_on_our_locustfile():
    master, worker = SERVICES["locust-master"], SERVICES["locust-worker"]
    assert master["profiles"] == worker["profiles"] == ["loadtest"]
    assert "--master" in master["command"] and "--worker" in worker["command"]
    assert "./loadtest:/mnt/loadtest:ro" in master["volumes"]
    assert (REPO / "loadtest/locustfile.py").is_file()
    locustfile = (REPO / "loadtest/locustfile.py").read_text()
    for name in master["environment"]:
        if name.startswith("SLINGSHOT_"):
            assert f'"{name}"' in locustfile, name
    assert "seed_loadtest" in SERVICES["seed"]["command"]


def _health_url(service: dict) -> str:
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"] and "urlopen(" in test[3], test
    return re.search(r"urlopen\('([^']+)'", test[3]).group(1)


def test_health_checks_use_each_services_own_endpoint():
    assert _health_url(SERVICES["dashboard"]) == "http://127.0.0.1:8000/healthz"
    for name, setting in (("importer", "IMPORTER_METRICS_PORT"), ("publisher", "PUBLISHER_METRICS_PORT")):
        port = SERVICES[name]["environment"][setting]
        assert _health_url(SERVICES[name]) == f"http://127.0.0.1:{port}/metrics", name
        # The health check runs inside the container: the loopback default reaches it.
        assert SERVICES[name]["environment"][setting.removesuffix("PORT") + "ADDRESS"].endswith(":-127.0.0.1}"), name
    assert "--metrics-port" not in " ".join(SERVICES["importer"]["command"])  # the setting, not a second copy


def test_the_dashboard_counts_in_one_metrics_folder_that_gunicorn_empties():
    dashboard = SERVICES["dashboard"]
    command = dashboard["command"]
    assert command[command.index("--config") + 1] == "dashboard/gunicorn.conf.py"
    assert (REPO / "dashboard/gunicorn.conf.py").is_file()
    assert command[command.index("--chdir") + 1] == "dashboard"
    assert dashboard["environment"]["PROMETHEUS_MULTIPROC_DIR"].startswith("/")
    # Another process in the same folder would add its counts to the dashboard's.
    for name, service in SERVICES.items():
        if name != "dashboard":
            assert "PROMETHEUS_MULTIPROC_DIR" not in (service.get("environment") or {}), name


SCALE_OUT = yaml.safe_load((REPO / "docker-compose.scale-out.yml").read_text())["services"]


def _merged(name: str) -> dict:
    """A service as `docker compose -f docker-compose.yml -f docker-compose.scale-out.yml` sees it."""
    base, over = SERVICES.get(name, {}), SCALE_OUT.get(name, {})
    return {**base, **over, "environment": {**base.get("environment", {}), **over.get("environment", {})}}


def test_scale_out_has_sentinels_replicas_a_store_per_edge_and_a_database_replica():
    assert {f"sentinel-{n}" for n in (1, 2, 3)} <= set(SCALE_OUT)
    sentinel = " ".join(SCALE_OUT["sentinel-1"]["command"])
    assert "sentinel monitor slingshot redis 6379 2" in sentinel and "--sentinel" in sentinel
    for name in ("redis-replica-1", "redis-replica-2"):
        assert "replicaof redis 6379" in " ".join(SCALE_OUT[name]["command"])
    replica = SCALE_OUT["postgres-replica"]
    assert replica["entrypoint"] == ["/usr/local/bin/slingshot-replica"]
    assert "COPY replica-entrypoint.sh /usr/local/bin/slingshot-replica" in (REPO / "sql/Dockerfile").read_text()
    assert "pg_basebackup" in (REPO / "sql/replica-entrypoint.sh").read_text()


def test_scale_out_imports_every_click_store_an_edge_writes_to():
    """A click written to a store no importer reads would never be stored."""
    stores = dict(item.split("=", 1) for item in _merged("importer")["environment"]["CLICK_STORES"].split(","))
    edges = [name for name in SCALE_OUT if name.startswith("edge")]
    written = {_merged(name)["environment"]["EDGE_CLICKS_REDIS_HOST"] for name in edges}
    assert len(written) == len(edges) == 2  # one store per edge
    hosts = {name: url.split("@")[1].split(":")[0] for name, url in stores.items()}
    assert written <= set(hosts.values())
    imported = {
        service["command"][service["command"].index("--store") + 1]
        for service in SCALE_OUT.values()
        if "--store" in service.get("command", [])
    }
    assert imported == set(stores)
    for store in written:
        assert "--appendfsync always" in " ".join(SCALE_OUT[store]["command"])
    for edge in edges:
        links_from = _merged(edge)["environment"]["EDGE_LINKS_REDIS_HOST"]
        assert links_from.startswith("redis-replica-"), edge


def test_scale_out_services_set_only_settings_the_code_reads():
    read, _ = _settings_names()
    declared = set(re.findall(r"^env (\w+);", (REPO / "nginx.conf").read_text(), flags=re.M))
    for name in SCALE_OUT:
        environment = set(_merged(name)["environment"])
        if name.startswith("edge"):
            assert environment <= declared, (name, environment - declared)
        elif name in ("dashboard", "importer", "publisher", "migrate") or name.startswith("importer-"):
            assert environment <= read, (name, environment - read)
    text = (REPO / "docker-compose.scale-out.yml").read_text()
    for secret in ("POSTGRES_PASSWORD", "POSTGRES_REPLICATION_PASSWORD", "REDIS_PASSWORD", "SECRET_KEY"):
        assert not re.search(r"\$\{" + secret + r":-", text), secret
