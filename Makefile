# Slingshot: the commands README.md names. `make run` and `make test` install
# what they need first (bin/setup).
.PHONY: setup run status logs ctl backup restore test test-fast test-python test-lua lint lock bench bench-import bench-api bench-create bench-dashboard bench-export bench-box bench-yourls bench-importers bench-copy bench-webhooks bench-live bench-screen bench-click bench-clickhouse-stats loadtest stack-faults slow-clients click-outage multinode redis-outage

VENV := .venv
PY := $(VENV)/bin/python

setup:
	bin/setup

# The whole stack in the foreground under supervisord (devstack/stack.py):
# each program's output prefixed with its name, any program that dies started
# again, Ctrl-C stops them all in order. SLINGSHOT_RUN_DIR (default .run) and
# DASHBOARD_PORT, EDGE_PORT, EDGE_TLS_PORT, POSTGRES_PORT, REDIS_PORT choose
# where; the run directory remembers the ports (devstack/ports.py).
run: setup
	$(PY) -m devstack run

# For a running `make run`, from another terminal: every program's state;
# the logs as they grow; any supervisorctl command, e.g. ARGS='restart importer'.
status:
	@$(PY) -m devstack ctl status

logs:
	tail -n 20 -F $${SLINGSHOT_RUN_DIR:-.run}/logs/*.log

ctl:
	@$(PY) -m devstack ctl $(ARGS)

# A backup of the stack of SLINGSHOT_RUN_DIR (running or stopped) into
# BACKUP_DIR (default backups/<UTC time>, git-ignored): PostgreSQL, Redis,
# SECRET_KEY and the edge's certificates (devstack/backup.py). BACKUP_ARGS=--stop-edge
# stops a running stack's edge meanwhile, so that it holds every click served.
backup: setup
	@$(PY) -m devstack backup $(if $(BACKUP_DIR),--to '$(BACKUP_DIR)') $(BACKUP_ARGS)

# A new run directory (SLINGSHOT_RUN_DIR, default .run) made from BACKUP;
# `make run` then starts it (devstack/restore.py).
restore: setup
	@$(if $(BACKUP),,$(error name the backup's folder: make restore BACKUP=backups/<time>))$(PY) -m devstack restore '$(BACKUP)'

test: setup lint test-lua test-python

# The same without the tests marked slow (@pytest.mark.slow: whole stacks,
# several hosts, upgrades, faults, fuzzing, benchmarks' smokes), for a
# quick run while working; it says how many it left out. CI runs `make test`.
test-fast: setup lint test-lua
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow"

# Lua with luacheck (edge/.luacheckrc), Python with ruff (ruff.toml): its
# rules, and the formatting it would give.
lint:
	cd edge && luacheck --no-color .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-lua:
	cd edge && busted --lua=luajit --output=TAP spec

# The tests on TEST_WORKERS pytest processes (pytest-xdist), each with its
# own PostgreSQL, Redis and edges; a file's tests on one worker, in their
# order, the files with slow tests sent first (devstack/pytest_plugin.py).
# Much of the suite waits on servers rather than computing: on CI's two
# cores four workers finish soonest (two: 17.7 minutes, three: 13.5, four:
# 9.8 to 12.2; README). TEST_WORKERS=0 runs them all in one process.
TEST_WORKERS ?= 4
test-python:
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The edge against a bare-nginx ceiling (docs/benchmarks.md); not in `test`.
bench: setup
	$(PY) loadtest/bench_edge.py $(BENCH_ARGS)

lock:
	$(VENV)/bin/pip install --quiet -r requirements.in
	{ echo '# Pinned from requirements.in with `make lock`; install with `make setup`.'; \
	  $(VENV)/bin/pip freeze --exclude-editable; } > requirements.txt

# Not part of `make test` (each bench-* script runs there with --smoke,
# tests/test_bench_smoke.py): preloads 3,000,000 clicks and times the importer;
# `make bench-import CLICK_STORE=clickhouse` into a throwaway ClickHouse cluster.
bench-import: setup
	$(PY) loadtest/bench_import.py $(if $(CLICK_STORE),--store $(CLICK_STORE))

# Not part of `make test`: link creation at 200/s and stats over 10,000,000 clicks.
bench-api: setup
	$(PY) loadtest/bench_api.py

# Not part of `make test` (a smoke is, tests/test_bench_create.py): link
# creation through the API at 100, 200 and 300/s, CPU per create by process;
# BENCH_CREATE_ARGS e.g. '--against <a checkout of main>' or '--profile 500'.
bench-create: setup
	$(PY) loadtest/bench_create.py $(BENCH_CREATE_ARGS)

# Not part of `make test`: what a click's row costs PostgreSQL in COPY, and
# what binary COPY or each index of `clicks` adds to it (docs/benchmarks.md).
bench-copy: setup
	$(PY) loadtest/bench_copy.py $(BENCH_ARGS)

# Not part of `make test`: the dashboard's links list with 100,000 links.
bench-dashboard: setup
	$(PY) loadtest/bench_dashboard.py

# Not part of `make test` (a small run is, importers/tests/test_bench.py):
# 1,000,000 visits of a YOURLS dump through `import_links` (docs/importing.md).
bench-importers: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_importers.py $(BENCH_ARGS)

# Peak memory of a clicks export of 1,000,000 rows (docs/benchmarks.md).
bench-export: setup
	$(PY) loadtest/bench_export.py

# Not part of `make test`: the whole box, a `make run` stack storing every
# click as it comes, against a bare nginx (BENCH_BOX_ARGS).
bench-box: setup
	$(PY) loadtest/bench_box.py $(BENCH_BOX_ARGS)

# Not part of `make test`: what a signed YOURLS API request costs among 10,000 tokens.
bench-yourls: setup
	$(PY) loadtest/bench_yourls.py

# Not part of `make test` (its --smoke is): what a link.clicked webhook costs the
# click importer, and click events a second the webhook deliverer sends (docs/webhooks.md).
bench-webhooks: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_webhooks.py $(BENCH_ARGS)

# Not part of `make test` (its --smoke is): what a thousand open live pages
# (serve_live's pushed clicks) cost the dashboard's other pages (docs/dashboard.md).
bench-live: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_live.py $(BENCH_ARGS)

# Not part of `make test` (its --smoke is): reading a blocklist of a million
# domains, what it takes in each process, and what screening adds to a link.
bench-screen: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_screen.py $(BENCH_ARGS)

bench-click: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_click.py $(BENCH_ARGS)

# Not part of `make test` (a smoke is, tests/test_bench_smoke.py): a year of
# one link's stats over 100,000,000 clicks in a throwaway ClickHouse cluster
# (docs/benchmarks.md); ~25 GB of /tmp for a while.
bench-clickhouse-stats: setup
	flock /tmp/slingshot-bench.lock $(PY) loadtest/bench_clickhouse_stats.py $(BENCH_ARGS)

# Not part of `make test`: a fresh `make run` stack, each of its processes
# killed with SIGKILL in turn under traffic; prints how long each took to come
# back and the redirects served against the clicks stored.
stack-faults: setup
	$(PY) loadtest/stack_faults.py

# Not part of `make test` (a short form is, tests/test_stack.py): a fresh
# `make run` stack, 400 slow connections held against the dashboard's front
# for 60 s; prints how long its pages, sign-in page and API, and a password
# check and the YOURLS API through the edge, took meanwhile (SLOW_CLIENTS_ARGS).
slow-clients: setup
	$(PY) loadtest/slow_clients.py $(SLOW_CLIENTS_ARGS)

# Not part of `make test` (a short form is, edge/t/test_click_journal.py): a
# fresh `make run` stack, Redis hung for 10 minutes under 5,000 visits a
# second; prints the click spool's peak, how long it took to drain, and the
# redirects served against the clicks stored (CLICK_OUTAGE_ARGS).
click-outage: setup
	$(PY) loadtest/click_outage.py $(CLICK_OUTAGE_ARGS)

# Not part of `make test` (edge/t/test_stale.py is its short form): an edge
# under traffic while Redis is hung or killed for longer than the cache TTL;
# REDIS_OUTAGE_ARGS='--how killed --seconds 120', say.
redis-outage: setup
	$(PY) loadtest/redis_outage.py $(REDIS_OUTAGE_ARGS)

# Not part of `make test` (a short form is): several hosts on this machine, the
# Redis primary killed under traffic; ends in `reconciled: stored/served`.
multinode: setup
	$(PY) loadtest/multinode.py $(MULTINODE_ARGS)

# Seeds links, runs Locust headless (LOCUST_RUN_TIME, LOCUST_USERS, LOCUST_SPAWN_RATE),
# waits for the importer and reconciles redirects with stored clicks. Starts the
# local stack unless SLINGSHOT_EDGE_URL and SLINGSHOT_DASHBOARD_URL name a running one.
loadtest: setup
	$(PY) loadtest/run_loadtest.py
