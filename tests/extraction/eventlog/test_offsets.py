"""The committed offset is the next record to read, and only the contiguous durable prefix of a
partition moves it (BRK-6)."""

from __future__ import annotations

import pytest

from extraction.eventlog.offsets import PartitionProgress


def test_the_commit_waits_for_a_slow_record_then_jumps_past_what_finished_after_it():
    progress = PartitionProgress()
    for offset in (40, 41, 42):
        progress.take(offset)
    assert progress.finish(41) is None
    assert progress.finish(42) is None
    assert progress.committable is None and progress.first_unfinished == 40
    assert progress.finish(40) == 43
    assert progress.committable == 43 and progress.unfinished == 0


def test_one_durable_record_commits_its_successor():
    progress = PartitionProgress()
    progress.take(41)
    assert progress.finish(41) == 42


def test_gaps_in_offsets_are_the_partition_s_own_and_do_not_hold_the_prefix():
    # Offsets need not be consecutive (compaction, transaction markers): the prefix is over
    # the records taken, in their order.
    progress = PartitionProgress()
    progress.take(7)
    progress.take(10)
    assert progress.finish(10) is None
    assert progress.finish(7) == 11


def test_a_partition_is_read_in_order():
    progress = PartitionProgress()
    progress.take(5)
    with pytest.raises(ValueError, match="offset 5 taken after 5"):
        progress.take(5)
