"""``exists(array, x -> ...)`` is a higher-order function, not an EXISTS subquery.

sqlglot parses both as ``exp.Exists``; the subquery rewrites that follow (semi joins, mark
joins, decorrelation) would take the function for a subquery. Before them, each ``exists``
with a second argument (a lambda, or an expression Spark reads as one) becomes a plain function call, which the expression
translator reads as the higher-order function (``sql_frontend.translate_lambdas``).
"""

from __future__ import annotations

from sqlglot import exp


def lambda_exists(tree: exp.Expr) -> exp.Expr:
    """``tree`` with ``exists(a, lambda)`` as a function call."""
    for node in list(tree.find_all(exp.Exists)):
        lam = node.args.get("expression")
        if lam is not None:  # two arguments: Spark reads a non-lambda as a constant lambda
            call = exp.Anonymous(this="exists", expressions=[node.this, lam])
            call.meta.update(node.meta)
            node.replace(call)
    return tree
