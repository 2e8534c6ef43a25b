"""Rewrite rules of the SQL front end that sqlglot's optimizer does not provide."""
