"""The tag filter, case aside, through an index: it read every link of the
team before (links.selectors.link_search, docs/benchmarks.md "Dashboard").
lower_tags() is the index's expression, and tells the planner two things:
- COST 500: a call is a small query, a few microseconds; at the default
  cost the planner would call it on every row rather than read the index
  for a tag most links have (184 ms instead of 25 ms for 100,000 links).
- PARALLEL RESTRICTED: the filter is not shared with parallel workers, whose
  start costs more (about 2 ms a query, twice a page) than the index scan
  they would share.
The index keeps 10 times PostgreSQL's default statistics of its tags: with
the default, a tag on 3 links of 100,000 was estimated at 500, and the
page's 50 ids were read by walking the whole team's index (360 ms) rather
than from this one (0.1 ms).
The index on the tags as written served nothing but that filter's first,
case-sensitive form. (A stored column of the lower-cased tags was tried:
it widened the table, and the scans of the first page's count and of the
sort by clicks slowed by a fifth.)"""

import django.contrib.postgres.indexes
from django.db import migrations

import links.models

LOWER_TAGS = """
CREATE FUNCTION lower_tags(tags varchar(50)[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL RESTRICTED COST 500
    RETURN ARRAY(SELECT lower(t) FROM unnest(tags) t);
"""


class Migration(migrations.Migration):

    dependencies = [
        ("links", "0002_link_team"),
    ]

    operations = [
        migrations.RunSQL(LOWER_TAGS, reverse_sql="DROP FUNCTION lower_tags(varchar[]);"),
        migrations.RemoveIndex(model_name="link", name="link_tags_gin"),
        migrations.AddIndex(
            model_name="link",
            index=django.contrib.postgres.indexes.GinIndex(links.models.LowerTags("tags"), name="link_tags_lower_gin"),
        ),
        migrations.RunSQL(
            "ALTER INDEX link_tags_lower_gin ALTER COLUMN 1 SET STATISTICS 1000;", reverse_sql=migrations.RunSQL.noop
        ),
    ]
