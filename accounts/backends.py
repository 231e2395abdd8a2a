from django.contrib.auth.backends import ModelBackend


class CaseInsensitiveModelBackend(ModelBackend):
    """ModelBackend whose lookup goes through the manager's case-insensitive natural key."""
