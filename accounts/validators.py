"""Password rules beyond Django's own."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class NotOnlySpacesValidator:
    """Django's validators let through twelve spaces (long enough, not digits, not on the
    common list): a password a shoulder-surfer reads off the keystrokes. Spaces inside a
    password are fine; a password of nothing else is not."""

    def validate(self, password: str, user: object = None) -> None:
        if password and not password.strip():
            raise ValidationError("This password is only spaces.", code="password_only_spaces")

    def get_help_text(self) -> str:
        return "Your password cannot be only spaces."
