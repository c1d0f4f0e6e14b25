"""Progress output suits where it goes: a log gets plain lines (no carriage returns, no cursor escapes of nested
bars), a terminal gets tqdm's bar."""
import subprocess
import sys

SCRIPT = """
import sys
from workbench.progress import progress_bar
outer = progress_bar(total=3, desc="outer", mininterval=0)
for i in range(3):
    for _ in progress_bar(range(5), desc="inner", position=1, leave=False, mininterval=0):
        pass
    outer.update()
outer.close()
"""


def test_a_log_gets_plain_lines_without_carriage_returns_or_cursor_escapes():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    log = result.stderr
    assert "\r" not in log and "\x1b[" not in log
    lines = log.splitlines()
    assert any(line.startswith("outer: 100%") and "3/3" in line for line in lines)
    assert any(line.startswith("inner:") for line in lines) and all(line.strip() for line in lines)


def test_a_terminal_still_gets_the_redrawn_bar(tmp_path):
    import pty
    import os
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", SCRIPT], stderr=follower, stdout=subprocess.DEVNULL)
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    assert process.wait(timeout=120) == 0
    assert b"\r" in output  # tqdm redraws in place on a terminal
