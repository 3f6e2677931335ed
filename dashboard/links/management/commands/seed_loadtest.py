import json
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from tqdm import tqdm

from links.delivery import deliver_outbox
from links.fields import LinkFields
from links.models import Link
from links.services import link_create
from tokens.models import ApiToken
from tokens.services import token_create, token_revoke

DEFAULT_OUT = Path(settings.REPO_DIR) / ".run" / "loadtest" / "seed.json"


class Command(BaseCommand):
    help = (
        "Create N links for a load-test user (reusing those it has), a fresh write token and password, "
        "and write them where loadtest/locustfile.py reads them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--links", type=int, default=10_000)
        parser.add_argument("--username", default="loadtest")
        parser.add_argument("--out", type=Path, default=DEFAULT_OUT)

    def handle(self, *args, links, username, out, **options):
        user, _ = get_user_model().objects.get_or_create(username=username)
        password = secrets.token_urlsafe(16)
        user.set_password(password)
        user.save(update_fields=["password"])
        for token in ApiToken.objects.filter(user=user, revoked_at__isnull=True):
            token_revoke(token=token)
        _, raw_token = token_create(user=user, name="locust", scope=ApiToken.Scope.WRITE)

        existing = Link.objects.filter(owner=user, tags__contains=["seeded"]).count()
        for i in tqdm(range(existing, links), desc="seeding links", unit="link", disable=None):
            link_create(
                owner=user, fields=LinkFields(url=f"https://example.com/loadtest/{i}?via=slingshot", tags=["seeded"])
            )
        deliver_outbox()  # the redirects must work now, publisher or not
        seeded = list(
            Link.objects.filter(owner=user, tags__contains=["seeded"]).order_by("id").values_list("slug", "url")[:links]
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.touch(mode=0o600)
        out.write_text(json.dumps({"username": username, "password": password, "token": raw_token, "links": seeded}))
        self.stdout.write(
            f"seeded {len(seeded)} links for {username!r} ({links - existing if links > existing else 0} new); wrote {out}"
        )
