--
-- publicids: public IDs with 31 key versions listed (1 to 31, in test/regress.conf)
--
SHOW snowflake.public_id_keys;

-- round trips under the first key (version 31, written "z"), with and without a tweak
SELECT count(*) FILTER (WHERE snowflake_from_public_id(snowflake_public_id(i)) = i) AS round_trips,
       count(*) FILTER (WHERE snowflake_from_public_id(snowflake_public_id(i, 'orders'), 'orders') = i)
         AS tweaked_round_trips,
       count(DISTINCT snowflake_public_id(i)) AS distinct_public_ids,
       bool_and(snowflake_public_id(i) ~ '^z[0-9a-f][0-9a-hjkmnp-tv-z]{12}$') AS all_well_formed
FROM generate_series(-500, 500) AS g (i);

-- a role without privileges: a string of version 0, which is not listed, is refused
-- with every listed version in the detail (this overflowed a buffer on the stack once)
CREATE ROLE regress_publicid_plain;
SET ROLE regress_publicid_plain;
SELECT snowflake_from_public_id('00000000000000');
SELECT snowflake_from_public_id('0zzzzzzzzzzzzz');
SELECT snowflake_from_public_id(snowflake_public_id(42)) AS decoded;
RESET ROLE;
DROP ROLE regress_publicid_plain;
