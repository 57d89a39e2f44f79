/* snowflake--1.2--1.3.sql: upgrade from 1.2 to 1.3 (ALTER EXTENSION snowflake UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit
