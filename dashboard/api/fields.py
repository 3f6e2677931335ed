"""Fields that take JSON as its schema says: a string where a string is
documented, a boolean for a boolean, an integer for an integer. DRF's own
fields would also take `"true"` or `1` for a boolean and `"302"` for an
integer, which a client that sends them has most likely got wrong."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from rest_framework import serializers

from slingshot.text import check_storable, shown


def refuse_unstorable(data) -> None:
    """A string holding a NUL or a lone surrogate is refused before a field's
    own checks, which would quote it or encode it."""
    try:
        check_storable(data)
    except DjangoValidationError as exc:
        raise serializers.ValidationError(exc.messages, code=exc.code) from None


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Not a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        refuse_unstorable(data)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    """A choice given in the type of the choices (302, not "302")."""

    def to_internal_value(self, data):
        if not any(type(data) is type(choice) and data == choice for choice in self.choices):
            if isinstance(data, str):
                refuse_unstorable(data)
                data = shown(data)
            self.fail("invalid_choice", input=data)
        return data


class StrictListField(serializers.ListField):
    child = StrictCharField()


class StrictJSONMixin:
    """For a ModelSerializer: its fields made from the model take JSON as
    the schema says, and a field it does not have is a 400 naming it."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.BooleanField: StrictBooleanField,
        models.IntegerField: StrictIntegerField,
        models.PositiveSmallIntegerField: StrictIntegerField,
        models.PositiveIntegerField: StrictIntegerField,
    }
    serializer_choice_field = StrictChoiceField

    def build_field(self, field_name, info, model_class, nested_depth):
        field_class, kwargs = super().build_field(field_name, info, model_class, nested_depth)
        if field_class is serializers.ListField:
            field_class = StrictListField
            kwargs["child"] = StrictCharField(
                **{
                    key: value
                    for key, value in kwargs.pop("child")._kwargs.items()
                    if key in ("max_length", "min_length", "allow_blank")
                }
            )
        return field_class, kwargs

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - {name for name, field in self.fields.items() if not field.read_only})
            if unknown:
                raise serializers.ValidationError({shown(name): ["Not a field of this resource."] for name in unknown})
        return super().to_internal_value(data)
