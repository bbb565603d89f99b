"""A detector the Ray tests plant in workers: it logs each batch, and can be killed or fail.

Imported by name on the workers (the test cluster's PYTHONPATH holds this folder).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from realitycheck import Detector


@dataclass(frozen=True, kw_only=True)
class Logged(Detector):
    """Response length; appends ``{"pid", "ids"}`` to ``log`` for every batch it scores.

    ``victim``: the first batch to create this file writes its pid there and sleeps
    (for the test to kill its worker). ``fail_on``: the batch holding this response
    id raises while the file ``fail_flag`` exists. ``pause``: seconds each batch sleeps.
    """

    log: str = ""
    victim: str = ""
    fail_on: str = ""
    fail_flag: str = ""
    pause: float = 0.0

    def score(self, responses, run):
        ids = [r.response_id for r in responses]
        if self.victim:
            try:
                fd = os.open(self.victim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                time.sleep(120)
        if self.fail_flag and os.path.exists(self.fail_flag) and self.fail_on in ids:
            raise RuntimeError("planned failure")
        time.sleep(self.pause)
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "ids": ids}) + "\n")
        return [self._score(r, float(len(r.text))) for r in responses]


Logged.name = "ray_logged"
