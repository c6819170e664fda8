"""make run's broker: a message is never seen half written (brokerage/kombu_filesystem.py)."""

import os

from kombu import Connection

from brokerage.kombu_filesystem import Channel, filesystem_transport_install


def folders(tmp_path) -> dict:
    """The transport's folders in the test's directory (its control folder is not the working directory's)."""
    return {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "store_processed": False,
        "control_folder": str(tmp_path / "control"),
    }


def test_messages_appear_whole_and_are_read_back(tmp_path):
    filesystem_transport_install()
    options = folders(tmp_path)
    with Connection("filesystem://", transport_options=options) as connection:
        channel = connection.default_channel
        assert isinstance(channel, Channel)
        queue = connection.SimpleQueue("work")
        queue.put({"cycle": "job-generation", "n": 1})
        # only the renamed, complete message is in the folder; no partial file is left behind
        names = os.listdir(tmp_path)
        assert len([name for name in names if name.endswith(".work.msg")]) == 1
        assert not [name for name in names if name.endswith(".part")]
        message = queue.get(timeout=1)
        assert message.payload == {"cycle": "job-generation", "n": 1}
        message.ack()
        queue.close()


def test_a_file_being_written_is_not_taken(tmp_path):
    # what a consumer meets while a producer writes: the partial name is not one it reads
    filesystem_transport_install()
    (tmp_path / ".123_abc.work.msg.part").write_bytes(b"")
    options = folders(tmp_path)
    with Connection("filesystem://", transport_options=options) as connection:
        queue = connection.SimpleQueue("work")
        assert queue.qsize() == 0
        queue.close()
    assert (tmp_path / ".123_abc.work.msg.part").exists()
