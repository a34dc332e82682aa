"""The report's one grouped scan of the judgments, on its own connection (see :func:`grouped_judgments`)."""

from __future__ import annotations

import sqlite3


def grouped_judgments(db_path) -> list[tuple]:
    """One grouped scan of the judgments: ``(a, b, verdict, kind, reason, length_sign, n)``.

    ``a``/``b`` are system names (``b`` None for acceptability), ``reason`` the
    raw reason, ``length_sign`` = sign(len(a's response) - len(b's response))
    or ``None`` when either response is unknown. The grouping keeps the
    result small (systems² x verdicts x kinds x reasons x 3) whatever the number
    of judgments.

    Reads the study database ``db_path`` through its own connection (so it can
    run in a worker thread while the main thread aggregates the counts and
    imports arviz: sqlite releases the GIL while it scans). The response
    lengths are first copied to a TEMP ``WITHOUT ROWID`` table, which makes the
    two length look-ups per judgment about twice as fast. Nothing is written to
    the study.
    """
    con = sqlite3.connect(str(db_path), timeout=30.0)
    try:
        names = dict(con.execute("SELECT id, name FROM systems").fetchall())
        con.execute("CREATE TEMP TABLE report_lengths (prompt TEXT, system INTEGER, length INTEGER, "
                    "PRIMARY KEY (prompt, system)) WITHOUT ROWID")
        con.execute("INSERT INTO temp.report_lengths SELECT prompt, system, length FROM responses")
        # one integer key for (a, b, length sign): grouping on it sorts faster than on three columns
        span = int(con.execute("SELECT coalesce(max(id), 0) + 2 FROM systems").fetchone()[0])
        rows = con.execute(
            f"""SELECT (j.a * {span} + coalesce(j.b, -1) + 1) * 4
                       + coalesce((ra.length > rb.length) - (ra.length < rb.length) + 1, 3),
                      j.verdict, j.kind, j.reason, count(*)
               FROM judgments j
               LEFT JOIN temp.report_lengths ra ON ra.prompt = j.prompt AND ra.system = j.a
               LEFT JOIN temp.report_lengths rb ON rb.prompt = j.prompt AND rb.system = j.b
               GROUP BY 1, 2, 3, 4""").fetchall()
    finally:
        con.close()
    out = []
    for key, v, kind, reason, n in rows:
        ab, code = divmod(int(key), 4)
        a, b1 = divmod(ab, span)
        out.append((names[a], None if b1 == 0 else names[b1 - 1], v, kind, reason,
                    None if code == 3 else code - 1, int(n)))
    return out
