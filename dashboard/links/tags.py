"""Tags across links: filters by several tags, the tags of some links with
their counts, and renaming or deleting a tag on every link that has it.

A tag lives on its links (Link.tags), not in a table of its own: a tag
exists while a link has it. Filters match tags case aside, as the index
link_tags_lower_gin has them; renaming and deleting change a tag as it is
written. Renames and deletions go through links.services.link_update, so
each link's change is checked against the actor's role, audited and
published like any other."""

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.postgres.fields import ArrayField
from django.db import connection, transaction
from django.db.models import Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Lower

from .models import Link, LowerTags
from .services import link_update
from .validation import validate_tags


class _Lowered(Func):
    """Tags as lower_tags() has them, lower-cased by PostgreSQL: an array of
    constants, which the planner folds and weighs by the tag index's
    statistics (a subquery it cannot, and it took a filter matching three
    links of 100,000 for one matching a thousand, walking them all)."""

    template = "ARRAY[%(expressions)s]::text[]"
    output_field = ArrayField(TextField())


def _having(links: QuerySet[Link], tags: list[str], *, every: bool) -> tuple[QuerySet[Link], Q]:
    # @> all of them, && any of them: by the index link_tags_lower_gin.
    asked = _Lowered(*(Lower(Value(tag, output_field=TextField())) for tag in tags))
    return links.alias(tags_lower=LowerTags("tags")), Q(**{f"tags_lower__{'contains' if every else 'overlap'}": asked})


def with_tags(links: QuerySet[Link], tags: list[str], *, every: bool = False) -> QuerySet[Link]:
    """The links with any of these tags (every one of them with `every`), case aside."""
    if not tags:
        return links
    links, having = _having(links, tags, every=every)
    return links.filter(having)


def without_tags(links: QuerySet[Link], tags: list[str], *, every: bool = False) -> QuerySet[Link]:
    """The links with none of these tags (not every one of them with `every`), case aside."""
    if not tags:
        return links
    links, having = _having(links, tags, every=every)
    return links.exclude(having)


@dataclass(frozen=True)
class TagStats:
    tag: str
    links: int
    clicks: int
    human_clicks: int


def tag_stats(links: QuerySet[Link]) -> list[TagStats]:
    """Each tag of these links (annotated with their click totals:
    clicks.selectors.with_click_totals), how many of them have it, and their
    clicks; by tag. One query."""
    sql, params = links.values("tags", "clicks", "human_clicks").order_by().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tag, count(*), coalesce(sum(l.clicks), 0), coalesce(sum(l.human_clicks), 0) "
            f"FROM ({sql}) l (tags, clicks, human_clicks), unnest(l.tags) tag GROUP BY tag ORDER BY tag",
            params,
        )
        return [TagStats(tag, int(n), int(clicks), int(human)) for tag, n, clicks, human in cursor.fetchall()]


@transaction.atomic
def tag_rename(*, links: QuerySet[Link], old: str, new: str, actor: AbstractBaseUser | None = None) -> int:
    """Renames the tag `old` to `new` on each of these links that has it (a
    link that has both keeps one); returns how many links changed. `actor`
    must be an editor of each one's team (PermissionDenied: none changes)."""
    validate_tags([new])
    changed = 0
    for link in links.filter(tags__contains=[old]).order_by("pk").select_for_update(of=("self",)):
        tags = [new if tag == old else tag for tag in link.tags]
        link_update(link=link, actor=actor, tags=list(dict.fromkeys(tags)))
        changed += 1
    return changed


@transaction.atomic
def tags_delete(*, links: QuerySet[Link], tags: list[str], actor: AbstractBaseUser | None = None) -> int:
    """Takes these tags off each of these links that has any of them;
    returns how many links changed. `actor` as for tag_rename."""
    changed = 0
    for link in links.filter(tags__overlap=list(tags)).order_by("pk").select_for_update(of=("self",)):
        link_update(link=link, actor=actor, tags=[tag for tag in link.tags if tag not in tags])
        changed += 1
    return changed
