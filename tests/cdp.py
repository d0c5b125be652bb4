"""Headless Chromium driven over the DevTools protocol: what a person does on a page (pick files, click),
and every request the page makes, with its body, for tests that must prove what left the browser."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import free_port


class Page:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._id = 0
        self.requests: list[dict[str, Any]] = []
        """Every request the page sent: url, method and body (postData), in order."""
        for domain in ("Page", "Network", "Runtime", "DOM"):
            self.call(f"{domain}.enable")

    def _event(self, message: dict[str, Any]) -> None:
        if message.get("method") == "Network.requestWillBeSent":
            request = message["params"]["request"]
            body = request.get("postData", "")
            if request.get("hasPostData") and not body:
                body = "<unread>"
            self.requests.append(
                {"url": request["url"], "method": request["method"], "body": body, "id": message["params"]["requestId"]}
            )

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        mine = self._id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == mine:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self._event(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str, ready: str = "true") -> None:
        """Open `url` and wait until it has loaded and `ready` (a JavaScript expression) holds."""
        self.call("Page.navigate", url=url)
        self.wait_for(f"document.readyState === 'complete' && location.href === {json.dumps(url)} && ({ready})")

    def wait_for(self, expression: str, timeout_s: float = 60) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    def set_files(self, selector: str, paths: list[Path]) -> None:
        root = self.call("DOM.getDocument", depth=-1)["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.call("DOM.setFileInputFiles", nodeId=node, files=[str(p) for p in paths])

    def width_at(self, url: str, width: int = 1200) -> tuple[int, int]:
        """The width `url` takes in a `width`-pixel window, and the window's: more than the window means
        a part of the page is off screen (a screenshot without scrollbars never shows it)."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=800, deviceScaleFactor=1, mobile=False)
        self.goto(url)
        wide = self.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        return int(wide[0]), int(wide[1])

    def screenshot(self, path: Path, width: int = 1200, height: int = 800) -> None:
        """A PNG of the page as a person sees it at `width` x `height`."""
        import base64

        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def bodies(self) -> list[str]:
        """Every request body, those too large to ride on the event fetched from the browser."""
        out = []
        for r in self.requests:
            if r["body"] == "<unread>":
                with contextlib.suppress(AssertionError):
                    r["body"] = self.call("Network.getRequestPostData", requestId=r["id"])["postData"]
            out.append(r["body"])
        return out


@contextlib.contextmanager
def chromium_page(browser: str, flags: list[str]) -> Iterator[Page]:
    """A fresh headless Chromium (own profile, own debugging port), stopped by the PID we started."""
    port = free_port()
    with tempfile.TemporaryDirectory() as profile:
        process = subprocess.Popen(
            [browser, *flags, f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            targets: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as answer:  # noqa: S310
                        targets = [t for t in json.loads(answer.read()) if t.get("type") == "page"]
                    if targets:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            assert targets, "Chromium did not open its debugging port"
            from websockets.sync.client import connect

            with connect(targets[0]["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024) as ws:
                yield Page(ws)
        finally:
            os.killpg(process.pid, 15)
            process.wait(timeout=30)
