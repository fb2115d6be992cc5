"""Test harnesses of the Redis store for the conformance kit (``chatmem.testing``): ``server``
(one Redis Stack server) and ``cluster`` (Redis Cluster), each defining ``HARNESS``."""
