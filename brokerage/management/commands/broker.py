"""Runs a brokerage plugin offline on a scenario file and prints the decision. Touches no database."""

import json

from django.core.management.base import BaseCommand, CommandError

from brokerage.adapters.dirac import cpu_segments as dirac_cpu_segments
from brokerage.adapters.dirac import dirac_groups_data
from brokerage.engine import ScenarioError, UnknownPlugin, parse_scenario
from brokerage.engine.core.report import format_decision
from brokerage.gdpconfig.profiles import PROFILE_NAMES
from brokerage.jsonsafe import UnsafeJson, check_safe
from brokerage.management.jsonfile import read_json_argument
from brokerage.plugins import plugin_registry


class Command(BaseCommand):
    help = "Run a brokerage plugin on a scenario file (docs/scenario.md) and print the decision."
    requires_system_checks = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("file", help="scenario JSON file, or - for standard input")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print the decision as JSON (SCENARIO.md output)"
        )
        parser.add_argument("--plugin", help="run this plugin instead of the scenario's own")
        parser.add_argument(
            "--profile",
            choices=PROFILE_NAMES,
            help="gdpconfig profile instead of the scenario's own (seed: the seeds; panda: panda-server 1.0.4)",
        )
        parser.add_argument(
            "--without",
            action="append",
            default=[],
            metavar="FILTER",
            help="switch a filter off (by name; repeatable) to see what it removes",
        )

    def fail(self, message: str):
        raise CommandError(message, returncode=2)

    def handle(
        self,
        *args,
        file: str,
        as_json: bool,
        plugin: str | None,
        profile: str | None,
        without: list[str],
        **options,
    ):
        source, data = read_json_argument(file)
        try:
            check_safe(data, path="$")
        except UnsafeJson as error:
            self.fail(f"{source}: {error}")
        if profile and isinstance(data, dict):
            data = {**data, "profile": profile}
        if isinstance(data, dict) and (plugin or data.get("plugin")) == "dirac_match":
            # this installation's segments (DIRAC_CPU_SEGMENTS) and groups (DIRAC_GROUPS), as the live matcher
            # uses them, unless the scenario names its own
            installation = {"cpu_segments": list(dirac_cpu_segments()), "groups": dirac_groups_data()}
            data = {**installation, **data}
        try:
            scenario = parse_scenario(data, plugin=plugin)
            plugin_class = plugin_registry().get(scenario.plugin)
        except ScenarioError as error:
            self.fail(f"{source}: {error}")
        except UnknownPlugin as error:
            self.fail(f"{source}: $.plugin: {error}")
        try:
            broker = plugin_class(disabled_filters=frozenset(without))
        except ValueError as error:
            self.fail(f"--without: {error}")
        try:
            decision = broker.decide(scenario)
        except ScenarioError as error:  # plugin-specific sections are read by the plugin itself
            self.fail(f"{source}: {error}")
        if as_json:
            self.stdout.write(json.dumps(decision.to_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(format_decision(decision))
