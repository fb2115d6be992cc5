"""Which DB-API module a SQL URL needs, so a missing driver is reported before any I/O as
``MissingDependencyError`` naming the extra that installs it."""

from __future__ import annotations

import importlib

from chatmem.core.backend import MissingDependencyError

# scheme -> the extra that installs its driver
EXTRAS: dict[str, str] = {
    "sqlite": "sqlite",
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "mssql": "mssql",
    "oracle": "oracle",
}
# scheme -> the driver module its extra installs (a URL naming no driver uses it)
SQL_DRIVERS: dict[str, str] = {
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "pymysql",
    "mariadb": "pymysql",
    "mssql": "pymssql",
    "oracle": "oracledb",
}
# scheme -> the asyncio driver module the async twin uses for it (a URL naming no driver)
ASYNC_SQL_DRIVERS: dict[str, str] = {
    "sqlite": "aiosqlite",
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "aiomysql",
    "mariadb": "aiomysql",
}
# SQLAlchemy "+driver" name -> the module it imports (for URLs naming another driver)
DRIVER_MODULES: dict[str, str] = {
    "psycopg": "psycopg",
    "psycopg2": "psycopg2",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "aiosqlite": "aiosqlite",
    "aiomysql": "aiomysql",
    "asyncmy": "asyncmy",
    "pymysql": "pymysql",
    "mysqldb": "MySQLdb",
    "mysqlconnector": "mysql.connector",
    "mariadbconnector": "mariadb",
    "pymssql": "pymssql",
    "pyodbc": "pyodbc",
    "oracledb": "oracledb",
    "cx_oracle": "cx_Oracle",
}


def driver_module_of(url: str, *, aio: bool = False) -> str | None:
    """The DB-API module a SQL URL needs (``postgresql://`` -> ``psycopg``; with ``aio``, the
    asyncio driver: ``sqlite://`` -> ``aiosqlite``), else None."""
    head = url.split(":", 1)[0].lower()
    scheme, _, driver = head.partition("+")
    if not driver:
        return (ASYNC_SQL_DRIVERS if aio else SQL_DRIVERS).get(scheme)
    return DRIVER_MODULES.get(driver)  # an unknown driver: SQLAlchemy reports it itself


def require_sql_driver(url: str, *, aio: bool) -> None:
    """Import the driver ``url`` needs, or raise ``MissingDependencyError`` naming its extra."""
    module = driver_module_of(url, aio=aio)
    if module is None:
        return
    try:
        importlib.import_module(module)
    except ImportError as exc:
        scheme = url.split(":", 1)[0].lower().partition("+")[0]
        raise MissingDependencyError(EXTRAS.get(scheme, "sqlite"), module) from exc
