"""API representations. Field names are JEDI/PanDA/CRIC's where the model has them, so API consumers read the
same words as in the real systems."""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from datetime import datetime
from functools import cache

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from brokerage.engine import explain
from brokerage.gdpconfig import REGISTRY, GdpConfigError
from brokerage.gdpconfig.profiles import PROFILE_NAMES
from brokerage.gdpconfig.registry import KEY_PATTERN, InvalidValue, parse_value
from brokerage.models import (
    BrokerageCycle,
    Dataset,
    Decision,
    GdpConfig,
    GdpConfigChange,
    GdpConfigRevision,
    GlobalShare,
    Job,
    PandaQueue,
    Site,
    Task,
    WMCoreElement,
    WMCoreRequest,
    WorkQueue,
)
from brokerage.models.jobs import input_files_parse
from brokerage.params import BIGGEST_ID
from brokerage.selectors.decisions import trace_expiry
from monitor.api.schema import SCENARIO_SCHEMA


class StrictKeys:
    """Request bodies as the schema states them: a key the operation does not know is a 400 naming it (a misspelt
    `gdpconfg` must not be ignored without a word; additionalProperties: false), and numbers and flags in their
    JSON types (DRF would take "5" for 5, 0 for false and 0 for "0", which the schema does not allow)."""

    def get_fields(self):
        # what is sent is what is matched and stored: no trimming (a blank-looking " " is a value, as the schema's
        # strings allow it)
        fields = super().get_fields()
        for field in fields.values():
            for text in (field, getattr(field, "child", None)):
                if isinstance(text, serializers.CharField):
                    text.trim_whitespace = False
        return fields

    def to_internal_value(self, data):
        if isinstance(data, dict):
            writable = {name: field for name, field in self.fields.items() if not field.read_only}
            errors = {
                str(key): [f"unknown field: expected one of {', '.join(sorted(writable))}"]
                for key in data
                if key not in writable
            }
            for name, value in data.items():
                field = writable.get(name)
                if isinstance(field, serializers.CharField) and not isinstance(value, str):
                    errors[name] = ["expected a string"]
                elif (
                    isinstance(field, serializers.ListField)
                    and isinstance(field.child, serializers.CharField)
                    and isinstance(value, list)
                    and not all(isinstance(item, str) for item in value)
                ):
                    errors[name] = ["expected a list of strings"]
                elif isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
                    errors[name] = ["expected true or false"]
                elif isinstance(field, serializers.IntegerField | serializers.FloatField) and (
                    isinstance(value, bool) or not isinstance(value, int | float)
                ):
                    errors[name] = ["expected a number"]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class TaskSerializer(serializers.ModelSerializer):
    workQueue = serializers.CharField(source="workQueue.queue_name", default=None, read_only=True, allow_null=True)

    class Meta:
        model = Task
        fields = [
            "jediTaskID",
            "taskName",
            "status",
            "oldStatus",
            "prodSourceLabel",
            "taskType",
            "processingType",
            "userName",
            "workingGroup",
            "vo",
            "taskPriority",
            "currentPriority",
            "coreCount",
            "ramCount",
            "ramUnit",
            "cpuTime",
            "ioIntensity",
            "workQueue",
            "gshare",
            "nucleus",
            "parent",
            "progress",
            "failureRate",
            "goal",
            "termCondition",
            "eventService",
            "useJumbo",
            "errorDialog",
            "creationDate",
            "modificationTime",
            "stateChangeTime",
        ]


class AdviceSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="Who acts: wait, site, data, task or config.")
    action = serializers.CharField()
    evidence = serializers.CharField(help_text="What the advice rests on: the candidates, the code, the numbers.")
    codes = serializers.ListField(child=serializers.CharField())


class TaskWhySerializer(serializers.Serializer):
    jediTaskID = serializers.IntegerField(source="task.pk")
    status = serializers.CharField(source="task.status")
    why = serializers.ListField(child=serializers.CharField(), help_text="The task page's sentences, in its order.")
    advice = AdviceSerializer(many=True)
    held_by_throttler = serializers.CharField(
        allow_null=True, help_text="The job throttler's reason code when it holds the task's new jobs back now."
    )


class StatusCountSerializer(serializers.Serializer):
    status = serializers.CharField()
    count = serializers.IntegerField()


class TaskDatasetSerializer(serializers.Serializer):
    datasetID = serializers.IntegerField()
    datasetName = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    nFiles = serializers.IntegerField()
    nFilesUsed = serializers.IntegerField(help_text="Inputs only: an output's files are not used.")
    nFilesFinished = serializers.IntegerField()
    nFilesFailed = serializers.IntegerField()
    by_status = StatusCountSerializer(
        many=True,
        allow_null=True,
        help_text="An output or log dataset's files by status, counted now; null for inputs.",
    )


class EventKindSerializer(serializers.Serializer):
    kind = serializers.CharField()
    count = serializers.IntegerField()


class TaskEventsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    by_status = StatusCountSerializer(many=True, help_text="The event machine's order.")
    by_jumbo = serializers.IntegerField(help_text="Ranges jumbo jobs processed.")
    jobs = EventKindSerializer(many=True, help_text="Its ES, ES merge, jumbo and co-jumbo jobs.")


class TaskContentsSerializer(serializers.Serializer):
    jediTaskID = serializers.IntegerField()
    datasets = TaskDatasetSerializer(many=True)
    events = TaskEventsSerializer(allow_null=True, help_text="Null for a task without event ranges.")


class OutputFileSerializer(serializers.Serializer):
    fileID = serializers.IntegerField(source="pk")
    lfn = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    fsize = serializers.IntegerField(allow_null=True)
    GUID = serializers.CharField()
    datasetName = serializers.CharField(source="dataset__datasetName")


class EventServiceStateSerializer(serializers.Serializer):
    sentence = serializers.CharField(help_text="What the job is and where it stands, as its page says it.")
    jumbo_jobs = serializers.ListField(child=serializers.IntegerField(), help_text="The task's active jumbo jobs.")


class JobContentsSerializer(serializers.Serializer):
    PandaID = serializers.IntegerField()
    jobSubStatus = serializers.CharField()
    parameters = serializers.CharField(help_text="Its task's job parameters template filled in; empty without one.")
    outputs = OutputFileSerializer(many=True, help_text="The output and log files it produces (200 at most).")
    event_service = EventServiceStateSerializer(
        allow_null=True, help_text="For an event service, ES merge, jumbo or co-jumbo job; null for any other."
    )


class TimeoutStateSerializer(serializers.Serializer):
    rule = serializers.CharField(allow_null=True)
    deadline = serializers.DateTimeField(allow_null=True)
    left_seconds = serializers.FloatField(allow_null=True)
    timed_out = serializers.BooleanField()
    sentence = serializers.CharField()


class JobSerializer(serializers.ModelSerializer):
    jediTaskID = serializers.IntegerField(source="task_id", read_only=True)
    mergeJob = serializers.IntegerField(
        source="mergeJob_id",
        read_only=True,
        allow_null=True,
        help_text="The PandaID of the merge job that took this pre-merged job's outputs (tasks with mergeOutput).",
    )
    timeout = serializers.SerializerMethodField()
    inputFiles = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "PandaID",
            "jediTaskID",
            "jobsetID",
            "jobStatus",
            "jobSubStatus",
            "computingSite",
            "prodSourceLabel",
            "currentPriority",
            "gshare",
            "resource_type",
            "attemptNr",
            "maxAttempt",
            "isScout",
            "isMerge",
            "mergeJob",
            "eventService",
            "coreCount",
            "minRamCount",
            "nEvents",
            "nInputFiles",
            "randomSeed",
            "creationTime",
            "stateChangeTime",
            "startTime",
            "endTime",
            "pilotErrorCode",
            "pilotErrorDiag",
            "exeErrorCode",
            "exeErrorDiag",
            "taskBufferErrorCode",
            "taskBufferErrorDiag",
            "prodUserName",
            "cloud",
            "computingElement",
            "modificationHost",
            "batchID",
            "homepackage",
            "transformation",
            "cpuConsumptionTime",
            "maxRSS",
            "maxPSS",
            "inputFiles",
            "timeout",
        ]

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"fileID": {"type": "integer"}, "attemptNr": {"type": "integer"}},
            },
            "description": "The input files the job took and the attempt it took each at (kept when the job failed).",
        }
    )
    def get_inputFiles(self, job) -> list[dict]:
        return [{"fileID": file_id, "attemptNr": attempt} for file_id, attempt in input_files_parse(job.inputFiles)]

    @extend_schema_field(TimeoutStateSerializer(allow_null=True))
    def get_timeout(self, job) -> dict | None:
        """The job's timeout state (which rule, deadline, time left), computed for the whole page at once."""
        state = (self.context.get("timeouts") or {}).get(job.pk)
        return TimeoutStateSerializer(state).data if state is not None else None


class DatasetSerializer(serializers.ModelSerializer):
    jediTaskID = serializers.IntegerField(source="task_id", read_only=True)

    class Meta:
        model = Dataset
        fields = [
            "datasetID",
            "jediTaskID",
            "datasetName",
            "type",
            "status",
            "nFiles",
            "nFilesUsed",
            "nFilesFinished",
            "nFilesFailed",
            "nEvents",
            "nEventsUsed",
        ]


class SiteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Site
        fields = ["name", "role", "state", "tier_level", "bareNucleus", "cloud", "country"]


class QueueSerializer(serializers.ModelSerializer):
    site = serializers.CharField(source="site.name", read_only=True)

    class Meta:
        model = PandaQueue
        fields = [
            "name",
            "site",
            "status",
            "type",
            "cloud",
            "corecount",
            "corepower",
            "maxrss",
            "minrss",
            "maxwdir",
            "maxtime",
            "mintime",
            "releases",
            "pledgedcpu",
            "catchall",
            "jobseed",
            "workflow",
            "cric",
        ]


class WorkQueueSerializer(serializers.ModelSerializer):
    partition = serializers.CharField(source="partition.queue_name", default=None, read_only=True, allow_null=True)

    class Meta:
        model = WorkQueue
        fields = [
            "queue_id",
            "queue_name",
            "queue_type",
            "vo",
            "queue_share",
            "queue_order",
            "criteria",
            "variables",
            "partition",
            "is_partition",
            "stretchable",
            "status",
        ]


class GlobalShareSerializer(serializers.ModelSerializer):
    parent = serializers.CharField(source="parent.name", default=None, read_only=True, allow_null=True)
    usage = serializers.SerializerMethodField()

    class Meta:
        model = GlobalShare
        fields = ["name", "value", "parent", "processingtype", "prodsourcelabel", "usage"]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_usage(self, share) -> dict | None:
        """Normalised target, executing/target/queued HS06 and usage (executing / target) of the share now."""
        row = (self.context.get("usage") or {}).get(share.name)
        if row is None:
            return None
        return {
            "normalised": row["normalised"],
            "executing_hs06": row["executing_hs06"],
            "target_hs06": row["target_hs06"],
            "queued_hs06": row["queued_hs06"],
            "usage": row["usage"],
        }


class CycleSerializer(serializers.ModelSerializer):
    # a running cycle has no duration yet: null, and the schema says so
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = BrokerageCycle
        fields = [
            "id",
            "plugin",
            "started",
            "finished",
            "duration_seconds",
            "status",
            "error",
            "worker",
            "n_decisions",
            "n_assigned",
            "n_pending",
            "n_throttled",
            "gdpconfig",
        ]


class DecisionSerializer(serializers.ModelSerializer):
    jediTaskID = serializers.IntegerField(source="task_id", read_only=True, allow_null=True)
    cycle = serializers.IntegerField(source="cycle_id", read_only=True)
    reason_counts = serializers.DictField(
        child=serializers.IntegerField(), read_only=True, help_text="Candidates each reason code removed."
    )
    trace_expires = serializers.SerializerMethodField(
        help_text="When the full trace is (or was) dropped (DECISION_TRACE_DAYS); the row itself stays longer."
    )

    class Meta:
        model = Decision
        fields = [
            "id",
            "cycle",
            "jediTaskID",
            "jobsetID",
            "plugin",
            "created",
            "outcome",
            "chosen",
            "n_candidates",
            "n_passed",
            "primary_reason",
            "message",
            "retry_after_minutes",
            "seed",
            "profile",
            "reason_counts",
            "trace_expires",
        ]

    def get_trace_expires(self, decision) -> datetime:
        return trace_expiry(decision=decision)


class DecisionDetailSerializer(DecisionSerializer):
    trace = serializers.SerializerMethodField()

    class Meta(DecisionSerializer.Meta):
        fields = [*DecisionSerializer.Meta.fields, "trace"]

    @extend_schema_field(serializers.DictField())
    def get_trace(self, decision) -> dict:
        """Candidates with weights and factors, every skipped candidate with its code, filter, the numbers it
        compared and the sentence, skips grouped by reason, and the stages. Once it has expired: `expired` true,
        `expired_on`, and only the counts per reason in `by_reason`."""
        return self.context["trace"]


class GdpConfigParameterSerializer(serializers.Serializer):
    key = serializers.CharField()
    component = serializers.CharField()
    type = serializers.CharField()
    unit = serializers.CharField()
    bounds = serializers.CharField(help_text="The values a number may take, with its unit; empty for other types.")
    default = serializers.CharField()
    effective = serializers.JSONField()
    origin = serializers.CharField()
    overridden = serializers.BooleanField()
    description = serializers.CharField()
    source = serializers.CharField()
    suffix = serializers.CharField(allow_null=True)


@extend_schema_field(
    {
        "type": ["string", "number", "integer", "boolean", "object", "array", "null"],
        "description": "The value in the JSON type of its parameter (`type`): 50 for an int, true for a bool; a "
        "stored text that no longer parses as its type is given as the text.",
    }
)
class StoredValueField(serializers.JSONField):
    """Read and written in the value's own JSON type (an int as a number), so that what a client reads it can write
    back unchanged (issue 50: read as "50", it had to be written as 50), the schema can state each key's type and
    bounds, and a client learns of a wrong type before the row is refused. The row's type is known to the
    serializer, which reads the text into it (GdpConfigSerializer.to_representation)."""


class GdpConfigSerializer(StrictKeys, serializers.ModelSerializer):
    """A stored gdpconfig row; writes go through the same validation as the admin (type, bounds, known key).

    Writing: a registered key (custom parameters are kept in the admin) with `value` in the JSON type of its
    parameter; a key is never trimmed or guessed. `key` and `value` go together: a value is only meaningful for
    the key it is typed by."""

    comment = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=GdpConfigChange._meta.get_field("comment").max_length,
    )
    value = StoredValueField()
    key = serializers.CharField(max_length=64, trim_whitespace=False)

    class Meta:
        model = GdpConfig
        fields = ["id", "app", "component", "key", "vo", "value", "type", "descr", "is_custom", "modified", "comment"]
        read_only_fields = ["id", "modified", "is_custom"]
        extra_kwargs = {
            "app": {"required": False},
            "component": {"required": False},
            "type": {"required": False},
            "vo": {"trim_whitespace": False},
        }
        # gdpconfig_save finds the row of the same (app, component, key, vo) and updates it
        validators = []

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # a row stored before its type was tightened keeps its text, which the admin flags
        with contextlib.suppress(InvalidValue):
            data["value"] = parse_value(instance.key, instance.type, instance.value)
        return data

    def validate_key(self, key: str) -> str:
        if not KEY_PATTERN.match(key) or REGISTRY.find(key) is None:
            raise serializers.ValidationError(
                f"unknown gdpconfig parameter '{key}' (the API writes registered parameters; custom ones are kept "
                "in the admin)"
            )
        return key

    def validate(self, data):
        if ("key" in data) != ("value" in data):
            missing = "value" if "key" in data else "key"
            raise serializers.ValidationError({missing: ["key and value go together: give both"]})
        if "value" in data:
            kind = REGISTRY.find(data["key"])[0].value_type
            if not is_native(data["value"], kind):
                raise serializers.ValidationError({"value": [f"expected a JSON {native_name(kind)} for {data['key']}"]})
        return data


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@cache
def _scenario_validator():
    """docs/scenario.schema.json, the schema the API's documentation embeds for the preview's scenario: every
    section is checked, whichever plugin reads it, so that the API accepts what its schema says and no more."""
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(lambda value: not isinstance(value, str) or bool(RFC3339.match(value)))
    schema = json.loads(SCENARIO_SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=checker)


def scenario_schema_problem(scenario: dict) -> str | None:
    """The first place where a scenario breaks docs/scenario.schema.json, as $.path: message; None when none."""
    error = next(iter(sorted(_scenario_validator().iter_errors(scenario), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return None
    path = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties":
        # a misspelt key ("gdpconfg", a task's "corecount") was taken silently and ignored (issue 50): it is refused,
        # with the name it most likely meant
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6) or [
                k for k in known if k.lower() == name.lower()
            ]
            hints.append(f"'{name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        message = f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(hints)}"
    return f"{path}: {message}"[:500]


NATIVE_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}


def is_native(value: object, kind: str) -> bool:
    """Whether a JSON value has the type of a gdpconfig parameter (true is not the number 1 here)."""
    allowed = NATIVE_TYPES.get(kind)
    if allowed is None:
        return True
    if kind == "int" and isinstance(value, float):  # JSON's 5.0 is a whole number
        return value.is_integer()
    return isinstance(value, allowed) and (kind == "bool" or not isinstance(value, bool))


def native_name(kind: str) -> str:
    return {"bool": "boolean", "int": "whole number", "float": "number", "str": "string"}.get(kind, kind)


def native_overrides(overrides: dict) -> dict:
    """Overrides through the API carry each value in its own JSON type (an int as a number, a flag as true or
    false), as the schema's GdpConfigOverrides says; the registry then checks bounds and choices."""
    errors = {}
    for key, value in overrides.items():
        found = REGISTRY.find(key)
        if found is None:
            errors[key] = [f"unknown gdpconfig parameter '{key}'"]
        elif not is_native(value, found[0].value_type):
            errors[key] = [f"expected a JSON {native_name(found[0].value_type)} for {key}"]
        else:
            try:  # bounds and choices, as the schema states them
                found[0].parse(value, key)
            except GdpConfigError as error:
                errors[key] = [str(error)]
    if errors:
        raise serializers.ValidationError(errors)
    return overrides


class GdpConfigRevisionSerializer(serializers.ModelSerializer):
    """A gdpconfig revision: the whole stored configuration after one change, with who, when and why."""

    changes = serializers.SerializerMethodField()

    class Meta:
        model = GdpConfigRevision
        fields = ["id", "created", "action", "summary", "comment", "username", "digest", "changes"]

    def get_changes(self, revision) -> list[dict]:
        return [
            {"key": c.key, "vo": c.vo, "action": c.action, "old_value": c.old_value, "new_value": c.new_value}
            for c in revision.changes.all()
        ]


class GdpConfigRevisionDetailSerializer(GdpConfigRevisionSerializer):
    """One revision with its rows and its difference from another (`against`, else the revision before it)."""

    rows = serializers.ListField(child=serializers.DictField(), read_only=True)
    against = serializers.IntegerField(read_only=True, allow_null=True)
    difference = serializers.ListField(child=serializers.DictField(), read_only=True)

    class Meta(GdpConfigRevisionSerializer.Meta):
        fields = [*GdpConfigRevisionSerializer.Meta.fields, "rows", "against", "difference"]


class RestoreRequestSerializer(StrictKeys, serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=256, default="")


class ReplayRequestSerializer(StrictKeys, serializers.Serializer):
    """A stored decision run again (issue 34): as it was, or with changes."""

    cycle = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=BIGGEST_ID,
        help_text="Decide over this cycle's grid side instead of the decision's own.",
    )
    profile = serializers.ChoiceField(
        choices=list(PROFILE_NAMES), required=False, help_text="Another gdpconfig profile than the cycle's."
    )
    gdpconfig = serializers.DictField(
        required=False, default=dict, help_text="KEY → value over the cycle's resolved parameters."
    )

    def validate_gdpconfig(self, overrides: dict) -> dict:
        return native_overrides(overrides)


class DiracReplayRequestSerializer(ReplayRequestSerializer):
    """A stored DIRAC matching request run again (issue 34): as it was, or under another profile or matching
    parameters (a request is not part of a cycle)."""

    cycle = None


class WhatIfRequestSerializer(ReplayRequestSerializer):
    """Past decisions run again with changes (issue 34): a cycle's (in the path), or a time window's."""

    cycle = None
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=20000, default=2000, help_text="At most this many decisions."
    )
    since = serializers.DateTimeField(required=False, help_text="Window what-if: cycles started from this time.")
    until = serializers.DateTimeField(required=False, help_text="Window what-if: cycles started before this time.")
    plugin = serializers.ChoiceField(
        choices=["atlas_prod_task", "atlas_prod_job", "atlas_anal_job"],
        required=False,
        help_text="Window what-if: only this plugin's cycles.",
    )


class PreviewRequestSerializer(StrictKeys, serializers.Serializer):
    """Either a whole scenario, or a task whose current snapshot is used, with gdpconfig overrides."""

    scenario = serializers.DictField(required=False, help_text="A scenario (docs/scenario.md); nothing is stored.")
    task = serializers.IntegerField(required=False, min_value=1, help_text="jediTaskID: brokered from its snapshot.")
    plugin = serializers.ChoiceField(
        choices=["atlas_prod_task", "atlas_prod_job", "atlas_anal_job"],
        required=False,
        help_text="With `task`: which brokerage (default: task brokerage for a task waiting for a nucleus, job "
        "brokerage otherwise).",
    )
    gdpconfig = serializers.DictField(
        required=False, default=dict, help_text="KEY → value overriding the effective parameters."
    )
    profile = serializers.ChoiceField(
        choices=list(PROFILE_NAMES),
        required=False,
        help_text="Broker under this gdpconfig profile instead of the live one (or the scenario's own); stored "
        "rows and `gdpconfig` still override its values.",
    )

    def validate_gdpconfig(self, overrides: dict) -> dict:
        return native_overrides(overrides)

    def validate_scenario(self, scenario: dict) -> dict:
        problem = scenario_schema_problem(scenario)
        if problem is not None:
            raise serializers.ValidationError(problem)
        if isinstance(scenario.get("gdpconfig"), dict):
            try:
                native_overrides(scenario["gdpconfig"])
            except serializers.ValidationError as error:
                raise serializers.ValidationError({"gdpconfig": error.detail}) from None
        return scenario

    def validate(self, data):
        if ("scenario" in data) == ("task" in data):
            raise serializers.ValidationError("give either a scenario or a task, not both and not neither")
        return data


class DiracResourceSerializer(StrictKeys, serializers.Serializer):
    """What a pilot presents to the Matcher (seed 003)."""

    setup = serializers.CharField(max_length=64)
    cpuTime = serializers.IntegerField(min_value=0, max_value=10**9, help_text="CPU seconds the resource offers.")
    site = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    gridCE = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    platform = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    pilotType = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    ownerGroup = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="A private pilot's group."
    )
    ownerDN = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    jobSharing = serializers.BooleanField(required=False, default=False)
    # keys DIRAC v9 matches (TaskQueueDB.__generateTQMatchSQL, Matcher._getResourceDict)
    jobType = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    requiredTags = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        default=list,
        help_text="Tags a job must ask for; they count as offered too.",
    )
    bannedSites = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    bannedGridCEs = serializers.ListField(child=serializers.CharField(max_length=255), required=False, default=list)
    bannedPlatforms = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    bannedJobTypes = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    bannedTags = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    maxRAM = serializers.IntegerField(
        required=False, min_value=0, max_value=10**9, help_text="MB the slot offers; absent: no RAM condition."
    )
    vo = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="A generic pilot's VO."
    )
    inSiteMask = serializers.BooleanField(
        required=False, default=True, help_text="False: the site is outside the mask and takes Test jobs only."
    )
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="Explain without claiming a job (needs only read access)."
    )


class DiracTaskQueueSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ownerDN = serializers.CharField()
    ownerGroup = serializers.CharField()
    setup = serializers.CharField()
    cpuTime = serializers.IntegerField()
    priority = serializers.FloatField()
    minRAM = serializers.IntegerField()
    maxRAM = serializers.IntegerField()
    waiting = serializers.IntegerField()
    requirements = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class DiracRuleFailureSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="The rule that fails (a reason code).")
    detail = serializers.DictField(help_text="The values compared.")
    sentence = serializers.CharField()


class DiracAskerSerializer(serializers.Serializer):
    """A site and CE that asked for work lately, tested against the job's task queue."""

    site = serializers.CharField()
    gridCE = serializers.CharField()
    at = serializers.DateTimeField(help_text="Its latest request.")
    match_record = serializers.IntegerField(help_text="That request's id (its monitor page: /dirac/matches/<id>/).")
    matched = serializers.BooleanField(help_text="Whether that request got a job (of any task queue).")
    whole = serializers.BooleanField(help_text="False: stored before resources were kept whole (site, CPU only).")
    passes = serializers.BooleanField(help_text="Whether the job's task queue passes every rule for it.")
    failed = DiracRuleFailureSerializer(many=True)


class DiracPrioritySerializer(serializers.Serializer):
    """A task queue's priority and the numbers it comes from (null terms: no waiting job left)."""

    stored = serializers.FloatField(help_text="What the Matcher draws with.")
    terms = serializers.DictField(allow_null=True, help_text="group_share, entities, entity_share, average, …")
    current = serializers.BooleanField(required=False, help_text="Whether the stored value equals the terms' result.")


class DiracJobExplainedSerializer(serializers.Serializer):
    """Why a DIRAC job is (not) matched: its place, its task queue's priority and rules per site/CE."""

    jobID = serializers.IntegerField()
    status = serializers.CharField()
    minorStatus = serializers.CharField()
    userPriority = serializers.IntegerField()
    owner = serializers.CharField()
    ownerGroup = serializers.CharField()
    site = serializers.CharField()
    task_queue = serializers.IntegerField(allow_null=True)
    requirements = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    priority = DiracPrioritySerializer(allow_null=True)
    ahead = serializers.IntegerField(
        allow_null=True, help_text="Waiting jobs of its task queue and user priority with a smaller id."
    )
    askers = DiracAskerSerializer(many=True)


class WMCoreRequestSerializer(serializers.ModelSerializer):
    class Meta:
        model = WMCoreRequest
        fields = [
            "RequestName",
            "RequestStatus",
            "RequestType",
            "RequestPriority",
            "Team",
            "TaskType",
            "InputDataset",
            "MCPileup",
            "SiteWhitelist",
            "SiteBlacklist",
            "TrustSitelists",
            "TrustPUSitelists",
            "created",
            "status_time",
        ]


class WMCoreElementSerializer(serializers.ModelSerializer):
    """A work-queue element with why it waits, in the shifter's words (`stuck_sentence`)."""

    queue = serializers.CharField(source="queue.name", read_only=True)
    request = serializers.CharField(source="request.RequestName", read_only=True)
    ChildQueue = serializers.CharField(source="ChildQueue.name", read_only=True, default=None, allow_null=True)
    stuck_sentence = serializers.SerializerMethodField()

    class Meta:
        model = WMCoreElement
        fields = [
            "id",
            "element_id",
            "queue",
            "database",
            "request",
            "Status",
            "Priority",
            "Jobs",
            "Inputs",
            "ParentData",
            "PileupData",
            "SiteWhitelist",
            "SiteBlacklist",
            "NoInputUpdate",
            "NoPileupUpdate",
            "ParentFlag",
            "blowupFactor",
            "ChildQueue",
            "site",
            "CreationTime",
            "UpdateTime",
            "stuck_reason",
            "stuck_detail",
            "stuck_since",
            "stuck_sentence",
        ]

    def get_stuck_sentence(self, element: WMCoreElement) -> str:
        return explain(element.stuck_reason, element.stuck_detail) if element.stuck_reason else ""
