"""Test harnesses of the MongoDB store for the conformance kit (``chatmem.testing``): ``server``
(the nx-27017 stand-in) and ``ferretdb`` (FerretDB, a second stand-in), each defining
``HARNESS``."""
