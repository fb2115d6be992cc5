"""Parts only the SQL store has: what differs between databases (``dialects`` and one module
per database) and which DB-API driver a URL needs (``drivers``)."""
