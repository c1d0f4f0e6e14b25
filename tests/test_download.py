"""Download code against a local HTTP server (never the internet)."""
import functools
import hashlib
import http.server
import io
import threading
import zipfile

import pytest

from workbench.data import download as dl
from workbench.data.corpora import read_pairs
from workbench.data.sts import read_scored_pairs
from workbench.checks import WorkbenchError


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with single-range support (enough to test resuming)."""

    def log_message(self, *args):
        pass

    def send_head(self):
        header = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not header:
            return super().send_head()
        try:
            data = open(path, "rb").read()
        except OSError:
            self.send_error(404)
            return None
        start = int(header.split("=")[1].split("-")[0])
        if start >= len(data):
            self.send_error(416)
            return None
        self.send_response(206)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        return io.BytesIO(data[start:])


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(RangeHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_download_verifies_checksum_and_resumes(server, tmp_path):
    root, url = server
    payload = bytes(range(256)) * 4000
    (root / "blob.bin").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    dest = tmp_path / "out" / "blob.bin"
    dest.parent.mkdir()
    (dest.parent / "blob.bin.part").write_bytes(payload[:300_000])  # an interrupted earlier attempt
    assert dl.download(f"{url}/blob.bin", dest, sha256=digest, show_progress=False).read_bytes() == payload
    assert not (dest.parent / "blob.bin.part").exists()
    # a second call finds the verified file and does not fetch again
    (root / "blob.bin").unlink()
    assert dl.download(f"{url}/blob.bin", dest, sha256=digest, show_progress=False) == dest


def test_download_checksum_mismatch_and_http_errors(server, tmp_path):
    root, url = server
    (root / "a.txt").write_text("hello")
    with pytest.raises(WorkbenchError, match="checksum mismatch"):
        dl.download(f"{url}/a.txt", tmp_path / "a.txt", sha256="0" * 64, show_progress=False)
    assert not (tmp_path / "a.txt.part").exists() and not (tmp_path / "a.txt").exists()
    with pytest.raises(WorkbenchError, match="HTTP 404"):
        dl.download(f"{url}/missing.zip", tmp_path / "m.zip", show_progress=False)


def test_opus_moses_zip_to_corpus(server, tmp_path):
    root, url = server
    with zipfile.ZipFile(root / "en-fr.txt.zip", "w") as z:
        z.writestr("OpenSubtitles.en-fr.en", "Hello there , friend .\n\nWhere are you going ?\n")
        z.writestr("OpenSubtitles.en-fr.fr", "Bonjour , mon ami .\nVide\tici\nOù vas-tu ?\n")
        z.writestr("README", "test fixture")
    archive = dl.download(f"{url}/en-fr.txt.zip", tmp_path / "en-fr.zip", show_progress=False)
    out = tmp_path / "parallel" / "en-fr.tsv.gz"
    assert dl.opus_moses_to_tsv(archive, "fr", out) == 2
    assert read_pairs(out) == [("Hello there , friend .", "Bonjour , mon ami ."),
                               ("Where are you going ?", "Où vas-tu ?")]


def test_sts_archive_to_tsv(tmp_path):
    archive = tmp_path / "STS2013-en-test.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ("FNWN", "headlines", "OnWN"):
            z.writestr(f"test-gs/STS.input.{name}.txt", 'A "quoted" man .\tA man .\nx\ty\n')
            z.writestr(f"test-gs/STS.gs.{name}.txt", "4.2\n\n")
    counts = dl.sts_archive_to_tsv(archive, 2013, tmp_path / "STS13")
    assert counts == {"FNWN": 1, "headlines": 1, "OnWN": 1}
    frame = read_scored_pairs(tmp_path / "STS13" / "FNWN.tsv")
    assert frame.iloc[0].tolist() == [4.2, 'A "quoted" man .', "A man ."]
