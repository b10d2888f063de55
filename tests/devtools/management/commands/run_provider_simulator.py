"""``python manage.py run_provider_simulator --port 8100 --latency-mean-seconds 15 --time-scale 0.01``

Every :class:`SimulatorConfig` setting is a flag (``rpm`` → ``--rpm``), plus ``--<fault>-next N``
to force the next N calls into a fault. The same names work on ``POST /_control``. Port 8100 is
the default ``OPENAI_BASE_URL`` of the settings; the first line printed is the URL it listens on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tests.simulator import FAULTS, SimulatorConfig, run_simulator


class Command(BaseCommand):
    help = "Run the OpenAI-compatible provider simulator on a loopback port until SIGTERM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="a loopback address")
        parser.add_argument("--port", type=int, default=8100, help="0 picks a free port (printed)")
        for field in dataclasses.fields(SimulatorConfig):
            parser.add_argument(f"--{field.name.replace('_', '-')}", dest=field.name, default=None)
        for fault in FAULTS:
            parser.add_argument(f"--{fault.replace('_', '-')}-next", dest=f"{fault}_next", type=int, default=0)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        settings = {f.name: options[f.name] for f in dataclasses.fields(SimulatorConfig) if options[f.name] is not None}
        try:
            config = SimulatorConfig().updated(settings)
        except ValueError as error:
            raise CommandError(str(error)) from error
        forced = {fault: options[f"{fault}_next"] for fault in FAULTS if options[f"{fault}_next"]}

        def announce(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        try:
            run_simulator(config, host=host, port=port, forced_faults=forced, announce=announce)
        except ValueError as error:
            raise CommandError(str(error)) from error
