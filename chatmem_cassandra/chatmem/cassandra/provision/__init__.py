"""Test harnesses of the Cassandra store for the conformance kit (``chatmem.testing``):
``server`` (one node) and ``cluster`` (three nodes), each defining ``HARNESS``."""
