"""Flink's metrics on ckptsim (issue 23): a PyFlink program's own metrics (a counter, key-value
groups, a gauge, a meter, a distribution: ``tests/pyflink/programs/rejected_orders.py``) and
the task, operator and job metrics Flink reports, on the REST paths Flink's dashboard reads
(``/jobs/:jobid/vertices/:vertexid/metrics``, ``.../subtasks/metrics``,
``.../subtasks/:subtaskindex/metrics``, ``/jobs/:jobid/metrics``) and in Prometheus' text
format as Flink's PrometheusReporter serves them. The counts are checked against what Apache
Flink 2.3 printed for the same program (``tests/pyflink/expected/rejected_orders.out``)."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from actors.session import Session
from ckptsim._cli import main
from ckptsim._client import PROMETHEUS_FACTORY, RunOutputs
from ckptsim._prometheus import PrometheusReporter, metric_name, ports
from ckptsim._scripts import run_script
from ckptsim._web import JobRegistry
from runtime import rest
from runtime.job import JobResult
from tests.pyflink.compare import PROGRAMS, expected_output
from tests.rest.test_http import until

Finished = tuple[JobRegistry, rest.JobView, JobResult]
#: Flink's name of the keyed process function's operator in metric identifiers
CHECK = "KEYED PROCESS"


def flink_printed(prefix: str) -> list[str]:
    return [
        line for line in expected_output("rejected_orders").splitlines() if line.startswith(prefix)
    ]


@pytest.fixture(scope="module")
def orders() -> Finished:
    """``rejected_orders.py`` run on the simulation, its job in a registry."""
    registry = JobRegistry()
    session = Session(
        settings={"parallelism.default": "2"},
        options={"observer": registry, "runtime": "simulation", "seed": 1},
    )
    result = run_script(str(PROGRAMS / "rejected_orders.py"), session)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    return registry, view, result


def get(registry: JobRegistry, path: str, query: dict[str, str]) -> Any:
    return registry.get(path, query)


def _amount(line: str) -> int:
    """The amount of an order in a line the program printed."""
    text = line.split(": ", 1)[1].removeprefix("invalid amount ")
    return int(text.split()[0])


def _check_vertex(view: rest.JobView) -> rest.VertexView:
    (vertex,) = [v for v in view.vertices if any(CHECK in op for op in v.operators)]
    return vertex


def _operator(vertex: rest.VertexView) -> str:
    (name,) = [op for op in vertex.operators if CHECK in op]
    return rest.metric_scope_name(name)


def _values(registry: JobRegistry, path: str, names: list[str]) -> dict[str, str]:
    body = get(registry, path, {"get": ",".join(names)})
    return {m["id"]: m["value"] for m in body}


def test_a_programs_metrics_are_listed_under_its_operator(orders: Finished) -> None:
    registry, view, _ = orders
    vertex = _check_vertex(view)
    op = _operator(vertex)
    listed = {
        m["id"] for m in get(registry, f"/jobs/{view.job_id}/vertices/{vertex.id}/metrics", {})
    }
    for i in range(vertex.parallelism):
        assert {
            f"{i}.{op}.orders.rejected",
            f"{i}.{op}.reason.over_limit.rejected",
            f"{i}.{op}.reason.invalid.rejected",
            f"{i}.{op}.largestOrder",
            f"{i}.{op}.checksPerSecond",
            f"{i}.{op}.orderAmount",
            f"{i}.{op}.numRecordsIn",
            f"{i}.{op}.numRecordsOut",
            f"{i}.{op}.numRecordsInPerSecond",
            f"{i}.{op}.currentInputWatermark",
            f"{i}.{op}.currentOutputWatermark",
            f"{i}.numRecordsIn",
            f"{i}.currentInputWatermark",
            f"{i}.checkpointAlignmentTime",
            f"{i}.checkpointStartDelayNanos",
        } <= listed


def test_a_programs_counters_count_what_flink_printed(orders: Finished) -> None:
    registry, view, _ = orders
    vertex = _check_vertex(view)
    op = _operator(vertex)
    path = f"/jobs/{view.job_id}/vertices/{vertex.id}/metrics"
    subtasks = range(vertex.parallelism)
    names = ["orders.rejected", "reason.over_limit.rejected", "reason.invalid.rejected"]
    names += ["numRecordsIn", "numRecordsOut", "orderAmount", "largestOrder"]
    values = _values(registry, path, [f"{i}.{op}.{n}" for i in subtasks for n in names])

    def total(name: str) -> int:
        return sum(int(values[f"{i}.{op}.{name}"]) for i in subtasks)

    rejected, accepted = flink_printed("rejected"), flink_printed("accepted")
    assert total("orders.rejected") == len(rejected) > 0
    invalid = [line for line in rejected if "invalid amount" in line]
    assert total("reason.invalid.rejected") == len(invalid) > 0
    assert total("reason.over_limit.rejected") == len(rejected) - len(invalid)
    assert total("numRecordsIn") == len(rejected) + len(accepted) == 60
    # records out counts the side output's records too, as Flink's operator output does
    assert total("numRecordsOut") == 60
    # the gauge: each subtask's largest order; the distribution: Beam's result, as PyFlink's
    largest = max(int(values[f"{i}.{op}.largestOrder"]) for i in subtasks)
    assert largest == max(_amount(line) for line in accepted + rejected)
    counts = [values[f"{i}.{op}.orderAmount"] for i in subtasks]
    assert all(c.startswith("DistributionResult{sum=") for c in counts)
    assert sum(int(c.split("count=")[1].split(",")[0]) for c in counts) == 60
    # Flink's text of a watermark gauge before any watermark: Long.MIN_VALUE
    wm = _values(registry, path, ["0.currentInputWatermark"])
    assert int(wm["0.currentInputWatermark"]) in (-(2**63), 2**63 - 1)


def test_aggregated_and_one_subtasks_metrics(orders: Finished) -> None:
    registry, view, _ = orders
    vertex = _check_vertex(view)
    op = _operator(vertex)
    base = f"/jobs/{view.job_id}/vertices/{vertex.id}"
    (aggregated,) = get(registry, f"{base}/subtasks/metrics", {"get": f"{op}.orders.rejected"})
    assert aggregated["id"] == f"{op}.orders.rejected"
    assert aggregated["sum"] == len(flink_printed("rejected"))
    assert aggregated["min"] <= aggregated["avg"] <= aggregated["max"]
    one = {m["id"] for m in get(registry, f"{base}/subtasks/1/metrics", {})}
    assert {f"{op}.orders.rejected", "numRecordsIn", f"{op}.numRecordsIn"} <= one
    (counted,) = get(registry, f"{base}/subtasks/1/metrics", {"get": f"{op}.numRecordsIn"})
    every = _values(registry, f"{base}/metrics", [f"1.{op}.numRecordsIn"])
    assert counted["value"] == every[f"1.{op}.numRecordsIn"]
    with pytest.raises(rest.RestError) as error:
        get(registry, f"{base}/subtasks/{vertex.parallelism}/metrics", {})
    assert error.value.status == 404


def test_a_source_has_no_input_watermark_or_alignment(orders: Finished) -> None:
    registry, view, _ = orders
    source = view.vertices[0]
    listed = {
        m["id"] for m in get(registry, f"/jobs/{view.job_id}/vertices/{source.id}/metrics", {})
    }
    assert "0.checkpointStartDelayNanos" in listed
    assert "0.currentInputWatermark" not in listed and "0.checkpointAlignmentTime" not in listed
    op = rest.metric_scope_name(source.operators[0])
    assert op.startswith("Source__")  # Flink's metric query service: ': ' -> '__'
    assert f"0.{op}.currentOutputWatermark" in listed
    assert f"0.{op}.currentInputWatermark" not in listed


def test_the_job_metrics_are_its_checkpoints_and_restarts(finished: Finished) -> None:
    """The keyed sum of the REST tests: checkpoints, one expired, a task failure."""
    registry, view, _ = finished
    listed = {m["id"] for m in get(registry, f"/jobs/{view.job_id}/metrics", {})}
    assert {
        "numberOfCompletedCheckpoints",
        "numberOfFailedCheckpoints",
        "numberOfInProgressCheckpoints",
        "totalNumberOfCheckpoints",
        "lastCheckpointDuration",
        "lastCheckpointSize",
        "lastCheckpointFullSize",
        "lastCompletedCheckpointId",
        "lastCheckpointRestoreTimestamp",
        "numRestarts",
        "uptime",
        "downtime",
    } <= listed
    values = _values(registry, f"/jobs/{view.job_id}/metrics", sorted(listed))
    checkpoints = get(registry, f"/jobs/{view.job_id}/checkpoints", {})
    counts, latest = checkpoints["counts"], checkpoints["latest"]["completed"]
    assert int(values["numberOfCompletedCheckpoints"]) == counts["completed"] > 0
    assert int(values["numberOfFailedCheckpoints"]) == counts["failed"] > 0
    assert int(values["totalNumberOfCheckpoints"]) == counts["total"]
    assert int(values["lastCompletedCheckpointId"]) == latest["id"]
    assert int(values["lastCheckpointDuration"]) == latest["end_to_end_duration"]
    assert int(values["lastCheckpointSize"]) == latest["checkpointed_size"] > 0
    assert int(values["lastCheckpointRestoreTimestamp"]) > view.epoch_ms  # it was restored
    assert values["numRestarts"] == "1"
    assert values["lastCheckpointExternalPath"].startswith("file:")


# --- Prometheus ----------------------------------------------------------------------------------


def scrape(reporter: PrometheusReporter) -> dict[str, Any]:
    """Every sample of the reporter's page: name -> [(labels, value)]."""
    with urllib.request.urlopen(reporter.url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


@pytest.fixture
def reporter(orders: Finished) -> Iterator[PrometheusReporter]:
    running = PrometheusReporter(orders[0], "0", "localhost")
    yield running
    running.stop()


def test_prometheus_serves_flinks_names_and_labels(
    reporter: PrometheusReporter, orders: Finished
) -> None:
    _, view, _ = orders
    samples = scrape(reporter)
    operator = "flink_taskmanager_job_task_operator_"
    rejected = samples[operator + "orders_rejected"]
    assert sum(v for _, v in rejected) == len(flink_printed("rejected"))
    labels = rejected[0][0]
    # label values as Flink's reporter filters them (filterLabelValueCharacters, the default):
    # each character outside [a-zA-Z0-9:_] becomes _
    assert labels["job_id"] == view.job_id and labels["job_name"] == "rejected_orders"
    assert all(re.fullmatch(r"[a-zA-Z0-9:_]*", v) for v in labels.values())
    assert {"task_name", "task_id", "subtask_index", "operator_name", "tm_id", "host"} <= set(
        labels
    )
    assert sorted(labels["subtask_index"] for labels, _ in rejected) == ["0", "1"]
    # a key-value group: its key in the name, its value a label
    by_reason = {
        (labels["reason"], labels["subtask_index"]): v
        for labels, v in samples[operator + "reason_rejected"]
    }
    assert sum(v for (reason, _), v in by_reason.items() if reason == "invalid") == len(
        [line for line in flink_printed("rejected") if "invalid amount" in line]
    )
    assert sum(v for _, v in samples[operator + "orderAmount_count"]) == 60
    assert operator + "largestOrder" in samples and operator + "checksPerSecond" in samples
    records_in = {
        labels["operator_name"]: v
        for labels, v in samples[operator + "numRecordsIn"]
        if labels["subtask_index"] == "0"
    }
    assert any(CHECK.replace(" ", "_") in name for name in records_in)
    assert sum(v for _, v in samples["flink_taskmanager_job_task_numRecordsIn"]) >= 60
    (completed,) = samples["flink_jobmanager_job_numberOfCompletedCheckpoints"]
    assert completed[0] == {
        "job_id": view.job_id,
        "job_name": "rejected_orders",
        "host": "localhost",
    }


def test_prometheus_label_values_unfiltered_when_flinks_option_is_off(
    orders: Finished,
) -> None:
    """``metrics.reporter.prom.filterLabelValueCharacters: false`` sends names as they are."""
    unfiltered = PrometheusReporter(orders[0], "0", "localhost", filter_label_values=False)
    try:
        samples = scrape(unfiltered)
    finally:
        unfiltered.stop()
    (completed,) = samples["flink_jobmanager_job_numberOfCompletedCheckpoints"]
    assert completed[0]["job_name"] == "rejected orders"
    task_names = {
        labels["task_name"] for labels, _ in samples["flink_taskmanager_job_task_numRecordsIn"]
    }
    assert any(" -> " in name for name in task_names), task_names


def test_prometheus_scrapes_a_running_job(live: Any) -> None:
    job, _server = live
    with_reporter = PrometheusReporter(job.registry, "0", "localhost")
    try:
        name = "flink_taskmanager_job_task_operator_numRecordsIn"

        def reduced() -> float:
            samples = scrape(with_reporter).get(name, [])
            return sum(v for labels, v in samples if labels["operator_name"] == "Reduce")

        first = until(reduced, "records in at the Reduce")
        assert first > 0
        until(lambda: reduced() > first, "more records in at the Reduce")
        assert reduced() > first  # the counter grows while the job runs
    finally:
        with_reporter.stop()


def test_names_and_port_ranges() -> None:
    assert metric_name("taskmanager", "job", "task", "operator", "my-group", "a.b") == (
        "flink_taskmanager_job_task_operator_my_group_a_b"
    )
    assert ports("9250-9252") == [9250, 9251, 9252]
    assert ports("0") == [0]
    for wrong in ("70000", "9252-9250"):
        with pytest.raises(ValueError, match="port"):
            ports(wrong)
    for not_a_port in ("abc", "9250-x", "-1", "9249.0"):  # was int()'s 'invalid literal'
        with pytest.raises(ValueError) as caught:
            ports(not_a_port)
        assert str(caught.value) == (
            f"metrics.reporter.prom.port {not_a_port}: give a port (9249) or a range (9250-9260)"
        )


def test_run_starts_the_reporter_when_configured(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse  # noqa: PLC0415

    args = argparse.Namespace(stats=None, timeline=None, web=False, flink_dashboard=False)
    settings = {
        "metrics.reporter.prom.factory.class": PROMETHEUS_FACTORY,
        "metrics.reporter.prom.port": "0",
        "metrics.reporter.prom.host": "localhost",
    }
    outputs = RunOutputs.prepare(args, settings)
    try:
        assert outputs.reporter is not None and outputs.options["observer"] is outputs.registry
        assert f"Prometheus metrics: {outputs.reporter.url}" in capsys.readouterr().err
        assert scrape(outputs.reporter) == {}  # no job yet
    finally:
        outputs.close()
    other = {"metrics.reporter.prom.factory.class": "org.example.JmxReporterFactory"}
    assert RunOutputs.prepare(args, other).reporter is None
    assert "JmxReporterFactory ignored" in capsys.readouterr().err


def test_a_program_setting_the_reporter_itself_runs_and_is_told_where_the_keys_go(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "from pyflink.common import Configuration\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "config = Configuration()\n"
        'config.set_string("metrics.reporter.prom.port", "9250")\n'
        "env = StreamExecutionEnvironment.get_execution_environment(config)\n"
        "env.from_collection([1, 2]).print()\n"
        "env.execute()\n"
    )
    code = main(["run", str(script), "--simulate", "--log-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(line.split("> ")[-1] for line in out.splitlines()) == ["1", "2"]
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    (ignored,) = [e for e in events if e["event"] == "pyflink_call_ignored"]
    assert ignored["call"] == "configuration key metrics.reporter.prom.port"
    assert "-D on the ckptsim run command line" in ignored["reason"]


def test_metrics_leave_a_simulated_run_replayable(orders: Finished) -> None:
    """The same seed again: the same output and the same metrics, a meter's rate (measured on
    the simulation's virtual clock) included."""
    _, view, result = orders
    registry = JobRegistry()
    session = Session(
        settings={"parallelism.default": "2"},
        options={"observer": registry, "runtime": "simulation", "seed": 1},
    )
    again = run_script(str(PROGRAMS / "rejected_orders.py"), session)
    (other,) = registry.finished_views()
    assert again.output == result.output
    vertex = _check_vertex(view)

    def user(v: rest.JobView) -> list[Any]:
        return [
            s.metrics["operators"]
            for s in next(x for x in v.vertices if x.id == vertex.id).subtasks
        ]

    assert user(other) == user(view)
    assert any(op["user"] for ops in user(view) for op in ops.values())


LATE_SCRIPT = """
from ckptsim import TumblingEventTimeWindows, WatermarkStrategy

def stamp(i):
    # every tenth record is 5 s late in event time
    return (i, i * 100 - (5000 if i % 10 == 0 else 0))

def build(env):
    env.set_parallelism(1)
    (
        env.from_generator(stamp, 8000, rate=1000)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                lambda e, _: e[1]
            )
        )
        .map(lambda e: ("all", 1))
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Count")
        .collect("counts")
    )
"""


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    """A window that drops late records (no side output), on the simulation."""
    script = tmp_path_factory.mktemp("late") / "late.py"
    script.write_text(LATE_SCRIPT)
    registry = JobRegistry()
    session = Session(
        settings={"pipeline.auto-watermark-interval": "5 ms", "ckptsim.buffer.records": "10"},
        options={"observer": registry, "runtime": "simulation", "seed": 3},
    )
    result = run_script(str(script), session)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    return registry, view, result


def test_a_window_counts_the_late_records_it_dropped(late: Finished) -> None:
    registry, view, result = late
    counted = sum(n for _, n in result.collected("counts"))
    (vertex,) = [v for v in view.vertices if any("Count" in op for op in v.operators)]
    (op,) = [rest.metric_scope_name(o) for o in vertex.operators if "Count" in o]
    path = f"/jobs/{view.job_id}/vertices/{vertex.id}/metrics"
    values = _values(registry, path, [f"0.{op}.numLateRecordsDropped", f"0.{op}.numRecordsIn"])
    dropped = int(values[f"0.{op}.numLateRecordsDropped"])
    assert int(values[f"0.{op}.numRecordsIn"]) == 8000
    assert dropped > 0 and counted + dropped == 8000


def test_the_task_io_mailbox_and_buffer_metrics_are_listed_with_flinks_names(
    late: Finished,
) -> None:
    registry, view, _ = late
    for vertex in view.vertices:
        path = f"/jobs/{view.job_id}/vertices/{vertex.id}/metrics"
        listed = {m["id"] for m in get(registry, path, {})}
        names = [
            "numRecordsInPerSecond",
            "numRecordsOutPerSecond",
            "numBytesInPerSecond",
            "numBytesOutPerSecond",
            "numBuffersOut",
            "numBuffersOutPerSecond",
            "isBackPressured",
            "backPressuredTimeMsPerSecond",
            "idleTimeMsPerSecond",
            "busyTimeMsPerSecond",
            "mailboxMailsPerSecond",
            "mailboxQueueSize",
        ]
        if vertex.inputs:
            names += ["Shuffle.Netty.Input.Buffers.inPoolUsage"]
            names += ["Shuffle.Netty.Input.Buffers.inputQueueLength"]
        else:
            names += ["Shuffle.Netty.Output.Buffers.outPoolUsage"]
            names += ["Shuffle.Netty.Output.Buffers.outputQueueLength"]
        assert {f"0.{n}" for n in names} <= listed
        values = _values(registry, path, [f"0.{n}" for n in names])
        # Flink's types as text: a boolean gauge, TimerGauges' longs, meters' doubles
        assert values["0.isBackPressured"] in ("true", "false")
        assert values["0.idleTimeMsPerSecond"].isdigit()
        assert float(values["0.busyTimeMsPerSecond"]) == 1000 - int(
            values["0.idleTimeMsPerSecond"]
        ) - int(values["0.backPressuredTimeMsPerSecond"])
        # an 8 s run: one sample (at 5 s) of a minute's MeterView: about 5000 records over
        # 60 s, not 1000 a second over the run
        if vertex.inputs:
            rate = float(values["0.numRecordsInPerSecond"])
            assert 4000 / 60 < rate <= 5001 / 60


def test_prometheus_has_the_task_and_buffer_metrics(late: Finished) -> None:
    registry, _, _ = late
    reporter = PrometheusReporter(registry, "0", host="127.0.0.1")
    try:
        samples = scrape(reporter)
    finally:
        reporter.stop()
    task = "flink_taskmanager_job_task_"
    for name in (
        "isBackPressured",
        "idleTimeMsPerSecond",
        "mailboxMailsPerSecond",
        "Shuffle_Netty_Output_Buffers_outPoolUsage",
        "Shuffle_Netty_Input_Buffers_inPoolUsage",
    ):
        assert task + name in samples, name
    assert sum(v for _, v in samples[task + "operator_numLateRecordsDropped"]) > 0


def test_the_reporter_keys_work_from_flinks_config_file_and_d_overrides_them(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``$FLINK_CONF_DIR/config.yaml`` as Flink 2 writes it (nested maps, a copy of its
    ``conf/`` with keys that change nothing here): the reporter keys in it start the reporter
    of ``ckptsim run``; ``-D`` wins over the file."""
    (tmp_path / "config.yaml").write_text(
        "# Flink's conf/config.yaml\n"
        "jobmanager:\n"
        "  memory:\n"
        "    process.size: 1600m\n"
        "metrics:\n"
        "  reporter:\n"
        "    prom:\n"
        f"      factory.class: {PROMETHEUS_FACTORY}  # Prometheus\n"
        '      port: "1"\n'
        "      host: localhost\n"
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(tmp_path))
    script = tmp_path / "job.py"
    script.write_text(
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2]).print()\n"
        "env.execute()\n"
    )
    code = main(["run", str(script), "--simulate", "-D", "metrics.reporter.prom.port=0"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(line.split("> ")[-1] for line in out.splitlines()) == ["1", "2"]
    assert "Prometheus metrics: http://localhost:" in err  # port 0 (-D), not 1 (the file)
    assert "jobmanager.memory.process.size change nothing here" in err
    (tmp_path / "config.yaml").unlink()
    assert main(["run", str(script), "--simulate"]) == 2
    assert "has no config.yaml" in capsys.readouterr().err


def test_aggregated_subtask_metrics_as_flinks_handler(orders: Finished) -> None:
    """``/vertices/:id/subtasks/metrics``: without ``get`` the ids the subtasks have;
    ``agg=`` keeps only those aggregations; ``subtasks=`` aggregates over those indexes only;
    a wrong ``agg`` or ``subtasks`` is Flink's 400."""
    _, view, _ = orders
    vertex = next(v for v in view.vertices if len(v.subtasks) == 2)
    ids = rest.subtask_metrics_body(view, vertex, None)
    assert {"id": "numRecordsIn"} in ids and all(set(item) == {"id"} for item in ids)
    (both,) = rest.subtask_metrics_body(view, vertex, "numRecordsIn")
    assert set(both) == {"id", "min", "max", "avg", "sum", "skew"}
    (picked,) = rest.subtask_metrics_body(view, vertex, "numRecordsIn", "sum,MAX")
    assert picked == {"id": "numRecordsIn", "max": both["max"], "sum": both["sum"]}
    (first,) = rest.subtask_metrics_body(view, vertex, "numRecordsIn", "sum", "0")
    (second,) = rest.subtask_metrics_body(view, vertex, "numRecordsIn", "sum", "1-1")
    assert first["sum"] + second["sum"] == both["sum"] and 0 < first["sum"] < both["sum"]
    for agg, subtasks in (("median", ""), ("", "x"), ("", "3-1")):
        with pytest.raises(rest.RestError) as refused:
            rest.subtask_metrics_body(view, vertex, "numRecordsIn", agg, subtasks)
        assert refused.value.status == 400
