"""Named crash points for fault-injection tests (OPS-5).

``FAULT_INJECTION=after_provider_response,relay_after_confirm`` makes a process kill itself
with SIGKILL when it reaches one of those points — the real signal, so nothing in the process
gets to clean up. Empty (the default) outside the fault tests. The points:

- ``after_provider_response`` (``attempt.execute_attempt``): the model answered, nothing of it is
  recorded yet;
- ``completions_before_write`` (``completions.write_batch``): the model answered and the
  validation judged; the completion waits in the process's batcher, not written yet;
- ``take_ins_before_write`` (``take_ins.take_in_batch``): the ingress holds a batch of requested
  messages, none written or acked;
- ``ingress_after_commit`` (``tasks.ingest_requested``): the inbox row and READY are committed,
  the message is not acked yet;
- ``relay_after_confirm`` (``OutboxRelay.relay_once``): the broker confirmed the batch, the rows
  are not marked published yet.

The fault tests and ``tests/acceptance/faults.py`` (which arms each under load and restarts what died) use them.
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
