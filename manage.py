#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    from server import worker

    try:
        worker.check_settings()  # first: daphne, an installed app, reads ASGI_THREADS on import
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:  # a setting refused by name (server.env): its line
        from server.env import refusal_line

        sys.exit(refusal_line(exc))


if __name__ == "__main__":
    main()
