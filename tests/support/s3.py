"""An S3-compatible server on loopback (moto's server mode) for a test's object storage, stopped after.

It holds its buckets in memory and accepts any key: the test's keys are made up, and they reach evaldrift only as
the operator's AWS variables (`S3Server.environ`), as a real bucket's would.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # loopback only, whatever proxy is set
KEY_ID, SECRET = "evaldrift-test-key", "evaldrift-test-secret-9f2c"   # made up: moto checks no signature


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class S3Server:
    """A running server: its process and port."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environ(self) -> dict[str, str]:
        """The operator's settings that point evaldrift (and any AWS SDK) at this server."""
        return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": self.endpoint}

    def client(self):  # type: ignore[no-untyped-def]
        """A boto3 S3 client on this server (boto3 comes with moto)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY_ID,
                            aws_secret_access_key=SECRET, region_name="us-east-1")

    def bucket(self, name: str) -> str:
        """Make a bucket; returns its s3:// location."""
        self.client().create_bucket(Bucket=name)
        return f"s3://{name}"

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object's key under `prefix`."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start(timeout: float = 60) -> S3Server:
    """Start moto's server on 127.0.0.1 and a free port (about 4 s on a loaded machine); the caller stops it."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while True:
        try:
            _DIRECT.open(f"http://127.0.0.1:{port}/moto-api/", timeout=2).close()
            return S3Server(proc, port)
        except (urllib.error.URLError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto's S3 server did not start on 127.0.0.1:{port}") from None
            time.sleep(0.1)
