"""Runs in panda-client's own environment: calls its Client functions as a user's script would and prints what
they return as JSON (datetimes as ISO text, job specs as their attributes and files), one call per line of the
JSON list given as the first argument: [["getTaskStatus", [123]], ["getJobStatus", [[1, 2]]], …]."""

import datetime
import json
import sys

from pandaclient import Client


def plain(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if hasattr(value, "_attributes") and hasattr(value, "Files"):  # a JobSpec
        job = {name: plain(getattr(value, name)) for name in value._attributes}
        job["Files"] = [{name: plain(getattr(f, name)) for name in f._attributes} for f in value.Files]
        return job
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


answers = []
for name, arguments in json.loads(sys.argv[1]):
    answers.append(plain(getattr(Client, name)(*arguments)))
print(json.dumps(answers))
