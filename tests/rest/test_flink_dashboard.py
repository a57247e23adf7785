"""Flink's own web dashboard on a ckptsim job, in headless Chromium (issue #25, item 3): every
page of a running job, of the same job once it finished, and of its archive served as Flink's
HistoryServer serves it, loads with no error toast and no failed request; each page's own
requests are answered (200) before the page counts as loaded (no sleep: the wait is for those
answers, bounded by a safety net).

The pages: the cluster overview, the job lists, a job's overview and every tab of each of its
vertices (detail, subtasks, task managers, watermarks, accumulators, back-pressure, metrics,
flame graph), its timeline, exceptions, data skew, checkpoints and configuration, its
application, and the Task Manager and Job Manager pages (but for their Profiler tab: ckptsim has
no profiler, and answers as Flink does with profiling off, "File not found.", which the
dashboard shows no error for). The Rescales tab is shown only for the adaptive scheduler.

Skipped, with the reason, where Apache Flink (``apache-flink``, or ``FLINK_HOME``), Chromium,
its driver or Selenium is missing."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive
from actors.connectors import NoTransactions
from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim._web import FlinkDashboard, JobRegistry, WebServer, load_archives
from runtime.job import JobResult
from tests.rest.conftest import NO_FLINK, flink_home
from tests.rest.test_http import BOUND_S, http, until

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (dev extra)"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
)
if CHROMIUM is None or DRIVER is None:
    pytest.skip(
        "headless Chromium is not installed: apt-get install -y chromium chromium-driver",
        allow_module_level=True,
    )
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


@pytest.fixture(scope="module")
def dashboard() -> FlinkDashboard:
    home = flink_home()
    if home is None:
        pytest.skip(NO_FLINK)
    (jar,) = sorted((home / "lib").glob("flink-dist*.jar"))[-1:]
    return FlinkDashboard(jar)


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
        "--window-size=1400,1200",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(BOUND_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# --- what a page asked for and what it got -------------------------------------------------------


@dataclass
class Network:
    """The requests of the dashboard, from Chromium's performance log."""

    base: str
    requested: dict[str, str] = field(default_factory=dict)  # request id -> path
    answered: list[tuple[str, int]] = field(default_factory=list)  # (path, status)
    failed: list[str] = field(default_factory=list)

    def read(self, driver: Any) -> None:
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            params = message.get("params", {})
            method = message.get("method")
            if method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if url.startswith(self.base):
                    self.requested[params["requestId"]] = url[len(self.base) :]
            elif method == "Network.responseReceived" and params["requestId"] in self.requested:
                path = self.requested[params["requestId"]]
                self.answered.append((path, int(params["response"]["status"])))
            elif (
                method == "Network.loadingFailed"
                and params["requestId"] in self.requested
                and params.get("errorText") != "net::ERR_ABORTED"  # left behind by a navigation
            ):
                path = self.requested[params["requestId"]]
                self.failed.append(f"{path}: {params.get('errorText')}")

    def ok(self, expected: str) -> bool:
        """``expected`` was answered 200 (a path ending in ``=`` is a prefix)."""
        return any(
            status == 200
            and (path == expected or (expected.endswith("=") and path.startswith(expected)))
            for path, status in self.answered
        )


#: a request for the cluster's overview, answered 404 (by Flink's HistoryServer)
OVERVIEW_404 = re.compile(
    r": (/overview: 404|console: http://[^/ ]+/overview - Failed to load resource: .* 404)"
)

#: the log URLs of an archived job: Flink's HistoryServer answers them only with
#: historyserver.log.*.url-pattern set, else "File not found." (the dashboard then shows no
#: log link, and no error); ckptsim serve answers as it does without a pattern
LOG_URL = re.compile(r"^/jobs/[0-9a-f]{32}/(jobmanager|taskmanagers/[^/]+)/log-url$")


def visit(
    driver: Any, network: Network, route: str, expected: list[str], *, history: bool = False
) -> list[str]:
    """Open a page of the dashboard; once every request it must make was answered, what went
    wrong on it: failed requests, error toasts, errors in the console."""
    network.read(driver)
    network.answered.clear()
    network.failed.clear()
    driver.get(f"{network.base}/#/{route}")

    def loaded() -> bool:
        network.read(driver)
        return all(network.ok(e) for e in expected)

    until(loaded, f"the requests of #/{route}: {expected}")
    network.read(driver)
    no_log = [p for p, status in network.answered if history and status == 404 and LOG_URL.match(p)]
    problems = [
        f"{path}: {status}"
        for path, status in network.answered
        if status >= 400 and path not in no_log
    ]
    problems += network.failed
    problems += [
        "toast: " + toast.text.replace("\n", " ")[:300]
        for toast in driver.find_elements("css selector", ".ant-notification-notice")
    ]
    console = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    if no_log:  # the dashboard logs the answer it expected, and Angular its unhandled error
        console = [
            m for m in console if not any(p in m for p in no_log) and not m.endswith('"ERROR" ye')
        ]
    problems += ["console: " + m[:300] for m in console]
    return [f"#/{route}: {p}" for p in problems]


def job_pages(
    job_id: str, vertices: list[str], state: str, *, history: bool
) -> list[tuple[str, list[str]]]:
    """Every page of a job in the dashboard, with the requests each must make."""
    base = f"/jobs/{job_id}"
    page = f"job/{state}/{job_id}"
    pages: list[tuple[str, list[str]]] = [
        (f"job/{state}", ["/jobs/overview"]),
        (f"{page}/overview", [base]),
    ]
    tabs = {
        "detail": [base],
        "subtasks": ["{v}"],
        "taskmanagers": ["{v}/taskmanagers"],
        "watermarks": ["{v}/watermarks"],
        "accumulators": ["{v}/accumulators", "{v}/subtasks/accumulators"],
        "backpressure": ["{v}/backpressure"],
        "metrics": ["{v}/metrics"],
    }
    if not history:
        tabs["flamegraph"] = ["{v}/flamegraph?type=on_cpu"]
    for vertex in vertices:
        # to another vertex through the job's graph, as a user clicks it (straight from one
        # vertex's drawer to another's, Flink 2.3's dashboard itself fails: "Cannot read
        # properties of undefined (reading 'data')", against a real Flink as well)
        pages.append((f"{page}/overview", [base]))
        v = f"{base}/vertices/{vertex}"
        for tab, wanted in tabs.items():
            pages.append((f"{page}/overview/{vertex}/{tab}", [w.format(v=v) for w in wanted]))
    pages += [
        (f"{page}/timeline", [base]),
        (f"{page}/exceptions", [f"{base}/exceptions?maxExceptions=10"]),
        (f"{page}/checkpoints", [f"{base}/checkpoints", f"{base}/checkpoints/config"]),
        (f"{page}/configuration", [f"{base}/config"]),
        (
            f"{page}/dataskew",
            [f"{base}/vertices/{v}/subtasks/metrics?get=numRecordsIn" for v in vertices],
        ),
        (f"application/{state}", ["/applications/overview"]),
        (f"application/{state}/{job_id}/overview", [f"/applications/{job_id}"]),
        (f"application/{state}/{job_id}/exceptions", [f"/applications/{job_id}/exceptions"]),
    ]
    if history:
        pages.append(
            (
                f"{page}/cluster_configuration",
                [f"{base}/jobmanager/config", f"{base}/jobmanager/environment"],
            )
        )
    return pages


def cluster_pages(taskmanager: str) -> list[tuple[str, list[str]]]:
    tm = f"/taskmanagers/{taskmanager}"
    return [
        ("overview", ["/overview", "/applications/overview"]),
        ("task-manager", ["/taskmanagers"]),
        (f"task-manager/{taskmanager}/metrics", [tm, f"{tm}/metrics?get="]),
        (f"task-manager/{taskmanager}/logs", [f"{tm}/log"]),
        (f"task-manager/{taskmanager}/stdout", [f"{tm}/stdout"]),
        (f"task-manager/{taskmanager}/log-list", [f"{tm}/logs"]),
        (f"task-manager/{taskmanager}/thread-dump", [f"{tm}/thread-dump"]),
        ("job-manager/metrics", ["/jobmanager/metrics?get="]),
        ("job-manager/config", ["/jobmanager/config", "/jobmanager/environment"]),
        ("job-manager/logs", ["/jobmanager/log"]),
        ("job-manager/stdout", ["/jobmanager/stdout"]),
        ("job-manager/log", ["/jobmanager/logs"]),
        ("job-manager/thread-dump", ["/jobmanager/thread-dump"]),
    ]


# --- the job ---------------------------------------------------------------------------------------


class _Discard(NoTransactions):
    def write(self, records: Any) -> None:
        pass

    def pre_commit(self, checkpoint_id: int) -> None:
        return None

    def close(self, *, finished: bool) -> None:
        return None


def _job(registry: JobRegistry, results: list[JobResult]) -> threading.Thread:
    """A keyed sum on threads, held open by its rate-limited source, checkpointing, that fails
    over once (an exception to show)."""
    env = StreamExecutionEnvironment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    env.configure(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 2,
            "restart-strategy.fixed-delay.delay": "10 ms",
            "ckptsim.buffer.records": 100,
            # a checkpoint every 200 ms leaves a history of 10 (and the details cache after it)
            # within 4 s: a page that lists one asks for its details later than that on a busy
            # machine, and gets Flink's 404 (so would Flink's dashboard, against Flink)
            "web.checkpoints.history": 200,
        }
    )
    (
        env.from_generator(lambda i: i, 50_000_000, rate=5_000, name="seq")
        .map(lambda i: (i % 100, 1), name="Map")
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Reduce")
        .sink_to(lambda **_: _Discard(), name="Discard")
    )
    thread = threading.Thread(
        target=lambda: results.append(
            env.execute(
                "dashboard job",
                observer=registry,
                timeout=BOUND_S * 20,
                faults=[FailTask(task="reduce-3#0", at_record=2_000)],
            )
        ),
        daemon=True,
    )
    thread.start()
    return thread


def test_every_page_of_flinks_dashboard_loads_without_an_error(
    dashboard: FlinkDashboard, browser: Any, tmp_path: Path
) -> None:
    registry = JobRegistry()
    results: list[JobResult] = []
    problems: list[str] = []
    with WebServer(registry, host="localhost", port=0, dashboard=dashboard) as server:
        base = server.url.rstrip("/")
        thread = _job(registry, results)
        job_id: str = until(lambda: next(iter(registry.live), None), "the job to start")
        job_path = f"/jobs/{job_id}"

        def running_again() -> bool:  # failed over once, running and checkpointing again
            job = http(server, "GET", job_path)[1]
            counts = http(server, "GET", f"{job_path}/checkpoints")[1].get("counts", {})
            return (
                job["state"] == "RUNNING"
                and bool(job["timestamps"]["RESTARTING"])
                and counts.get("completed", 0) >= 2
            )

        until(running_again, "the job to fail over and checkpoint again")
        trigger = http(
            server, "POST", f"{job_path}/savepoints", {"target-directory": str(tmp_path)}
        )
        until(
            lambda: (
                http(server, "GET", f"{job_path}/savepoints/{trigger[1]['request-id']}")[1][
                    "status"
                ]["id"]
                == "COMPLETED"
            ),
            "a savepoint",
        )
        vertices = [v["id"] for v in http(server, "GET", job_path)[1]["vertices"]]
        (taskmanager,) = [t["id"] for t in http(server, "GET", "/taskmanagers")[1]["taskmanagers"]]
        network = Network(base)
        browser.get(base + "/")
        pages = cluster_pages(taskmanager) + job_pages(job_id, vertices, "running", history=False)
        for route, expected in pages:
            problems += visit(browser, network, route, expected)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.get(f"{base}/#/job/running/{job_id}/checkpoints")
        browser.save_screenshot(str(SCREENSHOTS / "flink-dashboard-running.png"))
        # the same job, finished (stop-with-savepoint)
        http(server, "POST", f"{job_path}/stop", {"targetDirectory": str(tmp_path)})
        thread.join(BOUND_S)
        assert results and results[0].status.value == "FINISHED"
        browser.get(base + "/")
        pages = cluster_pages(taskmanager) + job_pages(job_id, vertices, "completed", history=False)
        for route, expected in pages:
            problems += visit(browser, network, route, expected)
        (view,) = registry.finished_views()
    # its archive, served as Flink's HistoryServer serves it (ckptsim serve)
    archive = write_archive(view, tmp_path / "archive")
    with WebServer(
        JobRegistry(load_archives([str(archive)])), host="localhost", port=0, dashboard=dashboard
    ) as history:
        network = Network(history.url.rstrip("/"))
        browser.get(history.url)
        problems += visit(browser, network, "overview", ["/overview", "/applications/overview"])
        for route, expected in job_pages(job_id, vertices, "completed", history=True):
            problems += visit(browser, network, route, expected, history=True)
        browser.get(f"{network.base}/#/job/completed/{job_id}/checkpoints")
        browser.save_screenshot(str(SCREENSHOTS / "flink-dashboard-history.png"))
    assert not problems, "\n".join(problems)


def test_every_page_of_flinks_historyserver_shows_a_ckptsim_archive(
    browser: Any, tmp_path: Path, finished: Any
) -> None:
    """Flink's own HistoryServer (its JVM, its copy of the dashboard) over a plain ``--stats``
    archive of a job that failed over once and had a checkpoint expire: the job under its
    application, every page of it without an error."""
    from tests.rest.test_flink_historyserver import HistoryServer  # noqa: PLC0415

    home = flink_home()
    if home is None:
        pytest.skip(NO_FLINK)
    _, view, _ = finished
    archives = tmp_path / "archives"
    archives.mkdir()
    write_archive(view, archives / view.job_id)
    server = HistoryServer(home, archives, tmp_path)
    try:
        server.until(
            lambda: (server.get("/applications/overview") or {}).get("applications"),
            "Flink's HistoryServer to list the archive's application",
        )
        network = Network(f"http://localhost:{server.port}")
        browser.get(network.base + "/")
        problems: list[str] = []
        vertices = [v.id for v in view.vertices]
        for route, expected in job_pages(view.job_id, vertices, "completed", history=True):
            problems += visit(browser, network, route, expected, history=True)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.get(f"{network.base}/#/job/completed/{view.job_id}/checkpoints")
        browser.save_screenshot(str(SCREENSHOTS / "flink-historyserver.png"))
    finally:
        server.stop()
    # but one: the dashboard's start page asks for /overview, which Flink's HistoryServer does
    # not serve (it writes no such file, for Flink's own archives either)
    assert not [p for p in problems if not OVERVIEW_404.search(p)], "\n".join(problems)


#: task metrics the Metrics tab must list and show a number for (by vertex: the source's, the
#: keyed one's), with an operator's
SHOWN_METRICS = (
    [
        "numRecordsOutPerSecond",
        "idleTimeMsPerSecond",
        "mailboxMailsPerSecond",
        "Shuffle.Netty.Output.Buffers.outPoolUsage",
        "Source__seq.numRecordsOut",
    ],
    [
        "numRecordsInPerSecond",
        "backPressuredTimeMsPerSecond",
        "busyTimeMsPerSecond",
        "Shuffle.Netty.Input.Buffers.inPoolUsage",
        "Reduce.numRecordsInPerSecond",
    ],
)


def test_the_metrics_tab_of_flinks_dashboard_lists_and_shows_the_task_metrics(
    dashboard: FlinkDashboard, browser: Any
) -> None:
    """The Metrics tab of each vertex of a running job: its selector lists the task metrics
    (``isBackPressured`` among them); each one chosen gets its chart, whose numeric view shows
    a number once the dashboard fetched it (``.../metrics?get=...``, answered 200), with no
    error toast, failed request or console error. The job runs past the first 5 s sample, so
    the rates are a minute's ``MeterView`` of something."""
    registry = JobRegistry()
    results: list[JobResult] = []
    problems: list[str] = []
    with WebServer(registry, host="localhost", port=0, dashboard=dashboard) as server:
        base = server.url.rstrip("/")
        thread = _job(registry, results)
        job_id: str = until(lambda: next(iter(registry.live), None), "the job to start")
        job_path = f"/jobs/{job_id}"
        vertices = until(
            lambda: [v["id"] for v in http(server, "GET", job_path)[1].get("vertices", [])],
            "the job's vertices",
        )

        def sampled() -> bool:  # a 5 s sample was taken: the rate is above 0
            path = f"{job_path}/vertices/{vertices[1]}/metrics?get=0.numRecordsInPerSecond"
            body = http(server, "GET", path)[1]
            return bool(body) and float(body[0]["value"]) > 0

        until(sampled, "a sample of the records-in meter")
        network = Network(base)
        browser.get(base + "/")
        for vertex, names in zip(vertices, SHOWN_METRICS, strict=True):
            route = f"job/running/{job_id}/overview/{vertex}/metrics"
            problems += visit(browser, network, route, [f"{job_path}/vertices/{vertex}/metrics"])
            browser.find_element("css selector", ".metric-selector .ant-select-selector").click()
            titles = {
                o.get_attribute("title")
                for o in browser.find_elements("css selector", ".ant-select-item-option")
            }
            assert "0.accumulateBackPressuredTimeMs" in titles, titles
            search = browser.find_element("css selector", ".metric-selector input")
            search.send_keys("isBackPressured")
            until(
                lambda: browser.find_elements(
                    "css selector", '.ant-select-item-option[title="0.isBackPressured"]'
                ),
                "isBackPressured in the metric list",
            )
            search.send_keys(*["\b"] * len("isBackPressured"))
            for name in names:
                _show_metric(browser, network, f"0.{name}")
                network.read(browser)
            problems += [f"#/{route}: {p}" for p in _problems(browser, network)]
        http(server, "PATCH", job_path)  # cancel
        thread.join(BOUND_S)
    assert not problems, "\n".join(problems)


def _show_metric(browser: Any, network: Network, metric: str) -> None:
    """Choose ``metric`` in the Metrics tab's selector, switch its chart to its numeric view
    and wait for a number there."""
    search = browser.find_element("css selector", ".metric-selector input")
    search.send_keys(metric)
    option = until(
        lambda: browser.find_elements("css selector", f'.ant-select-item-option[title="{metric}"]'),
        f"{metric} in the metric list",
    )
    option[0].click()

    def chart() -> Any:
        for element in browser.find_elements("css selector", "flink-job-chart"):
            title = element.find_elements("css selector", ".title .text")
            if title and title[0].get_attribute("title") == metric:
                return element
        return None

    shown = until(chart, f"the chart of {metric}")
    (numeric,) = [
        b for b in shown.find_elements("css selector", "button") if b.text.strip() == "Numeric"
    ]
    numeric.click()

    def number() -> bool:
        network.read(browser)
        fetched = any(
            status == 200 and "/metrics?get=" in path and metric in path
            for path, status in network.answered
        )
        text = shown.find_element("css selector", ".numeric").text.strip()
        # the dashboard writes a rate as "1249.95 / s"
        return fetched and re.fullmatch(r"-?\d+(\.\d+)?( / s)?", text) is not None

    until(number, f"a number in the chart of {metric}")


def _problems(browser: Any, network: Network) -> list[str]:
    """Failed requests, error toasts and console errors so far on the page."""
    network.read(browser)
    problems = [f"{path}: {status}" for path, status in network.answered if status >= 400]
    problems += network.failed
    problems += [
        "toast: " + toast.text.replace("\n", " ")[:300]
        for toast in browser.find_elements("css selector", ".ant-notification-notice")
    ]
    problems += [
        "console: " + e["message"][:300]
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE"
    ]
    return problems
