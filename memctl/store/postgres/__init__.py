"""The store on a PostgreSQL server (issue 33; docs/architecture.md §8, docs/postgres.md).

The store's modules run on it as they run on a SQLite file: ``connection`` takes their
SQL in SQLite's spelling and respells what differs only in spelling; what differs in
meaning (text search: ``text_search``; JSON arrays, name ranks, pragmas) the store
chooses by ``memctl.store.dialect``. ``schema`` holds its migrations, ``tables`` what
``memctl copy`` reads and writes. Needs psycopg 3 (``pip install 'memctl-memory[postgres]'``).
"""
