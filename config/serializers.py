"""Serializer behaviour every API of the project shares."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Rejects members it does not know, so a typo in a field name is an error, not a default."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class JsonBooleanField(serializers.BooleanField):
    """A JSON ``true`` or ``false`` and nothing else: DRF's own also takes 0, 1, "yes" and
    "on", which the schema's ``boolean`` does not (a client sending 0 would be told nothing)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictSerializerSchema(OpenApiSerializerExtension):
    """The OpenAPI schema says what :class:`StrictSerializer` does: no members beyond its fields.
    (drf-spectacular finds the extension because defining the class registers it.)"""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        # The documented way to get what drf-spectacular would generate without this extension.
        schema: dict[str, Any] = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["additionalProperties"] = False
        return schema


# What str.strip() removes, so what DRF trims: ECMA's \s misses U+001C to U+001F and U+0085.
_TRIMMED = r"\t-\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


class TextFieldSchema(OpenApiSerializerFieldExtension):
    """The request schema of a CharField says what DRF takes: no NUL character, and where blank
    is refused and whitespace trimmed, something besides whitespace. (Neither pattern takes the
    empty string: drf-spectacular gives a field that allows blank its own empty-string
    alternative, in a oneOf that must not match twice.)"""

    target_class = serializers.CharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and schema.get("type") == "string" and not schema.keys() & {"pattern", "format"}:
            if self.target.trim_whitespace and not self.target.allow_blank:
                schema["pattern"] = f"^[^\\u0000]*[^\\u0000{_TRIMMED}][^\\u0000]*$"
            else:
                schema["pattern"] = "^[^\\u0000]+$"
        return schema
