"""``pyflink.common.Configuration``: key/value settings, as strings.

A ``Configuration`` given to ``StreamExecutionEnvironment.get_execution_environment`` (or
``env.configure``) sets ckptsim's Flink keys (``ckptsim config`` lists them, with Flink's
names and syntax); keys that tune only Flink's JVM or Python workers are accepted with a
warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckptsim.pyflink._unsupported import missing


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Configuration:
    """Settings by key; values are kept as Flink writes them (strings)."""

    def __init__(self, other: Configuration | None = None, j_configuration: Any = None) -> None:
        self._settings: dict[str, str] = dict(other._settings) if other is not None else {}

    @classmethod
    def from_dict(cls, map: Mapping[str, Any]) -> Configuration:
        conf = cls()
        for key, value in map.items():
            conf.set_string(key, _text(value))
        return conf

    def get_string(self, key: str, default_value: str) -> str:
        return self._settings.get(key, default_value)

    def set_string(self, key: str, value: str) -> Configuration:
        self._settings[key] = _text(value)
        return self

    def get_integer(self, key: str, default_value: int) -> int:
        value = self._settings.get(key)
        return default_value if value is None else int(value)

    def set_integer(self, key: str, value: int) -> Configuration:
        self._settings[key] = str(int(value))
        return self

    def get_boolean(self, key: str, default_value: bool) -> bool:
        value = self._settings.get(key)
        return default_value if value is None else value.strip().lower() == "true"

    def set_boolean(self, key: str, value: bool) -> Configuration:
        self._settings[key] = _text(bool(value))
        return self

    def get_float(self, key: str, default_value: float) -> float:
        value = self._settings.get(key)
        return float(default_value) if value is None else float(value)

    def set_float(self, key: str, value: float) -> Configuration:
        self._settings[key] = repr(float(value))
        return self

    def get_bytearray(self, key: str, default_value: bytearray) -> bytearray:
        value = self._settings.get(key)
        return default_value if value is None else bytearray(value.encode("latin-1"))

    def set_bytearray(self, key: str, value: bytearray) -> Configuration:
        self._settings[key] = bytes(value).decode("latin-1")
        return self

    def key_set(self) -> set[str]:
        return set(self._settings)

    def add_all_to_dict(self, target_dict: dict[str, Any]) -> None:
        target_dict.update(self._settings)

    def add_all(self, other: Configuration, prefix: str | None = None) -> Configuration:
        for key, value in other._settings.items():
            self._settings[(prefix or "") + key] = value
        return self

    def contains_key(self, key: str) -> bool:
        return key in self._settings

    def to_dict(self) -> dict[str, str]:
        return dict(self._settings)

    def remove_config(self, key: str) -> bool:
        return self._settings.pop(key, None) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and self._settings == other._settings

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._settings.items())))

    def __repr__(self) -> str:
        return f"Configuration({self._settings!r})"


__getattr__ = missing("pyflink.common.configuration")

__all__ = ["Configuration"]
