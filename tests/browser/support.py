"""What the browser tests share besides fixtures: the test users' password and logging in."""

from __future__ import annotations

PASSWORD = "browser-test-password"


def log_in(page, base_url: str, user) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")
