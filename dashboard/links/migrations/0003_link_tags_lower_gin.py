"""The tag filter, case aside, through an index: it read every link of the
team before (links.selectors.link_search, docs/benchmarks.md "Dashboard").
lower_tags() is the index's expression. Its declared cost is what a call
takes, a small query (a few microseconds): without it the planner would call
it on every row rather than read the index for a tag most links have. The
index on the tags as written served nothing but that filter's first form."""

import django.contrib.postgres.indexes
from django.db import migrations

import links.models

LOWER_TAGS = """
CREATE FUNCTION lower_tags(tags varchar(50)[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 500
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
    ]
