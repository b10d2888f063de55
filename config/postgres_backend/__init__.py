"""Django's PostgreSQL backend with the pooled connection check of config/pool_checks.py."""
