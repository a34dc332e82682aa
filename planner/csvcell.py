"""One rule for every CSV cell planner writes: neutralise spreadsheet formulas.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is read as a formula by Excel, LibreOffice and Google Sheets (OWASP "CSV
Injection"); :func:`neutralize_cell` prefixes such a cell with ``'``, which
spreadsheets show as text and do not evaluate. Used by the batch writers
(:mod:`planner.formats.writers`) and ``allocate --out``
(:func:`planner.workflows.allocate.write_prompts`).
"""

from __future__ import annotations

CSV_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def neutralize_cell(value: str) -> str:
    """Prefix ``'`` to a cell beginning with ``= + - @``, tab or CR (OWASP CSV injection)."""
    return "'" + value if value.startswith(CSV_DANGEROUS) else value
