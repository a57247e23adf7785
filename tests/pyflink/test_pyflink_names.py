"""Every name of PyFlink 2.3 resolves under ``ckptsim run`` as it does in PyFlink, or stops
the program saying ckptsim does not support it.

``ckptsim/pyflink/_pyflink_names.py`` lists the modules and public names of a real PyFlink 2.3
(``tests/pyflink/capture_pyflink_names.py`` wrote it), each name with where PyFlink defines it.
A name ckptsim implements (it resolves where PyFlink defines it) must resolve, to the same
object, in every module where PyFlink has it (``Time`` is in ``pyflink.common``,
``pyflink.common.time``, ``pyflink.datastream.window``, ``pyflink.datastream.state``, ...).
"""

from __future__ import annotations

import importlib
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ckptsim._cli import main
from ckptsim._errors import UnsupportedFeature
from ckptsim.pyflink._imports import pyflink_imports
from ckptsim.pyflink._pyflink_names import MODULES, NAMES

#: what the refusal of a module under pyflink.common or pyflink.datastream once said
CONTRADICTION = "ckptsim's PyFlink API is pyflink.common and pyflink.datastream"


@pytest.fixture
def hook() -> Iterator[None]:
    with pyflink_imports():
        yield


def _module(name: str) -> types.ModuleType | None:
    """ckptsim's module of that name, None when ckptsim refuses it."""
    try:
        return importlib.import_module(name)
    except UnsupportedFeature:
        return None


def _resolve(module: types.ModuleType, name: str) -> tuple[bool, Any]:
    try:
        return True, getattr(module, name)
    except UnsupportedFeature as refusal:
        return False, refusal


def _origin(origin: str) -> tuple[str, str]:
    """(module, attribute) of a name's origin (``pyflink.common.time.Time``,
    ``module:pyflink.common.typeinfo``)."""
    if origin.startswith("module:"):
        parent, _, name = origin.removeprefix("module:").rpartition(".")
        return parent, name
    module = max((m for m in MODULES if origin.startswith(m + ".")), key=len)
    return module, origin[len(module) + 1 :].split(".", maxsplit=1)[0]


def _ckptsim_has(origin: str) -> tuple[bool, Any]:
    module_name, attribute = _origin(origin)
    module = _module(module_name)
    if module is None:
        return False, None
    try:
        return _resolve(module, attribute)
    except AttributeError:
        return False, None


@pytest.mark.usefixtures("hook")
def test_a_name_ckptsim_implements_resolves_in_every_module_where_pyflink_has_it() -> None:
    unresolved = []
    for module_name, names in NAMES.items():
        module = _module(module_name)
        if module is None:
            continue
        for name, origin in names.items():
            implemented, expected = _ckptsim_has(origin)
            if not implemented:
                continue
            try:
                found, value = _resolve(module, name)
            except AttributeError:
                found, value = False, None
            if not found or value is not expected:
                unresolved.append(f"{module_name}.{name} ({origin})")
    assert unresolved == []


@pytest.mark.usefixtures("hook")
def test_a_name_ckptsim_does_not_implement_is_refused_saying_so() -> None:
    wrong = []
    for module_name, names in NAMES.items():
        module = _module(module_name)
        if module is None:
            continue
        for name in names:
            try:
                found, refusal = _resolve(module, name)
            except AttributeError as error:
                wrong.append(f"{module_name}.{name}: AttributeError {error}")
                continue
            if found:
                continue
            message = str(refusal)
            if (
                CONTRADICTION in message
                or name not in message
                or not ("is not supported by ckptsim" in message or "cannot run on" in message)
            ):
                wrong.append(f"{module_name}.{name}: {message}")
    assert wrong == []


@pytest.mark.usefixtures("hook")
def test_a_module_ckptsim_does_not_have_is_refused_saying_so() -> None:
    for module_name in sorted(MODULES):
        try:
            importlib.import_module(module_name)
        except UnsupportedFeature as refusal:
            message = str(refusal)
            assert CONTRADICTION not in message, message
            assert "is not supported by ckptsim" in message or "cannot run on" in message
            assert module_name.split(".")[-1] in message or "pyflink." in message


@pytest.mark.usefixtures("hook")
def test_a_name_pyflink_does_not_have_is_an_import_error_as_in_pyflink() -> None:
    datastream = importlib.import_module("pyflink.datastream")
    with pytest.raises(AttributeError, match="TimeWindows"):
        datastream.TimeWindows  # noqa: B018 - a typo: PyFlink has no such name either
    with pytest.raises(ModuleNotFoundError, match=r"pyflink\.datastream\.windows"):
        importlib.import_module("pyflink.datastream.windows")


@pytest.mark.usefixtures("hook")
def test_a_submodule_is_an_attribute_of_its_package() -> None:
    datastream = importlib.import_module("pyflink.datastream")
    assert datastream.window is importlib.import_module("pyflink.datastream.window")
    assert datastream.state is importlib.import_module("pyflink.datastream.state")


IMPORTS = """
    from pyflink.common import Types
    from pyflink.common.watermark_strategy import Duration, WatermarkStrategy
    from pyflink.datastream import (
        CountWindow,
        GlobalWindow,
        StreamExecutionEnvironment,
        TimeWindow,
        Trigger,
        TriggerResult,
        WindowAssigner,
        WindowedStream,
    )
    from pyflink.datastream.functions import (
        KeyedProcessFunction,
        TimeDomain,
        ValueState,
        ValueStateDescriptor,
    )
    from pyflink.datastream.state import Time as StateTime
    from pyflink.datastream.window import Time, TumblingEventTimeWindows


    class Count(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("n", Types.INT()))

        def process_element(self, value, ctx):
            assert isinstance(self.count, ValueState)
            self.count.update((self.count.value() or 0) + 1)
            yield value[0], self.count.value()


    assert Time is StateTime and TimeDomain.EVENT_TIME
    assert TimeWindow(0, 5).max_timestamp() == 4 and CountWindow(3).id == 3
    assert issubclass(TumblingEventTimeWindows, WindowAssigner)
    assert GlobalWindow and Trigger and TriggerResult.FIRE
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    events = env.from_collection([("a", 1), ("a", 2), ("b", 7)]).assign_timestamps_and_watermarks(
        strategy.with_timestamp_assigner(lambda e, _: e[1])
    )
    windowed = events.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Time.seconds(5)))
    assert isinstance(windowed, WindowedStream)
    windowed.reduce(lambda a, b: (a[0], a[1] + b[1])).print("window")
    events.key_by(lambda e: e[0]).process(Count()).print("count")
    env.execute()
"""


def test_a_program_importing_names_from_where_pyflink_has_them_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(IMPORTS))
    code = main(["run", str(script), "--simulate", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(out.splitlines()) == [
        "count> ('a', 1)",
        "count> ('a', 2)",
        "count> ('b', 1)",
        "window> ('a', 3)",
        "window> ('b', 7)",
    ]


UNSUPPORTED_NAME = """
    from pyflink.common import RestartStrategies
"""


def test_a_name_ckptsim_lacks_stops_the_program_with_one_line_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(UNSUPPORTED_NAME))
    code = main(["run", str(script)])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    (message,) = err.splitlines()
    assert message.startswith(f"ckptsim run: {script}:2: pyflink.common.RestartStrategies")
    assert "restart-strategy.type" in message  # what to use instead
    assert CONTRADICTION not in message
