"""JSON Schemas the backend tests send, shared by the fake-server, replay and live tests."""

from __future__ import annotations

import json

JUDGE_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "verdict": {"type": "string", "enum": ["correct", "incorrect"]},
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    },
    sort_keys=True,
)
"""The schema a judge sends (a reason and a verdict), as the replies were recorded with."""
