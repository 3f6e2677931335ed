"""A new row inserted by a statement written once per model, for the rows
every request writes (a link, its audit entry): the ORM compiles its INSERT
at every save, which cost more CPU than PostgreSQL spent running it
(docs/benchmarks.md, link creation)."""

import functools

from django.db import DEFAULT_DB_ALIAS, connection, connections, models


@functools.cache
def _statement(model: type[models.Model], on_conflict: str) -> tuple[str, tuple[models.Field, ...]]:
    fields = tuple(field for field in model._meta.concrete_fields if not field.primary_key)
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    return (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns})"
        f" VALUES ({', '.join(['%s'] * len(fields))}) {on_conflict} RETURNING {connection.ops.quote_name(model._meta.pk.column)}",
        fields,
    )


def insert(instance: models.Model, *, on_conflict: str = "") -> bool:
    """Inserts `instance`, which has no primary key yet, with the values
    Model.save would write (auto_now fields set, foreign keys by id), on the
    default database, and gives it its new primary key. Sends no save
    signals: for models nothing listens to. `on_conflict` ("ON CONFLICT ...
    DO NOTHING") may have the row not inserted: False then."""
    sql, fields = _statement(type(instance), on_conflict)
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of `connection` looks it up again
    with db.cursor() as cursor:
        cursor.execute(sql, [field.get_db_prep_save(field.pre_save(instance, True), db) for field in fields])
        row = cursor.fetchone()
    if row is None:
        return False
    instance.pk = row[0]
    instance._state.adding, instance._state.db = False, db.alias
    return True
