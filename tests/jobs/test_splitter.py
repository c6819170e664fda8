"""Job splitting (seed 002): file level with nFilesPerJob / nGBPerJob, event level with the seed's figure."""

import pytest

from brokerage.splitter import MB, EventRange, InputFile, disk_estimate_mb, split_events, split_files

GB = 1024 * MB


def files(*sizes_gb, events=None):
    return [InputFile(fileID=i + 1, size_bytes=int(s * GB), nEvents=events) for i, s in enumerate(sizes_gb)]


def test_without_limits_one_file_per_job():
    chunks = split_files(files(1, 1, 1), max_jobs=10)
    assert [c.files for c in chunks] == [(1,), (2,), (3,)]


def test_files_per_job_groups_consecutive_files_and_stops_at_max_jobs():
    chunks = split_files(files(1, 1, 1, 1, 1), max_jobs=2, files_per_job=2)
    assert [c.files for c in chunks] == [(1, 2), (3, 4)]
    assert chunks[0].input_bytes == 2 * GB


def test_last_chunk_may_be_short():
    assert [c.files for c in split_files(files(1, 1, 1), max_jobs=5, files_per_job=2)] == [(1, 2), (3,)]


def test_disk_estimate_uses_at_least_2_5_gb_of_output():
    # given 3 GB of input, 100 kB of output per MB, 500 MB work directory
    # then output = 100 × 3072 / 1024 = 300 MB < 2560 MB, so 3072 + 2560 + 500
    assert disk_estimate_mb(input_mb=3072, out_disk_kb_per_mb=100, work_disk_mb=500) == 6132
    # and with 2000 kB per MB the output (6000 MB) counts in full
    assert disk_estimate_mb(input_mb=3072, out_disk_kb_per_mb=2000, work_disk_mb=0) == 3072 + 6000


def test_gb_per_job_adds_files_while_the_estimate_stays_under_the_limit():
    # 2 GB files, no output size known (2.5 GB floor), 10 GB limit:
    # 2 files → 4096 + 2560 = 6656 MB ≤ 10240; 3 files → 6144 + 2560 = 8704 ≤ 10240; 4 files → 10752 > 10240
    chunks = split_files(files(2, 2, 2, 2, 2, 2, 2), max_jobs=10, gb_per_job=10)
    assert [c.files for c in chunks] == [(1, 2, 3), (4, 5, 6), (7,)]


def test_a_file_larger_than_the_limit_still_gets_its_own_job():
    chunks = split_files(files(20, 1), max_jobs=10, gb_per_job=10)
    assert [c.files for c in chunks] == [(1,), (2,)]


def test_files_and_gb_limits_both_apply():
    chunks = split_files(files(1, 1, 1, 1), max_jobs=10, files_per_job=3, gb_per_job=100)
    assert [c.files for c in chunks] == [(1, 2, 3), (4,)]


def test_events_are_summed_when_every_file_knows_them():
    chunk = split_files(files(1, 1, events=500), max_jobs=1, files_per_job=2)[0]
    assert chunk.n_events == 1000
    assert split_files(files(1, 1), max_jobs=1, files_per_job=2)[0].n_events is None


def test_event_split_reproduces_the_seed_figure():
    # seed 002 "Event-level splitting": N = 100, File1 and File2 of 150 events, File3 of 100
    inputs = [InputFile(1, MB, 150), InputFile(2, MB, 150), InputFile(3, MB, 100)]
    chunks = split_events(inputs, events_per_job=100, max_jobs=10)
    assert [c.ranges for c in chunks] == [
        (EventRange(1, 0, 99),),
        (EventRange(1, 100, 149), EventRange(2, 0, 49)),
        (EventRange(2, 50, 149),),
        (EventRange(3, 0, 99),),
    ]
    assert [c.n_events for c in chunks] == [100, 100, 100, 100]
    assert chunks[1].files == (1, 2)
    assert chunks[1].input_bytes == 2 * MB


def test_event_split_resumes_after_used_events_and_respects_max_jobs():
    inputs = [InputFile(1, MB, 150), InputFile(2, MB, 150)]
    chunks = split_events(inputs, events_per_job=100, max_jobs=1, used={1: 150, 2: 30})
    assert [c.ranges for c in chunks] == [(EventRange(2, 30, 129),)]


def test_event_split_gives_the_remainder_to_a_last_smaller_job():
    chunks = split_events([InputFile(1, MB, 250)], events_per_job=100, max_jobs=10)
    assert [c.n_events for c in chunks] == [100, 100, 50]


def test_event_split_needs_a_positive_size():
    with pytest.raises(ValueError, match="nEventsPerJob"):
        split_events([InputFile(1, MB, 10)], events_per_job=0, max_jobs=1)


# --- secondary datasets (seed 002, "Dataset attributes"; InputChunk.getSubChunk, 1.0.4) ---


def secondary(dataset_id, attributes, count, *, first=100):
    from brokerage.splitter import SecondaryInput

    return SecondaryInput(dataset_id, attributes, tuple(InputFile(first + i, GB) for i in range(count)))


def test_a_secondary_gives_one_file_per_master_file_and_ratio_more():
    from brokerage.splitter import chunks_with_secondaries

    chunks = split_files(files(1, 1, 1, 1), max_jobs=10, files_per_job=2)  # (1, 2), (3, 4)
    plain, doubled = secondary(7, "", 10), secondary(8, "ratio=2", 10, first=200)
    got = chunks_with_secondaries(chunks, [plain, doubled])
    assert [c.secondary for c in got] == [(100, 101, 200, 201, 202, 203), (102, 103, 204, 205, 206, 207)]
    # 2 master + 6 secondary GB per job
    assert [c.input_bytes for c in got] == [8 * GB, 8 * GB]


def test_a_ratio_that_is_not_whole_is_rounded_up_per_job():
    from brokerage.splitter import chunks_with_secondaries, files_by_ratio

    assert (files_by_ratio(0.5, 3), files_by_ratio(2, 3), files_by_ratio(1.5, 1)) == (2, 6, 2)
    assert secondary(1, "nosplit,ratio=0.5", 0).ratio == 0.5
    chunks = split_files(files(1, 1, 1, 1, 1, 1), max_jobs=10, files_per_job=3)
    got = chunks_with_secondaries(chunks, [secondary(7, "ratio=0.5", 3)])
    assert [c.secondary for c in got] == [(100, 101), (102,)]  # ceil(1.5) = 2, then only one left


def test_nosplit_gives_every_job_the_whole_dataset_and_repeat_cycles_through_it():
    from brokerage.splitter import chunks_with_secondaries

    chunks = split_files(files(1, 1, 1), max_jobs=10)
    got = chunks_with_secondaries(chunks, [secondary(7, "nosplit", 2), secondary(8, "repeat,ratio=2", 3, first=300)])
    assert [c.shared for c in got] == [(100, 101, 300, 301), (100, 101, 302), (100, 101, 300, 301)]
    # neither is followed: nobody uses their files up
    assert [c.secondary for c in got] == [(), (), ()]
    assert secondary(9, "manytime", 1).followed
    assert not secondary(9, "nosplit,repeat", 1).followed
