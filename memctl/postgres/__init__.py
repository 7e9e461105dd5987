"""The PostgreSQL backend, being built (issue 33; docs/architecture.md §8): so far its
schema, as migrations of its own (``schema.py``). The store's protocols come next; until
then memctl keeps its memory in SQLite only, and refuses a ``postgresql://`` database.
Needs psycopg 3 (``pip install 'memctl-memory[postgres]'``)."""
