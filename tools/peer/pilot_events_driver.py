"""Drives the REAL event-range calls of pilot 3.7.0.36 (pilot/eventservice/communicationmanager/plugins/
pandacommunicator.py: PandaCommunicator.get_events and update_events, over pilot/util/https.py's curl with the
pilot's token) against a monitor, as an event service pilot makes them while its payload runs.

Usage:  python pilot_events_driver.py PILOT_SOURCE SERVER PANDAID JOBSETID TASKID  (the pilot's environment: its
configuration and token) → a JSON object on stdout: {"got": the ranges received, "updated": the update answer}. It
asks for 2 ranges, reports the first failed (version 0, one range) and the second finished (version 1, in a zip).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    source, server, panda_id, jobset_id, task_id = sys.argv[1:6]
    sys.path.insert(0, source)
    os.environ["PANDA_SERVER_URL"] = server
    # where pilot/util/https.py writes each request's curl configuration (the pilot sets it when it starts)
    os.environ.setdefault("PILOT_HOME", os.getcwd())
    from pilot.eventservice.communicationmanager.communicationmanager import CommunicationRequest
    from pilot.eventservice.communicationmanager.plugins.pandacommunicator import PandaCommunicator
    from pilot.util import https

    https.https_setup(None, "3.7.0.36")
    communicator = PandaCommunicator()
    asked = CommunicationRequest(
        {"request_type": CommunicationRequest.RequestType.RequestEvents, "num_ranges": 2,
         "post_hook": None, "jobid": panda_id, "jobsetid": jobset_id, "taskid": task_id}
    )  # fmt: skip
    got = communicator.get_events(asked)
    ranges = got.content or []
    result = {"status": got.status, "got": ranges}
    if len(ranges) == 2:
        failed = {
            "version": 0,
            "eventRanges": json.dumps(
                {"eventRangeID": ranges[0]["eventRangeID"], "eventStatus": "failed", "errorCode": 1220}
            ),
        }
        finished = {
            "version": 1,
            "eventRanges": json.dumps(
                [
                    {
                        "zipFile": {"numEvents": 1, "lfn": "events.zip"},
                        "eventRanges": [{"eventRangeID": ranges[1]["eventRangeID"], "eventStatus": "finished"}],
                    }
                ]
            ),
        }
        answers = []
        for message in (failed, finished):
            update = CommunicationRequest(
                {"request_type": CommunicationRequest.RequestType.UpdateEvents, "update_events": message,
                 "post_hook": None}
            )  # fmt: skip
            answers.append(communicator.update_events(update).content)
        result["updated"] = answers
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
