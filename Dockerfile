# The app under daphne. Build: docker compose build; configuration comes from the environment.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY server ./server
COPY games ./games
COPY accounts ./accounts
COPY web ./web
COPY manage.py ./
# collectstatic with DEBUG=0, so it writes the gzipped copies production serves (the build's
# key is only there to start Django; the running image takes SECRET_KEY from its environment).
RUN pip install --no-cache-dir . \
    && DEBUG=0 SECRET_KEY=build-only-collectstatic-key python manage.py collectstatic --noinput

EXPOSE 8000
# Migrate, then serve. Daily challenges are made on the first request of a day if no job ran.
# server.serve: one daphne worker per core when REDIS_URL is set (WEB_WORKERS overrides).
# `exec`: the supervisor replaces the shell as PID 1, so `docker stop`'s SIGTERM reaches it
# (dash does not hand the last command of an && list over by itself).
CMD ["sh", "-c", "python manage.py migrate --noinput && exec python -m server.serve --host 0.0.0.0 --port 8000"]
