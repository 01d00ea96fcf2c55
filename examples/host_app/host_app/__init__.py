"""A small host application that keeps its own tables next to waggle_store's (see README.md)."""
