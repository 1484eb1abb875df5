"""Issue 44, item 3: `serve --monitor` as an operator sees it. Prometheus
text parsed, and the status page loaded in Debian's headless Chromium,
whose screenshot is decoded (PNG, with the standard library) and checked:
the page is drawn, with its heading and its table, on a white ground."""

import json
import re
import shutil
import struct
import subprocess
import time
import urllib.request
import zlib

import pytest

from fedldp_cli import finish, free_port, listening, run, start


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read().decode()


def metrics(text):
    """Prometheus text as {"name{labels}": value}; every line is checked."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = re.fullmatch(r'([a-z_]+\{[^}]*\}) (\S+)', line)
        assert m, line
        out[m.group(1)] = float(m.group(2))
    return out


def png_pixels(data):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (size,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + size
    raw, step = zlib.decompress(idat), 3 if color == 2 else 4
    stride, rows, prior = width * step, [], bytearray(width * step)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - step] if i >= step else 0
            b, c = prior[i], prior[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * step:x * step + 3]) for x in range(width)])
        prior = line
    return width, height, rows


def test_the_status_page_and_metrics_of_a_running_server(tmp_path):
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    run("enrol", "--state", "s.sqlite", "--count", "2", "--out-dir", "tokens", cwd=tmp_path)
    port, monitor = free_port(), free_port()
    server = start("serve", "--state", "s.sqlite", "--users", "32561", "--epsilon", "4",
                   "--address", f"127.0.0.1:{port}", "--monitor", f"127.0.0.1:{monitor}",
                   "--log-format", "json", cwd=tmp_path, name="serve")
    listening(server, tmp_path / "serve.err")
    first = start("client", "--server", f"127.0.0.1:{port}", "--token-file",
                  "tokens/client-1.token", "--part", "1/2", "--ledger", "l1.sqlite",
                  cwd=tmp_path, name="client1")
    until = time.time() + 60
    joined = 'fedldp_users{task="fedsel-adult",state="joined"}'
    while time.time() < until:  # the first client joins; the server waits for the second
        m = metrics(get(monitor, "/metrics"))  # up before serve said it listens
        if m.get(joined) == 16280:
            break
        time.sleep(0.05)
    assert m.get(joined) == 16280, m
    assert m['fedldp_started{task="fedsel-adult"}'] == 0
    assert m['fedldp_tokens{task="fedsel-adult"}'] == 2
    assert m['fedldp_sessions{task="fedsel-adult"}'] == 1
    assert m['fedldp_rounds{task="fedsel-adult"}'] == 10
    assert m['fedldp_privacy_epsilon{task="fedsel-adult",scope="report"}'] == 4
    status = json.loads(get(monitor, "/status.json"))
    assert status["users"]["joined"] == 16280 and not status["started"]

    shot = tmp_path / "page.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={shot}", "--window-size=900,600",
                    f"http://127.0.0.1:{monitor}/"], check=True, capture_output=True, timeout=120)
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"http://127.0.0.1:{monitor}/"], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert "fedsel-adult (fedsel): waiting for users" in dom
    assert "16280 of 32561 joined" in dom and "per user in total" in dom
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (900, 600)
    dark = lambda px: sum(px) < 3 * 100  # text
    share = sum(dark(px) for row in rows for px in row) / (width * height)
    assert 0.005 < share < 0.3, share  # text on a white ground, not blank, not black
    heading = sum(dark(px) for row in rows[20:80] for px in row)
    table = sum(dark(px) for row in rows[95:285] for px in row)
    assert heading > 2000 and table > 2000, (heading, table)
    assert rows[5][450] == (255, 255, 255)  # the ground is white

    second = start("client", "--server", f"127.0.0.1:{port}", "--token-file",
                   "tokens/client-2.token", "--part", "2/2", "--ledger", "l2.sqlite",
                   cwd=tmp_path, name="client2")
    finish({"client1": first, "client2": second, "serve": server}, tmp_path)
    # --log-format json: every line of the server's log is one JSON object.
    log = [json.loads(line) for line in (tmp_path / "serve.err").read_text().splitlines()]
    assert all(set(entry) == {"time", "component", "message"} for entry in log)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["time"]) for e in log)
    said = [e["message"] for e in log]
    assert any(m.startswith(f"monitor: http://127.0.0.1:{monitor}/") for m in said), said
    assert any("training finished" in m for m in said), said
