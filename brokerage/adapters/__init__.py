"""The only layer that touches both the ORM and the engine: builds scenarios from the database with `.values()`
in a fixed number of queries and hands plain data to the engine."""
