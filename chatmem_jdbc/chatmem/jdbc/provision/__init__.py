"""Test harnesses of the SQL stores for the conformance kit (``chatmem.testing``): one module
per database, each defining ``HARNESS``, registered under ``chatmem.harnesses``."""
