-- The storage form new outbox rows take when `QUALIFIER_PAYLOAD_STORAGE` is `auto` (its
-- default): compact (envelopes compressed, attempt entries with short keys) only on a database
-- no version before the compact form has ever used, since such a version reads a compressed
-- envelope as the bytes to send (docs/operations.md, "Compact storage").
--
-- Every database gets `false` here, an upgraded one included. `qualifierctl migrate` sets it to
-- `true` when it applied every migration from the first one, on a database it created itself
-- (`run_migrations`, crates/store/src/pool.rs). The services read it once, at their start.
CREATE TABLE storage_format (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    compact_by_default boolean NOT NULL
);
INSERT INTO storage_format (id, compact_by_default) VALUES (true, false);
