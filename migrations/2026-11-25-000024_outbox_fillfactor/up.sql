-- Pages filled to 90% again (migration 000012 left 40% of each page free). That room let an
-- attempt's outcome be a heap-only update; since `outbox_org_status` indexes the status, an
-- outcome touches the indexes whatever the room, and the free 40% was only a larger table for
-- every stored event. New pages follow it; existing ones keep their rows as they are.
SET lock_timeout = '5s';
SET statement_timeout = '5s';
ALTER TABLE outbox SET (fillfactor = 90);
