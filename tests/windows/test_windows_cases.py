"""The Windows cases of the engine's store on Windows CPython (3.11 and 3.13) under Wine, each with what the
user gets (tests/windows/inside/windows_cases.py runs them, one Windows process per Python version)."""

from __future__ import annotations

import pytest

from windows_helpers import json_lines, run_inside
from wine import winpath

pytestmark = pytest.mark.windows


@pytest.fixture(scope="module")
def cases(windows_python, tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp(f"cases-{windows_python.version}")
    drive = tmp_path_factory.mktemp("drive-d")
    windows_python.wine.map_drive("d", drive)
    return json_lines(run_inside(windows_python, "windows_cases.py", winpath(work), "D:"), "case")


def case(cases: dict, name: str) -> dict:
    assert name in cases, cases["_log"]
    assert "crashed" not in cases[name], cases[name]["crashed"]
    return cases[name]


def test_no_dir_fd_groups_are_read_by_name(cases):
    found = case(cases, "no_dir_fd")
    assert found["dir_fd"] is False and found["supports"] is False
    assert found["read"] == [0, 1, 2]


def test_packs_are_binary_files(cases):
    found = case(cases, "o_binary")
    assert found["o_binary"] and found["same"] and found["quarantined"] == 0


def test_a_lost_rename_race_is_the_other_writers_pack(cases):
    found = case(cases, "rename_onto_existing")
    assert found["os_rename"] == "FileExistsError winerror 183"  # Windows' own rule, unlike POSIX
    assert found["same_name"] and found["writes"] == 1
    assert [name for name in found["files"] if name.startswith(".")] == [], "no temp file left"


def test_replacing_a_file_another_process_reads(cases):
    found = case(cases, "replace_onto_open_file")
    assert found["brief_waited"] >= 0.3 and found["content"] == "new", "a brief hold is waited out"
    # a long hold: one line that names the file and says it may be open elsewhere, exit 3; no temp file left
    assert found["winerror"] == 5 and found["exit_code"] == 3
    assert "000003.png" in found["message"] and "open in another program" in found["message"]
    assert found["temp_left"] == []


def test_a_teammate_reading_a_pack_while_this_machine_prunes_and_clears(cases):
    found = case(cases, "reader_holds_a_pack")
    assert found["prune"]["removed_packs"] == 2 and found["prune"]["skipped_in_use"] == 1
    assert found["held_pack_kept"] and found["storing"], "a pack in use is left for later; storing goes on"
    # Wine renames a folder holding an open file (Windows refuses: then one line, "in use" or "access
    # denied", exit 7 or 3); the open pack stays in the renamed folder until the next clear
    assert found["clear"] is None
    assert found["after_clear"] == [], "once the reader is done, clear removes everything"


def test_claims_know_dead_and_live_holders_without_signals(cases):
    found = case(cases, "claims")
    assert found["dead_is_gone"] and not found["me_is_gone"] and not found["reader_is_gone"]
    assert found["took_dead_claim"] and found["contender_refused"]
    assert found["renewed"] and found["released"] and found["storing"]


def test_modes_with_and_without_fchmod(cases, windows_python):
    found = case(cases, "modes")
    assert found["fchmod"] is (windows_python.version >= "3.13")
    assert found["writable"] and found["pruned"] == 1 and found["loose"] == 0


def test_the_coverage_watcher_sees_another_process_write(cases):
    found = case(cases, "watch")
    assert found["writer"] == 0, found["writer_err"]
    assert found["mode"] == "polling" and found["seen"] and found["deleted_while_watched"], found


def test_drive_letters_long_paths_and_unc_shares(cases):
    found = case(cases, "paths")
    assert found["second_drive"] == 1
    assert found["deep_length"] > 260 and found["deep_read"] == 1
    assert found["plain_deep_length"] > 260 and found["plain_read"] == 1  # Wine has no 260 limit: see docs
    assert found["unc"]["exit_code"] == 2 and "nas-that-is-not-there" in found["unc"]["message"]
    assert found["too_long"]["exit_code"] == 6 and "260" in found["too_long"]["message"]
