"""Test harness of the Neo4j store for the conformance kit (``chatmem.testing``): ``server``
defines ``HARNESS``."""
