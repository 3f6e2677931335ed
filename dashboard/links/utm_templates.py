"""A team's UTM templates: UTM parameters kept under a name, which the link
form's builder fills in. Everyone in the team reads them; editors make,
change and delete them, each change in the team's audit log."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from teams import access, audit
from teams.models import Action, Role

from .models import UtmTemplate
from .utm import UTM_PARAMETERS

NAME_TAKEN = "The team has a UTM template of this name already."


def templates_of(team_ids) -> QuerySet[UtmTemplate]:
    return UtmTemplate.objects.filter(team_id__in=list(team_ids))


def _check(template: UtmTemplate) -> None:
    template.name = template.name.strip()
    template.full_clean(validate_unique=False, validate_constraints=False)
    if not any(getattr(template, name) for name in UTM_PARAMETERS):
        raise ValidationError({"utm_source": "Fill in at least one UTM parameter."})


def _save(template: UtmTemplate, **kwargs) -> None:
    try:
        with transaction.atomic():
            template.save(**kwargs)
    except IntegrityError:
        raise ValidationError({"name": ValidationError(NAME_TAKEN, code="taken")}) from None


@transaction.atomic
def utm_template_create(*, actor: AbstractBaseUser, team_id: int, name: str, **values: str) -> UtmTemplate:
    access.require(actor, team_id, Role.EDITOR, to="make UTM templates")
    template = UtmTemplate(team_id=team_id, name=name, **values)
    _check(template)
    _save(template)
    audit.record(
        team_id=team_id,
        actor=actor,
        action=Action.UTM_TEMPLATE_CREATED,
        subject=template.name,
        changes={name: [None, value] for name, value in template.values.items() if value},
    )
    return template


@transaction.atomic
def utm_template_update(*, actor: AbstractBaseUser, template: UtmTemplate, **changes: str) -> UtmTemplate:
    access.require(actor, template.team_id, Role.EDITOR, to="change UTM templates")
    before = {"name": template.name, **template.values}
    for name, value in changes.items():
        setattr(template, name, value)
    _check(template)
    after = {"name": template.name, **template.values}
    changed = audit.changes_between(before, after)
    if changed:
        _save(template, update_fields=[*after, "updated_at"])
        audit.record(
            team_id=template.team_id,
            actor=actor,
            action=Action.UTM_TEMPLATE_CHANGED,
            subject=template.name,
            changes=changed,
        )
    return template


@transaction.atomic
def utm_template_delete(*, actor: AbstractBaseUser, template: UtmTemplate) -> None:
    access.require(actor, template.team_id, Role.EDITOR, to="delete UTM templates")
    audit.record(team_id=template.team_id, actor=actor, action=Action.UTM_TEMPLATE_DELETED, subject=template.name)
    template.delete()
