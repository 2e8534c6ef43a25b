"""The command line's progress bar: one ``rich`` bar per refresh group, fed by the Session's
``progress`` events (:mod:`spark_exec.events`, :mod:`catalog.pipeline.progress`).

Each bar shows the group, the phase with its real counts (``read 600000/1000000 rows``,
``engine 7/18 operators``, ``commit 2000/4000 rows``), the fraction of the whole refresh, and the
time spent.  The ``ivm`` command shows it when standard output is a terminal and ``CI`` is not
``true``, or when asked with ``--progress`` (``--no-progress`` turns it off); see
:func:`wanted`.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from spark_exec.events import Event, EventCallback

__all__ = ["RefreshProgressBar", "wanted"]


def wanted(flag: bool | None, stream: IO[str]) -> bool:
    """Whether to show the bar: ``flag`` (``--progress`` / ``--no-progress``) if given, else
    only on a terminal outside CI (``CI=true``: never in CI logs)."""
    if flag is not None:
        return flag
    if os.environ.get("CI", "").lower() == "true":
        return False
    return stream.isatty()


class RefreshProgressBar:
    """A live display of refresh progress; use as a context manager, pass :meth:`on_event`
    as the Session's ``on_event`` (``then``: another callback that still gets every event)."""

    def __init__(
        self, stream: IO[str], *, force: bool = False, then: EventCallback | None = None
    ) -> None:
        self.console = Console(file=stream, force_terminal=force or None)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.tasks: dict[str, TaskID] = {}
        self.then = then

    def __enter__(self) -> RefreshProgressBar:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def on_event(self, event: Event) -> None:
        if event.get("event") == "progress":
            group = str(event["group"])
            task = self.tasks.get(group)
            if task is None:
                task = self.tasks[group] = self.progress.add_task(
                    f"refresh {group}", total=1.0, detail=""
                )
            detail = f"{event['phase']} {event['done']}/{event['total']} {event['unit']}"
            fraction = event["fraction"]
            done = float(fraction) if isinstance(fraction, int | float) else 0.0
            self.progress.update(task, completed=done, detail=detail)
        if self.then is not None:
            self.then(event)
