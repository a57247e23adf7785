"""The web page in a real browser (headless Chromium, Debian's ``chromium`` and
``chromium-driver``; nothing is downloaded): loaded while a job runs and after it ends, the
timeline has a bar per subtask and checkpoint; screenshots go to ``build/screenshots/``.

Skipped, with the reason, when Chromium, its driver or Selenium is missing
(``apt-get install chromium chromium-driver``; ``pip install -e '.[dev]'``)."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim._web import JobRegistry, WebServer
from runtime.job import JobResult
from tests.rest.test_http import BOUND_S, http, until

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
#: a name the browser resolves to 127.0.0.1, as an attacker's DNS would after a rebinding
REBOUND = "rebound.test"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
)

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (dev extra)"
)
if CHROMIUM is None or DRIVER is None:
    pytest.skip(
        "headless Chromium is not installed: apt-get install -y chromium chromium-driver",
        allow_module_level=True,
    )


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415 - selenium may be missing

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="ckptsim-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1400,1600",
        f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",  # a DNS rebinding, without DNS
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(BOUND_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def drawn(driver: Any) -> dict[str, Any]:
    """What the page drew: the plotly traces' rows and checkpoint ids, and the number of bar
    shapes of the end-to-end trace in the SVG."""
    result: dict[str, Any] = driver.execute_script(
        """
        const plot = document.getElementById('timeline');
        if (!plot || !plot.data) return null;
        const traces = plot.data.map(t => ({name: t.name, y: t.y || [], ids: t.customdata || []}));
        const first = plot.querySelector('.barlayer .trace');
        return {traces, shapes: first ? first.querySelectorAll('.point path').length : 0,
                state: document.body.dataset.jobState || null};
        """
    )
    return result


def wait_rendered(driver: Any, state: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        page = drawn(driver)
        return page if page and page["state"] == state else None

    result: dict[str, Any] = until(ready, f"the page to show the job {state}")
    return result


def expected_bars(server: WebServer, job_id: str) -> set[tuple[str, int]]:
    """Every acknowledged subtask of every checkpoint in the job's history (REST bodies)."""
    job = http(server, "GET", f"/jobs/{job_id}")[1]
    history = http(server, "GET", f"/jobs/{job_id}/checkpoints")[1]["history"]
    bars = set()
    for entry in history:
        for vertex in job["vertices"]:
            status, body = http(
                server,
                "GET",
                f"/jobs/{job_id}/checkpoints/details/{entry['id']}/subtasks/{vertex['id']}",
            )
            if status != 200:
                continue
            for row in body["subtasks"]:
                if row["className"] == "completed":
                    name = f"{vertex['name']} ({row['index'] + 1}/{vertex['parallelism']})"
                    bars.add((name, entry["id"]))
    return bars


def test_the_page_during_and_after_a_run(browser: Any) -> None:
    registry = JobRegistry()
    results: list[JobResult] = []
    gate = threading.Event()

    def event(i: int) -> tuple[int, int]:
        if i == 20_000:  # the job holds here until the page has been seen while it runs
            gate.wait(BOUND_S)
        return (i % 100, 1)

    env = StreamExecutionEnvironment()
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.configure({"web.checkpoints.history": 100, "ckptsim.buffer.records": 100})
    (
        env.from_generator(event, 40_000, rate=20_000, name="Events")
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="RunningSum")
        .collect("sums")
    )
    with WebServer(registry, host="localhost", port=0) as server:
        thread = threading.Thread(
            target=lambda: results.append(
                env.execute("browser job", observer=registry, timeout=BOUND_S * 2)
            ),
            daemon=True,
        )
        thread.start()
        job_id: str = until(lambda: next(iter(registry.live), None), "the job to start")
        until(
            lambda: (
                http(server, "GET", f"/jobs/{job_id}/checkpoints")[1]
                .get("counts", {})
                .get("completed", 0)
                >= 1
            ),
            "a checkpoint",
        )
        # during the run
        browser.get(server.url)
        running = wait_rendered(browser, "RUNNING")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / "web-page-running.png"))
        assert running["shapes"] >= 2  # a completed checkpoint: a bar per subtask
        end_to_end = next(t for t in running["traces"] if t["name"] == "end to end")
        assert len(end_to_end["ids"]) == running["shapes"]
        assert "Source: Events (1/2)" in end_to_end["y"]  # Flink's name of a source
        assert browser.find_elements("css selector", ".vertex")  # the job graph
        gate.set()
        thread.join(BOUND_S)
        assert results and results[0].succeeded
        # after it: the page refreshes until the job has ended, then shows every bar
        finished = wait_rendered(browser, "FINISHED")
        browser.save_screenshot(str(SCREENSHOTS / "web-page-finished.png"))
        end_to_end = next(t for t in finished["traces"] if t["name"] == "end to end")
        shown = set(zip(end_to_end["y"], end_to_end["ids"], strict=True))
        assert shown == expected_bars(server, job_id)
        assert finished["shapes"] == len(shown)
        history_rows = browser.find_elements("css selector", "#cp-history tbody tr")
        counts = http(server, "GET", f"/jobs/{job_id}/checkpoints")[1]["counts"]
        assert len(history_rows) == counts["total"]
        # a reload of the finished job's page draws the same
        browser.get(server.url + f"#job={job_id}")
        again = wait_rendered(browser, "FINISHED")
        assert again["shapes"] == finished["shapes"]


FETCH = """
const [url, options, done] = arguments;
fetch(url, options).then(r => done(r.status), e => done('refused by the browser: ' + e));
"""


def test_a_page_drives_only_the_server_it_came_from(
    browser: Any, finished: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #22, item 2, in a real browser: the server's own page may change a job (its
    fetch carries the server's own Origin); a page from another origin can neither send a JSON
    change (the preflight gets no CORS headers) nor have a simple text/plain one acted on; a
    page reached through a rebound DNS name gets nothing."""
    registry, view, _ = finished
    reached: list[str] = []  # the job a change got through to (after every check)
    job = registry.job

    def reach(job_id: str) -> Any:
        reached.append(job_id)
        return job(job_id)

    monkeypatch.setattr(registry, "job", reach)
    browser.set_script_timeout(BOUND_S)
    cancel = f"/jobs/{view.job_id}?mode=cancel"
    json_patch = {"method": "PATCH", "headers": {"Content-Type": "application/json"}, "body": "{}"}
    with WebServer(registry, host="localhost", port=0) as server:
        browser.get(server.url)  # the server's own page
        assert browser.execute_async_script(FETCH, cancel, json_patch) == 409  # the job ended
        assert reached == [view.job_id]
        reached.clear()
        # a page of another origin (127.0.0.1 and localhost are two origins)
        browser.get(f"http://127.0.0.1:{server.port}/")
        target = f"http://localhost:{server.port}{cancel}"
        answer = browser.execute_async_script(FETCH, target, json_patch)
        assert str(answer).startswith("refused by the browser"), answer
        simple = {"method": "POST", "mode": "no-cors", "body": '{"drain": false}'}  # text/plain
        stop = f"http://localhost:{server.port}/jobs/{view.job_id}/stop"
        assert browser.execute_async_script(FETCH, stop, simple) == 0  # opaque: sent
        assert reached == []  # ... and refused before it reached the job
        # a rebound name: the page itself is refused
        browser.get(f"http://{REBOUND}:{server.port}/")
        assert "DNS rebinding" in browser.page_source
        answer = browser.execute_async_script(FETCH, f"/jobs/{view.job_id}/stop", json_patch)
        assert answer == 403
        assert reached == []
