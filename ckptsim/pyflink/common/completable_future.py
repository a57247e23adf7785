"""``pyflink.common.CompletableFuture``: here always complete (ckptsim's ``execute_async``
returns when its job has ended)."""

from __future__ import annotations

from typing import Any

from ckptsim.pyflink._unsupported import missing


class CompletableFuture:
    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value = value
        self._error = error

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self) -> BaseException | None:
        return self._error

    def __str__(self) -> str:
        return f"CompletableFuture({self._value!r})"


__getattr__ = missing("pyflink.common.completable_future")

__all__ = ["CompletableFuture"]
