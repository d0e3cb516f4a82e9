-- What a stored envelope weighs when it is sent: its length as it is, or, for a compressed one
-- (crates/store/src/payload.rs: the tag byte 0x01, then a zstd frame), the content size its
-- frame header announces. The events feed's byte budget sums this, not the stored length, so a
-- page of highly compressible envelopes reads no more than the budget it is cut to. Reads only
-- the header's few bytes; never decompresses.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
CREATE OR REPLACE FUNCTION envelope_bytes(p bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    len int := octet_length(p);
    fhd int;
    single int;
    pos int;
    n int;
    v bigint := 0;
BEGIN
    -- tag (1) + magic (4) + frame header descriptor (1) at least.
    IF len < 7 OR get_byte(p, 0) <> 1 THEN
        RETURN len;
    END IF;
    fhd := get_byte(p, 5);
    single := (fhd >> 5) & 1;
    -- The window descriptor unless single-segment, then the dictionary id (0, 1, 2 or 4 bytes).
    pos := 6 + (1 - single) + (CASE fhd & 3 WHEN 0 THEN 0 WHEN 1 THEN 1 WHEN 2 THEN 2 ELSE 4 END);
    n := CASE fhd >> 6 WHEN 0 THEN single WHEN 1 THEN 2 WHEN 2 THEN 4 ELSE 8 END;
    IF n = 0 OR len < pos + n THEN
        RETURN len;
    END IF;
    FOR i IN REVERSE n - 1..0 LOOP
        v := (v << 8) | get_byte(p, pos + i);
    END LOOP;
    IF fhd >> 6 = 1 THEN
        v := v + 256;
    END IF;
    RETURN v;
END
$$;
