"""Command arguments and replies shared by every `ceph sla` command.

No `from __future__ import annotations` here: ceph-mgr reads the command
handlers' annotations (these enums) at import time to build their signatures.
"""
import enum
import json
from typing import Any

from mgr_module import HandleCommandResult


class OutputFormat(str, enum.Enum):
    PLAIN = "plain"
    JSON = "json"
    JSON_PRETTY = "json-pretty"


class ModeArg(str, enum.Enum):
    AUTO = "auto"
    ISOLATED = "isolated"
    SHARED = "shared"


def reply(fmt: OutputFormat, data: Any, text: str) -> HandleCommandResult:
    if fmt is OutputFormat.JSON:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True), "")
    if fmt is OutputFormat.JSON_PRETTY:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True, indent=2), "")
    return HandleCommandResult(0, text, "")


def refuse(code: int, message: str) -> HandleCommandResult:
    """A refusal: the negative errno and a message that names the problem and
    what to do about it with this module's commands or Ceph's."""
    return HandleCommandResult(-code, "", message)
