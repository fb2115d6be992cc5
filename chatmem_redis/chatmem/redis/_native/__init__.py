"""Parts only the Redis store has: Redis Cluster's key slots (``cluster``), RediSearch query
escaping (``query``) and the advanced search queries built over it (``search``)."""
