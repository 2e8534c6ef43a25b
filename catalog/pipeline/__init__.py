"""The refresh pipeline: which views one dataflow computes, and how a refresh runs.

* :mod:`catalog.pipeline.groups` — refresh groups (:class:`GroupSpec`, :func:`plan_groups`)
  and their dataflows (:func:`build_group`);
* :mod:`catalog.pipeline.languages` — the view languages behind one protocol
  (:class:`ViewLanguage`: SQL, Datalog), which compile views into a group's dataflow;
* :mod:`catalog.pipeline.feeds` — base tables' changes into the dataflow (:class:`Feed`);
* :mod:`catalog.pipeline.phases` — the phases of one refresh, typed: recover, read the
  inputs' changes, restore the engine, step the dataflow, write the outputs, commit, collect
  garbage;
* :mod:`catalog.pipeline.meta` — the typed checkpoint metadata of a group;
* :mod:`catalog.pipeline.run` — :func:`refresh_group`, which runs the phases under the
  group's writer lock and times them;
* :mod:`catalog.pipeline.progress` — how far a refresh has got (:class:`Progress`: phase,
  units done of total, fraction of the whole).

Nothing here imports Spark: a refresh reads and writes Delta through ``deltalake``
(``docs/design/2026-11-23-refresh-pipeline.md``).
"""

from catalog.pipeline.feeds import check_datalog_input
from catalog.pipeline.groups import (
    BuiltGroup,
    GroupSpec,
    build_group,
    plan_groups,
    stale_checkpoint_groups,
)
from catalog.pipeline.languages import (
    DATALOG,
    LANGUAGES,
    SQL,
    FrontEndPlan,
    ViewLanguage,
    language_of,
)
from catalog.pipeline.progress import Progress, ProgressCallback
from catalog.pipeline.run import GroupRuntime, RefreshReport, refresh_group

__all__ = [
    "DATALOG",
    "LANGUAGES",
    "SQL",
    "BuiltGroup",
    "FrontEndPlan",
    "GroupRuntime",
    "GroupSpec",
    "Progress",
    "ProgressCallback",
    "RefreshReport",
    "ViewLanguage",
    "build_group",
    "check_datalog_input",
    "language_of",
    "plan_groups",
    "refresh_group",
    "stale_checkpoint_groups",
]
