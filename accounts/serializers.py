from __future__ import annotations

from django.core.validators import RegexValidator
from rest_framework import serializers

from server.json_input import StrictCharField

username_validator = RegexValidator(
    r"^[A-Za-z0-9_.-]{3,30}$",
    "Usernames are 3-30 characters: letters, digits, '_', '.' or '-'.",
)


class CredentialsSerializer(serializers.Serializer):
    username = StrictCharField(max_length=30, validators=[username_validator])
    password = StrictCharField(max_length=128, write_only=True, trim_whitespace=False)


class LoginSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=128, write_only=True, trim_whitespace=False)


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    date_joined = serializers.DateTimeField()
    stats = serializers.DictField()
