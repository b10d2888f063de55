from __future__ import annotations

import shlex
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from extraction.providers.local import server, weights
from extraction.providers.local.engine import EngineError


class Command(BaseCommand):
    help = (
        "The local model server: 'install' builds llama-server and installs verified weights (both cached "
        "in LOCAL_MODEL_HOME), 'verify' checks the weights, 'serve' runs the server on loopback and restarts "
        "it if it exits, 'command' prints its command line."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["install", "verify", "serve", "command"])

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            config = server.ServerConfig.from_settings(settings.LOCAL_MODEL)
            if action == "install":
                server.install(config, log=lambda message: self.stderr.write(f"[local-model] {message}"))
            elif action == "verify":
                weights.verify(config.weights, config.model_path)
                self.stdout.write(f"{config.model_path}: {config.weights.size} bytes, sha256 {config.weights.sha256}")
            elif action == "command":
                self.stdout.write(shlex.join(server.command(config)))
            else:
                server.supervise(config)
        except (weights.WeightsError, EngineError, ValueError) as error:
            raise CommandError(str(error)) from error
