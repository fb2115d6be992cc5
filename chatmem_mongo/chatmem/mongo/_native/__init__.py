"""Parts only the MongoDB store has: the snapshot cache that lets a window read skip
unchanged chunks."""
