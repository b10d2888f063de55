"""Development-only management commands (the provider simulator). Installed by config/settings.py
only when ``DJANGO_DEVELOPMENT=1``: production settings never see these commands or their
test dependencies (aiohttp)."""
