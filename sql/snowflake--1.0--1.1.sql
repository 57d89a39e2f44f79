/* snowflake--1.0--1.1.sql: upgrade from 1.0 to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- Every object added or changed in 1.1 appears here and, in its final form, in
-- snowflake--1.1.sql; a test checks that both give the same objects.
