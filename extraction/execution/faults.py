"""Named crash points for fault-injection tests (OPS-5).

``FAULT_INJECTION=after_provider_response,relay_after_confirm`` makes a process kill itself
with SIGKILL when it reaches one of those points — the real signal, so nothing in the process
gets to clean up. Empty (the default) outside the fault tests.
"""

from __future__ import annotations

import logging
import os
import signal

from django.conf import settings

logger = logging.getLogger(__name__)


def fault_point(name: str) -> None:
    if name in settings.FAULT_INJECTION_POINTS:
        logger.error("fault injection: SIGKILL at %s", name, extra={"fault_point": name})
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
