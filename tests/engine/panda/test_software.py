"""Software and hardware matching (seed 000): architectures, CPU and GPU specs, containers, releases."""

import json

import pytest

from brokerage.engine.panda.software import (
    ArchitectureError,
    Constraint,
    TaskSoftware,
    container_check,
    cpu_check,
    gpu_check,
    parse_architecture,
    release_check,
    software_check,
    split_release,
    task_cpu,
)

# seed 000's published example (AGLT2), with its CPU and GPU entries
AGLT2 = {
    "cmtconfigs": [
        "x86_64-centos7-gcc62-opt",
        "x86_64-centos7-gcc8-opt",
        "x86_64-slc6-gcc49-opt",
        "x86_64-slc6-gcc62-opt",
        "x86_64-slc6-gcc8-opt",
    ],
    "containers": ["any", "/cvmfs"],
    "cvmfs": ["atlas", "nightlies"],
    "architectures": [
        {"arch": ["x86_64"], "instr": ["avx2"], "type": "cpu", "vendor": ["intel", "excl"]},
        {"type": "gpu", "vendor": ["nvidia", "excl"], "model": ["kt100"], "version": "11.0.3"},
    ],
    "tags": [
        {
            "cmtconfig": "x86_64-slc6-gcc62-opt",
            "container_name": "",
            "project": "AthDerivation",
            "release": "21.2.2.0",
            "sources": [],
            "tag": "VO-atlas-AthDerivation-21.2.2.0-x86_64-slc6-gcc62-opt",
        },
        {
            "cmtconfig": "x86_64-slc6-gcc62-opt",
            "container_name": "",
            "project": "Athena",
            "release": "21.0.38",
            "sources": [],
            "tag": "VO-atlas-Athena-21.0.38-x86_64-slc6-gcc62-opt",
        },
    ],
}

A100_40 = {
    "vendor": "NVIDIA",
    "model": "NVIDIA A100-SXM4-40GB",
    "vram": 40960,
    "microarchitecture": "Ampere",
    "version": "12.2",
    "driver_version": "575.57.08",
}
A100_80 = {**A100_40, "model": "NVIDIA A100-SXM4-80GB", "vram": 81920}
V100 = {
    "vendor": "NVIDIA",
    "model": "Tesla V100S-PCIE-32GB",
    "vram": 32768,
    "microarchitecture": "Volta",
    "version": "11.8",
    "driver_version": "535.104.05",
}
P100 = {
    "vendor": "NVIDIA",
    "model": "Tesla P100-PCIE-16GB",
    "vram": 16384,
    "microarchitecture": "Pascal",
    "version": "11.4",
    "driver_version": "470.82.01",
}
GPU_QUEUE = [{"type": "gpu", "vendor": ["nvidia"]}]


class TestArchitectureStrings:
    def test_old_format_all_parts(self):
        arch = parse_architecture("x86_64-el9-gcc13-opt@el9+registry/el9:latest#x86_64-intel-avx2&nvidia-A100")
        assert arch.sw_platform == "x86_64-el9-gcc13-opt"
        assert arch.base_platform == "el9+registry/el9:latest"
        assert (arch.cpu.arch, arch.cpu.vendor, arch.cpu.instr) == ("x86_64", "intel", "avx2")
        assert (arch.gpu.vendor, arch.gpu.model) == ("nvidia", "A100")

    def test_cpu_defaults_to_the_first_part_of_sw_platform(self):
        assert task_cpu(parse_architecture("aarch64-el9-gcc13-opt")).arch == "aarch64"
        assert task_cpu(parse_architecture("")) is None

    def test_regexp_cpu(self):
        assert parse_architecture("#(x86_64|aarch64)").cpu.arch == "(x86_64|aarch64)"

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("#&nvidia", "nvidia"),
            ("#&nvidia:vram>=40960", "nvidia:vram>=40960"),
            ("#&nvidia:vram==15360", "nvidia:vram==15360"),
            ("#&nvidia:uarch=Ampere:cuda>=12.0", "nvidia:version>=12.0:uarch=Ampere"),
            (
                "#&nvidia:model=.*A100.*:vram>=40960:driver>=575.0",
                "nvidia:model=.*A100.*:vram>=40960:driver_version>=575.0",
            ),
            ("#&nvidia:model!=.*P100.*", "nvidia:model!=.*P100.*"),
            ("#&nvidia:model!=.*(P100|V100).*", "nvidia:model!=.*(P100|V100).*"),
            (
                "#&nvidia:model=.*A100.*:vram==81920:cuda>=12.0:driver>=575.0",
                "nvidia:model=.*A100.*:vram==81920:version>=12.0:driver_version>=575.0",
            ),
        ],
    )
    def test_every_shorthand_example_of_the_seed(self, text, expected):
        assert parse_architecture(text).gpu.describe() == expected

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ({"vendor": "nvidia", "vram": ">=40960", "version": ">=12.0"}, "nvidia:vram>=40960:version>=12.0"),
            (
                {"vendor": "nvidia", "model": ".*A100.*", "microarchitecture": "Ampere", "driver_version": ">=575.0"},
                "nvidia:model=.*A100.*:driver_version>=575.0:uarch=Ampere",
            ),
            (
                {"vendor": "nvidia", "model": {"pattern": ".*P100.*", "excl": True}, "vram": ">=40960"},
                "nvidia:model!=.*P100.*:vram>=40960",
            ),
            (
                {"vendor": "nvidia", "model": {"pattern": ".*(P100|V100).*", "excl": True}},
                "nvidia:model!=.*(P100|V100).*",
            ),
        ],
    )
    def test_every_json_example_of_the_seed(self, spec, expected):
        assert parse_architecture(json.dumps({"gpu_spec": spec})).gpu.describe() == expected

    def test_json_with_cpu_specs_and_platform(self):
        arch = parse_architecture(
            json.dumps(
                {
                    "sw_platform": "x86_64-el9-gcc13-opt",
                    "base_platform": "el9",
                    "cpu_specs": [{"arch": ["x86_64"], "vendor": ["amd"], "instr": ["avx512"], "type": "cpu"}],
                }
            )
        )
        assert (arch.sw_platform, arch.base_platform, arch.cpu.vendor, arch.gpu) == (
            "x86_64-el9-gcc13-opt",
            "el9",
            "amd",
            None,
        )

    @pytest.mark.parametrize("bad", ["#&nvidia:vram~40960", "#&nvidia:colour=green", "{not json"])
    def test_unreadable_requirements_are_errors(self, bad):
        with pytest.raises(ArchitectureError):
            parse_architecture(bad)

    def test_parsing_is_cached_per_distinct_string(self):
        parse_architecture.cache_clear()
        for _ in range(50):
            parse_architecture("x86_64-el9-gcc13-opt#&nvidia:vram>=40960")
        assert parse_architecture.cache_info().misses == 1


class TestConstraints:
    @pytest.mark.parametrize(
        ("text", "actual", "numeric", "holds"),
        [
            (">=40960", 40960, True, True),
            (">=40960", 40959, True, False),
            ("==15360", 15360, True, True),
            ("=15360", 15361, True, False),
            ("!=15360", 15361, True, True),
            ("<16384", 16000, True, True),
            (">12.0", "12.2", False, True),
            (">=12.0", "12", False, True),
            (">=575.0", "575.57.08", False, True),
            (">=575.0", "570.86.15", False, False),
            ("<=11.8", "11.8", False, True),
            ("<11.8", "11.8", False, False),
        ],
    )
    def test_operators(self, text, actual, numeric, holds):
        assert Constraint.parse(text).holds(actual, numeric=numeric) is holds

    def test_missing_value_never_holds(self):
        assert not Constraint.parse(">=1").holds(None, numeric=True)


class TestCpu:
    # seed 000: "#x86_64 accepted by arch [x86_64], [''] or [x86_64, excl], not by [arm64]"
    @pytest.mark.parametrize(
        ("queue_arch", "accepted"),
        [(["x86_64"], True), ([""], True), (["x86_64", "excl"], True), (["arm64"], False)],
    )
    def test_seed_arch_example(self, queue_arch, accepted):
        ok, _ = cpu_check([{"type": "cpu", "arch": queue_arch}], task_cpu(parse_architecture("#x86_64")))
        assert ok is accepted

    def test_exclusive_attribute_refuses_tasks_that_do_not_ask_for_it(self):
        queue = [{"type": "cpu", "arch": ["x86_64"], "vendor": ["intel", "excl"]}]
        assert cpu_check(queue, task_cpu(parse_architecture("#x86_64-intel")))[0]
        ok, detail = cpu_check(queue, task_cpu(parse_architecture("#x86_64")))
        assert not ok
        assert detail["check"] == "cpu"
        assert not cpu_check(queue, task_cpu(parse_architecture("#x86_64-amd")))[0]

    def test_non_exclusive_attribute_accepts_tasks_that_do_not_ask(self):
        queue = [{"type": "cpu", "arch": ["x86_64"], "instr": ["avx2"]}]
        assert cpu_check(queue, task_cpu(parse_architecture("#x86_64")))[0]
        assert not cpu_check(queue, task_cpu(parse_architecture("#x86_64--avx512")))[0]

    def test_regexp_task_arch(self):
        spec = task_cpu(parse_architecture("#(x86_64|aarch64)"))
        assert cpu_check([{"type": "cpu", "arch": ["aarch64"]}], spec)[0]
        assert not cpu_check([{"type": "cpu", "arch": ["ppc64le"]}], spec)[0]

    def test_queue_without_cpu_information_accepts(self):
        assert cpu_check([], task_cpu(parse_architecture("#aarch64")))[0]


class TestGpu:
    def check(self, text, summary, queue=GPU_QUEUE):
        return gpu_check(queue, summary, parse_architecture(text).gpu)

    def test_stage_one_needs_a_gpu_in_cric(self):
        ok, detail = self.check("#&nvidia", [A100_40], queue=[{"type": "cpu", "arch": ["x86_64"]}])
        assert (ok, detail["queue"]) == (False, "no GPU in CRIC")

    def test_without_pilot_data_only_wildcards_pass(self):
        assert self.check("#&nvidia", [])[0]
        ok, detail = self.check("#&nvidia:vram>=40960", [])
        assert (ok, detail["queue"]) == (False, "no GPU reported by pilots")

    @pytest.mark.parametrize(
        ("text", "summary", "accepted"),
        [
            ("#&nvidia", [A100_40], True),
            ("#&amd", [A100_40], False),
            ("#&*", [A100_40], True),
            ("#&nvidia:vram>=40960", [A100_40], True),
            ("#&nvidia:vram>=40960", [V100], False),
            ("#&nvidia:vram==15360", [P100], False),
            ("#&nvidia:uarch=Ampere:cuda>=12.0", [A100_40], True),
            ("#&nvidia:uarch=Ampere:cuda>=12.0", [V100], False),
            ("#&nvidia:model=.*A100.*:vram>=40960:driver>=575.0", [A100_40], True),
            ("#&nvidia:model=.*a100.*:vram>=40960", [A100_40], True),  # case-insensitive
            ("#&nvidia:model=.*A100.*:vram==81920:cuda>=12.0:driver>=575.0", [A100_40, A100_80], True),
            ("#&nvidia:model=.*A100.*:vram==81920:cuda>=12.0:driver>=575.0", [A100_40], False),
            ("#&nvidia:model!=.*P100.*", [A100_40], True),
            ("#&nvidia:model!=.*P100.*", [A100_40, P100], False),  # any P100 at the queue excludes it
            ("#&nvidia:model!=.*(P100|V100).*", [V100], False),
            ("#&nvidia:model!=.*(P100|V100).*", [A100_80], True),
            ("#&nvidia:driver>=575.0", [V100], False),
        ],
    )
    def test_seed_examples_against_pilot_data(self, text, summary, accepted):
        assert self.check(text, summary)[0] is accepted

    def test_all_attributes_must_hold_on_one_card(self):
        # 80 GB on one card and Volta on another is not an 80 GB Volta
        assert not self.check("#&nvidia:vram>=81920:uarch=Volta", [A100_80, V100])[0]

    def test_microarchitecture_list_in_json(self):
        text = json.dumps({"gpu_spec": {"vendor": "nvidia", "microarchitecture": ["Ampere", "Hopper", "Ada Lovelace"]}})
        assert self.check(text, [A100_40])[0]
        assert not self.check(text, [V100])[0]

    def test_failure_detail_names_need_and_cards(self):
        _ok, detail = self.check("#&nvidia:vram>=81920", [V100])
        assert detail == {
            "check": "gpu",
            "needed": "nvidia:vram>=81920",
            "queue": "NVIDIA Tesla V100S-PCIE-32GB 32768MB",
        }


class TestContainers:
    def test_any_or_cvmfs_accepts_every_container(self):
        assert container_check(TaskSoftware(container_name="docker://x/y:1"), {"containers": ["/cvmfs"]}, None)[0]

    def test_forward_match(self):
        tags = {"containers": ["/cvmfs/unpacked.cern.ch/registry.hub.docker.com/atlas/"]}
        ok, _ = container_check(
            TaskSoftware(container_name="/cvmfs/unpacked.cern.ch/registry.hub.docker.com/atlas/athena:24"), tags, None
        )
        assert ok
        assert not container_check(TaskSoftware(container_name="docker://atlas/athena:24"), tags, None)[0]

    def test_resolution_through_the_all_entry(self):
        tags = {"containers": ["/cvmfs/unpacked.cern.ch/"]}
        all_entry = {"containers": {"atlas/athena:24.0.30": "/cvmfs/unpacked.cern.ch/registry/atlas/athena:24.0.30"}}
        assert container_check(TaskSoftware(container_name="atlas/athena:24.0.30"), tags, all_entry)[0]
        via_tags = {"tags": [{"container_name": "atlas/athena:24.0.30", "sources": ["/cvmfs/unpacked.cern.ch/a"]}]}
        assert container_check(TaskSoftware(container_name="atlas/athena:24.0.30"), tags, via_tags)[0]
        ok, detail = container_check(TaskSoftware(container_name="atlas/other:1"), tags, all_entry)
        assert (ok, detail["check"]) == (False, "container")

    def test_only_tags_for_fat_containers(self):
        tags = {"containers": ["any"], "tags": [{"container_name": "atlas/athena:24", "sources": ["atlas/base:9"]}]}
        assert container_check(TaskSoftware(container_name="atlas/athena:24", onlyTagsForFC=True), tags, None)[0]
        assert container_check(TaskSoftware(container_name="atlas/base:9", onlyTagsForFC=True), tags, None)[0]
        # 'any' does not help when only tags count
        assert not container_check(TaskSoftware(container_name="atlas/other:1", onlyTagsForFC=True), tags, None)[0]


class TestReleases:
    def check(self, tags, **task):
        software = TaskSoftware(**task)
        return release_check(software, parse_architecture(software.architecture), tags)[0]

    def test_split_release(self):
        assert split_release("Athena-21.0.38") == ("Athena", "21.0.38")
        assert split_release("21.0.38") == ("", "21.0.38")

    def test_cvmfs_and_containers_accept(self):
        assert self.check(AGLT2, transUses="Athena-24.0.30", architecture="x86_64-el9-gcc13-opt")

    def test_cvmfs_and_platform_in_cmtconfigs(self):
        tags = {**AGLT2, "containers": []}
        assert self.check(tags, transUses="Athena-21.0.38", architecture="x86_64-slc6-gcc62-opt")
        assert not self.check({**tags, "tags": []}, transUses="Athena-21.0.38", architecture="x86_64-el9-gcc13-opt")

    def test_nightlies_need_the_nightlies_repository(self):
        tags = {**AGLT2, "cvmfs": ["atlas"], "tags": []}
        assert not self.check(tags, transUses="Athena-master--nightly-2026-11-01", architecture="x86_64-slc6-gcc62-opt")
        assert self.check(tags, transUses="Athena-21.0.38", architecture="x86_64-slc6-gcc62-opt")

    def test_tag_fallback_needs_project_release_and_cmtconfig(self):
        tags = {**AGLT2, "cvmfs": [], "containers": []}
        assert self.check(tags, transHome="AthDerivation-21.2.2.0", architecture="x86_64-slc6-gcc62-opt")
        assert not self.check(tags, transHome="AthDerivation-21.2.2.1", architecture="x86_64-slc6-gcc62-opt")
        assert not self.check(tags, transHome="Athena-21.2.2.0", architecture="x86_64-slc6-gcc62-opt")
        # a base platform needs 'any' in containers for the tag fallback
        assert not self.check(tags, transHome="AthDerivation-21.2.2.0", architecture="x86_64-slc6-gcc62-opt@el9")

    def test_sw_platform_regexp_resolves_to_a_cmtconfig(self):
        tags = {**AGLT2, "containers": [], "cvmfs": []}
        assert self.check(tags, transUses="Athena-21.0.38", architecture="x86_64-slc6-gcc6.-opt")


class TestWholeCheck:
    def test_any_skips_releases_but_not_hardware(self):
        assert software_check(TaskSoftware(transUses="Athena-99"), ["ANY"], None, None, None)[0]
        ok, detail = software_check(TaskSoftware(architecture="#&nvidia"), ["ANY"], None, None, None)
        assert (ok, detail["check"]) == (False, "gpu")

    def test_a_gpu_only_queue_refuses_a_task_that_asks_no_gpu(self):
        """issue 33 D1: 'excl' in the queue's GPU entry (as AGLT2's vendor list) keeps it for GPU tasks."""
        cpu = {"type": "cpu", "arch": ["x86_64"]}
        exclusive = {**AGLT2, "architectures": [cpu, {"type": "gpu", "vendor": ["nvidia", "excl"], "model": ["kt100"]}]}
        ok, detail = software_check(TaskSoftware(transUses="Athena-21.0.38"), ["AUTO"], exclusive, None, None)
        assert (ok, detail) == (False, {"check": "gpu", "needed": "no GPU", "queue": "GPU jobs only (excl)"})
        shared = {**AGLT2, "architectures": [cpu, {"type": "gpu", "vendor": ["nvidia"], "model": ["kt100"]}]}
        assert software_check(TaskSoftware(transUses="Athena-21.0.38"), ["AUTO"], shared, None, None)[0]

    def test_plain_release_list(self):
        assert software_check(TaskSoftware(transUses="Athena-21.0.38"), ["21.0.38", "22.0.1"], None, None, None)[0]
        _ok, detail = software_check(TaskSoftware(transUses="Athena-23.0.1"), ["21.0.38"], None, None, None)
        assert detail == {"check": "release", "needed": "23.0.1", "queue": "21.0.38"}

    def test_auto_needs_published_tags(self):
        ok, detail = software_check(TaskSoftware(transUses="Athena-21.0.38"), ["AUTO"], None, None, None)
        assert (ok, detail["queue"]) == (False, "no software tags published")

    def test_auto_with_cpu_exclusivity(self):
        # AGLT2's CPU entry is intel-exclusive: a task that names no vendor is refused (its GPU entry, exclusive
        # too, is left out here: it would refuse every task without a GPU, issue 33 D1)
        cpu_only = {**AGLT2, "architectures": AGLT2["architectures"][:1]}
        ok, detail = software_check(
            TaskSoftware(transUses="Athena-21.0.38", architecture="x86_64-slc6-gcc62-opt"),
            ["AUTO"],
            cpu_only,
            None,
            None,
        )
        assert (ok, detail["check"]) == (False, "cpu")
        assert software_check(
            TaskSoftware(transUses="Athena-21.0.38", architecture="x86_64-slc6-gcc62-opt#x86_64-intel"),
            ["AUTO"],
            cpu_only,
            None,
            None,
        )[0]

    def test_bad_architecture_is_a_cache_skip_with_the_reason(self):
        ok, detail = software_check(TaskSoftware(architecture="#&nvidia:colour=red"), ["ANY"], None, None, None)
        assert (ok, detail["check"]) == (False, "architecture")
