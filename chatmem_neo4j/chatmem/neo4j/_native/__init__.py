"""Neo4j-specific parts below the repository: the Spring AI layout's graph and Cypher (pure)."""
