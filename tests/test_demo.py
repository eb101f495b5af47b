"""The README's main job keeps working: `scripts/demo.py` runs end to end.

The demo checks its own claims (a diagnostic and a hover for the learned gotcha, the file
restored byte for byte) and exits non-zero when one fails, so this test fails with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_demo_runs_end_to_end() -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ENGRAM_DEMO_CLEANUP": "1"},
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    out = completed.stdout
    assert "(candidate), 3x" in out
    assert "Hint [G-" in out and "Warning [G-" in out  # learned, then confirmed
    assert "**Workaround:** Use datetime.now(timezone.utc)" in out
    assert "app/billing.py is byte-for-byte what it was" in out
    assert "## Open items" in out and "failed 3 times" in out
