-- ===========================================================================
-- 35_public_ids.sql: public IDs (the extension's src/core/publicid.cpp, bit
-- for bit): a 10-round balanced Feistel network on two 32-bit halves whose
-- round function is the first 32 bits of HMAC-SHA-256(key, tag "sfpubid",1 |
-- key version | round | half (big-endian) | tweak length (big-endian) ||
-- tweak), computed by pgcrypto's hmac(), and the 14-character text form.
--
-- The keys: where the extension reads snowflake.public_id_keys (superuser
-- only), the SQL edition keeps them in a table of the installing role that
-- no other role may read (REVOKE ALL ... FROM PUBLIC); only the functions
-- below, SECURITY DEFINER with a fixed search_path and every name
-- schema-qualified at install, read it.  The owner sets them with
-- snowflake_set_public_id_keys('2:<hex>,1:<hex>'), the extension's format:
-- the first key encodes, every one listed decodes.
-- ===========================================================================

-- pgcrypto is trusted (PostgreSQL 13+): a database owner may create it.
-- Under pg_tle the extension lists it in "requires" instead (this block is
-- left out of managed/pg_tle.sql by the build).
-- @plain-only-begin
CREATE EXTENSION IF NOT EXISTS pgcrypto;
-- @plain-only-end

CREATE TABLE snowflake__public_id_keys (
    position integer PRIMARY KEY,        -- 1 encodes; every row decodes
    version integer NOT NULL UNIQUE CHECK (version BETWEEN 0 AND 31),
    key bytea NOT NULL CHECK (octet_length(key) BETWEEN 16 AND 64)
);
REVOKE ALL ON TABLE snowflake__public_id_keys FROM PUBLIC;
-- Under pg_tle the table is a member of the extension: pg_dump writes its
-- rows only when told to (the plain install's table is dumped like any other).
-- @tle-only-begin
SELECT pg_catalog.pg_extension_config_dump('snowflake__public_id_keys', '');
-- @tle-only-end

DO $install$
DECLARE
    crypto text;
BEGIN
    SELECT pg_catalog.quote_ident(n.nspname) INTO crypto
    FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pgcrypto';
    IF crypto IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'the snowflake SQL edition needs the extension pgcrypto',
            HINT = 'Run CREATE EXTENSION pgcrypto (a trusted extension a database owner may create), then install again.';
    END IF;
    EXECUTE pg_catalog.replace(pg_catalog.replace($src$
-- The permutation and its inverse under one key and tweak.
CREATE FUNCTION @extschema@.snowflake__public_id_cipher(key bytea, version integer, tweak bytea,
                                                         block bigint, encrypt boolean)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    l bigint := (block >> 32) & 4294967295;
    r bigint := block & 4294967295;
    head constant bytea := '\x7366707562696401'::bytea || substr(int8send(version::bigint), 8, 1);
    tail constant bytea := substr(int8send(octet_length(tweak)::bigint), 5, 4) || tweak;
    mac bytea;
    t bigint;
BEGIN
    IF encrypt THEN
        FOR round IN 0 .. 9 LOOP
            mac := @pgcrypto@.hmac(head || substr(int8send(round::bigint), 8, 1)
                                   || substr(int8send(r), 5, 4) || tail, key, 'sha256'::text);
            t := l # ((get_byte(mac, 0)::bigint << 24) | (get_byte(mac, 1) << 16)
                      | (get_byte(mac, 2) << 8) | get_byte(mac, 3));
            l := r;
            r := t;
        END LOOP;
    ELSE
        FOR round IN REVERSE 9 .. 0 LOOP
            mac := @pgcrypto@.hmac(head || substr(int8send(round::bigint), 8, 1)
                                   || substr(int8send(l), 5, 4) || tail, key, 'sha256'::text);
            t := r # ((get_byte(mac, 0)::bigint << 24) | (get_byte(mac, 1) << 16)
                      | (get_byte(mac, 2) << 8) | get_byte(mac, 3));
            r := l;
            l := t;
        END LOOP;
    END IF;
    RETURN (l << 32) | r;
END
$fn$;
REVOKE ALL ON FUNCTION @extschema@.snowflake__public_id_cipher(bytea, integer, bytea, bigint, boolean) FROM PUBLIC;

-- Errors out unless a key is set (the extension's 55000).
CREATE FUNCTION @extschema@.snowflake__public_id_require_keys() RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM @extschema@.snowflake__public_id_keys) THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'no public ID key is set',
            DETAIL = 'Public IDs need a key.',
            HINT = 'The owner of the snowflake SQL edition runs SELECT snowflake_set_public_id_keys(''1:'' || <32 random hex digits, such as from openssl rand -hex 16>); see docs/managed.md.';
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION @extschema@.snowflake__public_id_require_keys() FROM PUBLIC;

CREATE FUNCTION @extschema@.snowflake__public_id(id bigint, tweak text) RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    a constant text := '0123456789abcdefghjkmnpqrstvwxyz';
    k record;
    b bigint;
    out text;
BEGIN
    PERFORM @extschema@.snowflake__public_id_require_keys();
    SELECT version, key INTO k FROM @extschema@.snowflake__public_id_keys ORDER BY position LIMIT 1;
    b := @extschema@.snowflake__public_id_cipher(k.key, k.version,
             convert_to(tweak, getdatabaseencoding()), id, true);
    out := substr(a, k.version + 1, 1) || substr(a, ((b >> 60) & 15)::integer + 1, 1);
    FOR i IN REVERSE 11 .. 0 LOOP
        out := out || substr(a, ((b >> (5 * i)) & 31)::integer + 1, 1);
    END LOOP;
    RETURN out;
END
$fn$;
-- callable by all (the public API calls it): it is the gate to the keys

CREATE FUNCTION @extschema@.snowflake__from_public_id(public_id text, tweak text) RETURNS bigint
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    a constant text := '0123456789abcdefghjkmnpqrstvwxyz';
    v integer;
    d integer;
    b bigint := 0;
    k bytea;
    shown text := public_id;
    listed text;
BEGIN
    PERFORM @extschema@.snowflake__public_id_require_keys();
    IF octet_length(public_id) = 14 AND public_id ~ '^[0-9a-hjkmnp-tv-zA-HJKMNP-TV-Z][0-9a-fA-F][0-9a-hjkmnp-tv-zA-HJKMNP-TV-Z]{12}$' THEN
        v := strpos(a, lower(substr(public_id, 1, 1))) - 1;
        FOR i IN 2 .. 14 LOOP
            d := strpos(a, lower(substr(public_id, i, 1))) - 1;
            b := (b << 5) | d;
        END LOOP;
    ELSE
        WHILE octet_length(shown) > 40 LOOP
            shown := left(shown, -1);
        END LOOP;
        RAISE EXCEPTION USING ERRCODE = '22P02',
            MESSAGE = format('invalid public ID: "%s%s"', shown, CASE WHEN shown <> public_id THEN '...' ELSE '' END),
            DETAIL = 'A public ID is 14 characters of 0-9 and a-z without i, l, o and u (either case): a key version, then 13 characters of which the first is 0-9 or a-f.';
    END IF;
    SELECT key INTO k FROM @extschema@.snowflake__public_id_keys WHERE version = v;
    IF k IS NULL THEN
        SELECT string_agg(version::text, ', ' ORDER BY position) INTO listed FROM @extschema@.snowflake__public_id_keys;
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('public ID "%s" has key version %s, which the public ID keys do not list', public_id, v),
            DETAIL = format('The keys list versions %s.', listed),
            HINT = 'The key was retired, or these keys are not those of the database that made the public ID: list that key again (snowflake_set_public_id_keys) to decode it.';
    END IF;
    RETURN @extschema@.snowflake__public_id_cipher(k, v, convert_to(tweak, getdatabaseencoding()), b, false);
END
$fn$;
-- callable by all (the public API calls it): it is the gate to the keys

-- Sets the keys: 'version:hexkey, ...' as snowflake.public_id_keys takes
-- them (versions 0 to 31, keys of 128 to 512 bits); '' removes them all.
-- Errors never quote a key.  The owner's only (REVOKE ... FROM PUBLIC).
CREATE FUNCTION @extschema@.snowflake_set_public_id_keys(keys text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    item text;
    m text[];
    n integer := 0;
    seen integer[] := '{}';
BEGIN
    DELETE FROM @extschema@.snowflake__public_id_keys;
    IF btrim(keys, E' \t\n\r') = '' THEN
        RETURN;
    END IF;
    FOREACH item IN ARRAY string_to_array(keys, ',') LOOP
        n := n + 1;
        m := regexp_match(item, E'^[ \t\n\r]*([0-9]{1,3})[ \t\n\r]*:[ \t\n\r]*([^ \t\n\r]*)[ \t\n\r]*$');
        IF m IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('item %s is not of the form version:hexkey (such as 2:<32 to 128 hex digits>)', n);
        END IF;
        IF length(m[1]) > 2 OR m[1]::integer > 31 THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('item %s: key versions go from 0 to 31', n);
        END IF;
        IF m[1]::integer = ANY (seen) THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('key version %s is listed twice', m[1]::integer);
        END IF;
        IF m[2] !~ '^[0-9a-fA-F]*$' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('the key of version %s is not hexadecimal', m[1]::integer);
        END IF;
        IF length(m[2]) % 2 <> 0 OR length(m[2]) < 32 OR length(m[2]) > 128 THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('the key of version %s must be 32 to 128 hex digits (128 to 512 bits), an even number', m[1]::integer);
        END IF;
        seen := seen || m[1]::integer;
        INSERT INTO @extschema@.snowflake__public_id_keys (position, version, key)
        VALUES (n, m[1]::integer, decode(m[2], 'hex'));
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION @extschema@.snowflake_set_public_id_keys(text) FROM PUBLIC;
$src$, '@extschema@', pg_catalog.quote_ident(pg_catalog.current_schema())), '@pgcrypto@', crypto);
END
$install$;

-- The public API: the extension's names, arguments and labels.
CREATE FUNCTION snowflake_public_id(id bigint) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN snowflake__public_id(id, '');

CREATE FUNCTION snowflake_public_id(id bigint, tweak text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN snowflake__public_id(id, tweak);

CREATE FUNCTION snowflake_from_public_id(public_id text) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN snowflake__from_public_id(public_id, '');

CREATE FUNCTION snowflake_from_public_id(public_id text, tweak text) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN snowflake__from_public_id(public_id, tweak);
