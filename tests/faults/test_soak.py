"""The soak benchmark's two-minute version (benchmarks/soak.py): SIGKILLs of the service, RPC 503
episodes and a full disk under its data dir, with submissions flowing the whole time; afterwards every
accepted submission is anchored exactly once, and each kill's recovery was measured. Figures are
printed by the benchmark, never asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.soak, pytest.mark.chain]  # minutes of a service on anvil: `make test`, never `make check`


def test_two_minutes_of_kills_rpc_faults_and_a_full_disk_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    ran = subprocess.run(
        [
            sys.executable,
            "benchmarks/soak.py",
            "--minutes",
            "2",
            "--rate",
            "25",
            "--kill-every",
            "30",
            "--rpc-fault-every",
            "25",
            "--disk-full-every",
            "35",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    summary = json.loads((tmp_path / "soak.json").read_text())["summary"]
    assert summary["failure"] is None and summary["anchored"] == summary["accepted"] > 0, summary
    assert summary["kills"] >= 3 and summary["rpc_faults"] >= 3
    assert len(summary["recovery_s"]["samples"]) >= summary["kills"] - 1  # the last may end with the run
    if os.geteuid() == 0:  # CI runs as root: the disk under the journal really filled, and it was felt
        assert summary["disk_full"] >= 2 and not summary["disk_full_skipped"]
        assert summary["answers"].get("507", 0) >= 1, summary["answers"]
    assert "0 lost, 0 duplicated" in ran.stdout
    assert (tmp_path / "soak.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
