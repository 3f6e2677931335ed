"""The settings (slingshot/settings/) against docs/configuration.md: every
variable the dashboard's table lists is read, and every variable read is
listed."""

import json
import os
import re
import subprocess
import sys

from slingshot.release import DASHBOARD_DIR, REPO_DIR

# The settings imported in a process of their own, each variable they ask
# django-environ for recorded (every read goes through Env.get_value).
RECORDED_READS = """
import json, environ
read = set()
get_value = environ.Env.get_value
def recorded(self, var, *args, **kwargs):
    read.add(var)
    return get_value(self, var, *args, **kwargs)
environ.Env.get_value = recorded
import slingshot.settings
print(json.dumps(sorted(read)))
"""


def read_by_settings() -> set[str]:
    environment = {
        "PATH": os.environ["PATH"],
        "SLINGSHOT_ENV_FILE": "",
        "SECRET_KEY": "only-to-import-the-settings",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
    }
    done = subprocess.run(
        [sys.executable, "-c", RECORDED_READS],
        cwd=DASHBOARD_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout))


def documented(section: str) -> set[str]:
    """The variables in the first column of the tables under a `## ` heading."""
    text = (REPO_DIR / "docs" / "configuration.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in body.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_variable_the_settings_read_is_documented_and_every_documented_one_is_read():
    read = read_by_settings()
    listed = documented("Dashboard, API, publisher and importer")
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_HOST", "CLICK_STORES", "SLINGSHOT_ENV_FILE"} <= read
    assert listed - read == set(), "listed in docs/configuration.md, read by no setting"
    # The ports of the local stack give two defaults (EDGE_BASE_URL, DASHBOARD_BASE_URL).
    assert read - listed == {"EDGE_PORT", "DASHBOARD_PORT"} <= documented("The local stack (`make run`)")


def test_oidc_group_roles_are_read_as_group_team_and_role_and_a_bad_one_refused():
    import pytest
    from django.core.exceptions import ImproperlyConfigured

    from slingshot.settings.sso import _group_roles

    assert _group_roles(" eng=Engineering:editor, mkt=Marketing: Europe:viewer ,") == [
        ("eng", "Engineering", "editor"),
        ("mkt", "Marketing: Europe", "viewer"),  # the role after the last colon
    ]
    assert _group_roles("") == []
    for bad in ("eng", "eng=Engineering", "eng=Engineering:owner", "=Engineering:editor", "eng=:editor"):
        with pytest.raises(ImproperlyConfigured):
            _group_roles(bad)


def test_a_rate_or_a_screen_action_out_of_shape_stops_the_settings_at_start():
    for name, value, said in (
        ("REPORT_RATE", "five an hour", "REPORT_RATE is 'five an hour'"),
        ("LINK_CREATE_RATE", "600/fortnight", "LINK_CREATE_RATE is '600/fortnight'"),
        ("SCREEN_ACTION", "hide", "SCREEN_ACTION is 'hide'"),
    ):
        environment = {
            "PATH": os.environ["PATH"],
            "SLINGSHOT_ENV_FILE": "",
            "SECRET_KEY": "only-to-import-the-settings",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
            name: value,
        }
        done = subprocess.run(
            [sys.executable, "-c", "import slingshot.settings"],
            cwd=DASHBOARD_DIR,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0 and "ImproperlyConfigured" in done.stderr and said in done.stderr, done.stderr
    from slingshot.settings.environment import _RATE

    assert all(_RATE.match(good) for good in ("5/hour", "600/min", "1/s", "10/DAY"))
