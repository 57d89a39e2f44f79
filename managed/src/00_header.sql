-- ===========================================================================
-- snowflake, the SQL edition (issue 34): the extension's ID layout and SQL
-- interface in plain SQL and PL/pgSQL, for servers that load no C library
-- (Amazon RDS and Aurora, Cloud SQL, Azure Flexible Server, Supabase, Neon).
-- See docs/managed.md.
--
-- Install as the database owner (no superuser), into the current schema:
--     psql -v ON_ERROR_STOP=1 -f managed/install.sql          (public)
--     PGOPTIONS='-c search_path=ids' psql -f managed/install.sql   (schema ids)
-- or, where pg_tle is available, run managed/pg_tle.sql once (a role granted
-- pgtle_admin) and then CREATE EXTENSION snowflake_sql.
--
-- Generated: managed/install.sql and managed/pg_tle.sql are built from
-- managed/src/*.sql by managed/build.sh; edit the sources, never the output.
--
-- Conventions of the sources:
--   * public names are exactly the extension's (snowflake_timestamp, ...);
--     internal objects are snowflake__* (two underscores);
--   * the install schema is written @extschema@ in text that a DO block
--     turns into SQL with replace(..., '@extschema@', quote_ident(schema)),
--     so no function resolves our own objects by name at run time;
--   * SQL functions have SQL-standard bodies (RETURN / BEGIN ATOMIC),
--     parsed at creation and bound by OID.
-- ===========================================================================

-- Refuse to install beside the extension in one schema: the names collide,
-- and the extension's functions must not be replaced by these.
DO $header$
DECLARE
    target name := pg_catalog.current_schema();
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '3F000',
            MESSAGE = 'no schema to install the snowflake SQL edition into',
            DETAIL = 'The search_path names no existing schema.',
            HINT = 'SET search_path = a schema you own, then run the script again.';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension e
               WHERE e.extname = 'snowflake'
                 AND e.extnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n
                                       WHERE n.nspname = target)) THEN
        RAISE EXCEPTION USING ERRCODE = '42710',
            MESSAGE = pg_catalog.format('the snowflake extension is already installed in schema %I', target),
            DETAIL = 'The SQL edition uses the same function names as the extension.',
            HINT = 'Install the SQL edition into another schema, or use the extension.';
    END IF;
    -- The owner-only functions (snowflake_configure, the slow path, the
    -- adopt step) run with the owner's rights and call each other by
    -- schema-qualified name: a role that may create objects in this schema
    -- could add a better-matching function of the same name and have it run
    -- as the owner.  So the schema must be writable by its owner alone (as
    -- "public" is from PostgreSQL 15 on; on a database created before, it
    -- is writable by everyone until REVOKE CREATE ON SCHEMA public FROM
    -- PUBLIC).
    IF EXISTS (SELECT 1
               FROM pg_catalog.pg_namespace n,
                    pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
               WHERE n.nspname = target
                 AND a.privilege_type = 'CREATE'
                 AND a.grantee <> n.nspowner
                 AND a.grantee <> (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)
                 AND (a.grantee = 0
                      OR NOT pg_catalog.pg_has_role(current_user, a.grantee, 'MEMBER'))) THEN
        RAISE EXCEPTION USING ERRCODE = '42501',
            MESSAGE = pg_catalog.format('schema %I is writable by roles other than its owner', target),
            DETAIL = 'The SQL edition''s owner-only functions call each other by name in this schema; a role that may create objects there could make them run its own code with the owner''s rights.',
            HINT = pg_catalog.format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC (and from the other roles that have it), or install into a schema of its own: CREATE SCHEMA ids; SET search_path = ids.', target);
    END IF;
END
$header$;

-- The version of the SQL edition: the extension version whose interface
-- and answers it reproduces.
CREATE FUNCTION snowflake__version() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '@version@';

-- Raises an error; returns the type of its first argument so that a CASE
-- branch of any type can call it.  IMMUTABLE so that the decoders calling it
-- stay IMMUTABLE and inlinable; every call passes a message built from the
-- function's arguments, so the planner folds it only where the argument is
-- a constant that would fail anyway (as the extension's C functions do).
CREATE FUNCTION snowflake__raise(result_type anyelement, code text, msg text,
                                 det text DEFAULT NULL, hnt text DEFAULT NULL)
RETURNS anyelement
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $raise$
BEGIN
    IF det IS NULL AND hnt IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg;
    ELSIF hnt IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = det;
    ELSIF det IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, HINT = hnt;
    END IF;
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = det, HINT = hnt;
END
$raise$;
