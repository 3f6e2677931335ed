"""`python -m devstack.release`: writes the lock of the migrations of the
version in dashboard/slingshot/release.py (docs/releasing.md). Run it when
that version is released, never otherwise: from then on tests/test_release.py
holds every file it lists to its digest."""

import sys

from devstack import REPO

sys.path.insert(0, str(REPO / "dashboard"))

from slingshot.release import RELEASED_MIGRATIONS, VERSION, lock_text  # noqa: E402


def main() -> int:
    RELEASED_MIGRATIONS.write_text(lock_text(VERSION))
    print(f"wrote {RELEASED_MIGRATIONS.relative_to(REPO)} for Slingshot {VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
