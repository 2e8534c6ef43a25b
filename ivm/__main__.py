"""``python -m ivm``: the product's command line, the same as the ``ivm`` console command.

The command line belongs to the facade (:mod:`spark_exec.cli`); this file is only its entry
point under the engine's name.  It is not part of the import graph: importing :mod:`ivm` never
loads ``ivm.__main__`` and no module imports it, so its import of the facade cannot close a
cycle (tests/architecture/test_layering.py checks both).
"""

from spark_exec.cli import console_main

console_main()
