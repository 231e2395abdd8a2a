from __future__ import annotations

from django.core.validators import RegexValidator
from rest_framework import serializers

from games.api.serializers import PlayerStatsSerializer
from server.json_input import StrictCharField

# The length and the characters are checked apart, each with its own message: a regex that
# also checked the length repeated "no more than 30 characters" beside its own for a long name.
username_validator = RegexValidator(
    r"^[A-Za-z0-9_.-]*$", "Usernames use letters, digits, '_', '.' or '-' only."
)
_USERNAME_LENGTH = "Usernames are 3-30 characters."


class CredentialsSerializer(serializers.Serializer):
    username = StrictCharField(
        min_length=3,
        max_length=30,
        validators=[username_validator],
        error_messages={"min_length": _USERNAME_LENGTH, "max_length": _USERNAME_LENGTH},
    )
    # Judged by Django's password validators once the body is read (services.register_user):
    # a short one is `weak_password`, which says why, not `invalid`; the empty one too.
    password = StrictCharField(
        max_length=128,
        write_only=True,
        trim_whitespace=False,
        allow_blank=True,
        help_text="At least 8 characters, not all digits, not only spaces, not a common "
        "password and not like the username: else 400 `weak_password`, which says which.",
    )


class LoginSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=128, write_only=True, trim_whitespace=False)


class PasswordChangeSerializer(serializers.Serializer):
    password = StrictCharField(
        max_length=128,
        write_only=True,
        trim_whitespace=False,
        help_text="The current password: else 400 `invalid`, and nothing changes.",
    )
    new_password = StrictCharField(
        max_length=128,
        write_only=True,
        trim_whitespace=False,
        allow_blank=True,
        help_text=CredentialsSerializer().fields["password"].help_text,
    )


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class SessionSignedInSerializer(serializers.Serializer):
    username = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    date_joined = serializers.DateTimeField()
    stats = PlayerStatsSerializer()
