"""Slingshot load test (Locust). Run it through `make loadtest`, which seeds
links, runs this headless and reconciles clicks; or by hand:

    .venv/bin/locust -f loadtest/locustfile.py --headless -u 50 -r 10 -t 60s

Settings (environment):
  SLINGSHOT_EDGE_URL       edge base URL            (default http://127.0.0.1:8080)
  SLINGSHOT_DASHBOARD_URL  dashboard base URL       (default http://127.0.0.1:8000)
  SLINGSHOT_SEED_FILE      written by `manage.py seed_loadtest` (default .run/loadtest/seed.json)
  LOCUST_REDIRECT_WEIGHT, LOCUST_API_WEIGHT, LOCUST_DASHBOARD_WEIGHT   user mix (default 8, 1, 1)
  LOCUST_ZIPF_S            popularity skew of the seeded links (default 1.0)
  LOCUST_REDIRECT_RATE     requests/s per RedirectUser (default 0: as fast as possible)
"""

import itertools
import json
import os
import random
import re
from bisect import bisect
from pathlib import Path

from locust import FastHttpUser, HttpUser, between, constant, constant_throughput, task

REPO = Path(__file__).resolve().parent.parent
SEED = json.loads(Path(os.environ.get("SLINGSHOT_SEED_FILE", REPO / ".run" / "loadtest" / "seed.json")).read_text())
LINKS = SEED["links"]
EDGE_URL = os.environ.get("SLINGSHOT_EDGE_URL", "http://127.0.0.1:8080")
DASHBOARD_URL = os.environ.get("SLINGSHOT_DASHBOARD_URL", "http://127.0.0.1:8000")
REDIRECT_NAME = "/[slug]"  # the stats row `make loadtest` reconciles against

# Zipf-like popularity: the link of rank r is picked with weight 1 / r**s.
_S = float(os.environ.get("LOCUST_ZIPF_S", "1.0"))
_CUMULATIVE = list(itertools.accumulate(1 / rank**_S for rank in range(1, len(LINKS) + 1)))


def popular_link() -> tuple[str, str]:
    return LINKS[bisect(_CUMULATIVE, random.random() * _CUMULATIVE[-1])]


class RedirectUser(FastHttpUser):
    """Follows short links the way a browser would see them, without following the redirect."""

    host = EDGE_URL
    weight = int(os.environ.get("LOCUST_REDIRECT_WEIGHT", "8"))
    # Requests per second per user; 0: as fast as it can (then Locust itself,
    # on the same cores, becomes the bottleneck and its timings stretch).
    _rate = float(os.environ.get("LOCUST_REDIRECT_RATE", "0"))
    wait_time = constant_throughput(_rate) if _rate > 0 else constant(0)

    @task
    def follow(self):
        slug, target = popular_link()
        with self.client.get(f"/{slug}", name=REDIRECT_NAME, allow_redirects=False, catch_response=True) as response:
            if response.status_code != 302:
                response.failure(f"status {response.status_code}, wanted 302")
            elif response.headers.get("Location") != target:
                response.failure(f"Location {response.headers.get('Location')!r}, wanted {target!r}")


class ApiUser(FastHttpUser):
    """A script using the REST API with a token: creates links, lists them, reads stats."""

    host = DASHBOARD_URL
    weight = int(os.environ.get("LOCUST_API_WEIGHT", "1"))
    wait_time = between(0.2, 1.0)

    def on_start(self):
        self.headers = {"Authorization": f"Bearer {SEED['token']}"}

    @task(2)
    def create(self):
        self.client.post(
            "/api/v1/links",
            json={"url": f"https://example.com/api/{random.getrandbits(64):x}"},
            headers=self.headers,
            name="/api/v1/links [create]",
        )

    @task(3)
    def list_links(self):
        self.client.get("/api/v1/links?ordering=-created_at", headers=self.headers, name="/api/v1/links [list]")

    @task(3)
    def stats(self):
        slug, _ = popular_link()
        self.client.get(
            f"/api/v1/links/{slug}/stats?interval=hour", headers=self.headers, name="/api/v1/links/[slug]/stats"
        )


class DashboardUser(HttpUser):
    """A person signed in to the dashboard, browsing the links list and a link's page."""

    host = DASHBOARD_URL
    weight = int(os.environ.get("LOCUST_DASHBOARD_WEIGHT", "1"))
    wait_time = between(0.5, 2.0)
    login_path = os.environ.get("LOCUST_LOGIN_PATH", "/sign-in/")
    list_path = os.environ.get("LOCUST_LINKS_PATH", "/links/")

    def on_start(self):
        page = self.client.get(self.login_path, name="login page")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        with self.client.post(
            self.login_path,
            data={
                "username": SEED["username"],
                "password": SEED["password"],
                "csrfmiddlewaretoken": token.group(1) if token else "",
            },
            headers={"Referer": DASHBOARD_URL + self.login_path},
            name="sign in",
            catch_response=True,
        ) as response:
            if self.login_path in response.url:
                response.failure("still on the sign-in page: sign-in failed")

    @task(2)
    def links_list(self):
        self.client.get(self.list_path, name="links list")

    @task(1)
    def link_detail(self):
        slug, _ = popular_link()
        self.client.get(f"{self.list_path}{slug}/", name="link detail")
