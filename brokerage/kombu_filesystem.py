"""Kombu's filesystem transport (make run's broker) with its messages written whole before a consumer can see them.

kombu 5's filesystem Channel._put creates the message file, then locks and writes it; a consumer listing the folder
in between moves the still empty file and fails to decode it (`JSONDecodeError: Expecting value`), which stopped
make run's worker in a test of the whole stack. Here a message is written under a name no consumer reads and renamed
into place: a rename within one folder is atomic, so a listed message is always complete."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put `payload` onto `queue`, complete or not at all (module docstring)."""
        filename = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, filename)
        # a leading dot: Channel._get reads only `<stamp>_<uuid>.<queue>.msg`, this partitions to another name
        partial = os.path.join(self.data_folder_out, f".{filename}.part")
        try:
            with open(partial, "wb", buffering=0) as message:
                message.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel


def filesystem_transport_install() -> None:
    """Make `filesystem://` mean this transport in this process (Celery's broker URL keeps its plain name)."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
