DROP TABLE outbox_compacted;
-- Back to one table: only while `outbox_legacy` still holds every row (no day partition has
-- rows), as a day partition's rows cannot move back without a copy.
DROP FUNCTION qualifier_outbox_roll(integer);
DROP FUNCTION qualifier_outbox_partition(integer, integer);
ALTER TABLE outbox DETACH PARTITION outbox_legacy;
DO $$
DECLARE p record;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass LOOP
        EXECUTE format('DROP TABLE %I', p.relname);
    END LOOP;
END
$$;
ALTER SEQUENCE outbox_seq_seq OWNED BY outbox_legacy.seq;
DROP TABLE outbox;
ALTER TABLE outbox_legacy RENAME TO outbox;
ALTER INDEX outbox_legacy_pkey RENAME TO outbox_pkey;
ALTER INDEX outbox_legacy_created_at RENAME TO outbox_created_at;
ALTER INDEX outbox_legacy_feed_type RENAME TO outbox_feed_type;
ALTER INDEX outbox_legacy_held RENAME TO outbox_held;
ALTER INDEX outbox_legacy_org_lead RENAME TO outbox_org_lead;
ALTER INDEX outbox_legacy_org_seq RENAME TO outbox_org_seq;
ALTER INDEX outbox_legacy_org_status RENAME TO outbox_org_status;
ALTER INDEX outbox_legacy_org_tests RENAME TO outbox_org_tests;
ALTER INDEX outbox_legacy_org_type RENAME TO outbox_org_type;
ALTER INDEX outbox_legacy_replay_due RENAME TO outbox_replay_due;
ALTER INDEX outbox_legacy_unpublished RENAME TO outbox_unpublished;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_outbox_notify();
CREATE TRIGGER outbox_stays_erased BEFORE UPDATE ON outbox
    FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL) EXECUTE FUNCTION outbox_stays_erased();
CREATE TRIGGER outbox_delivery_hours_write AFTER INSERT OR DELETE ON outbox
    FOR EACH ROW EXECUTE FUNCTION outbox_delivery_hours();
CREATE TRIGGER outbox_delivery_hours_change AFTER UPDATE OF status, failed_attempts ON outbox
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.failed_attempts IS DISTINCT FROM NEW.failed_attempts)
    EXECUTE FUNCTION outbox_delivery_hours();
