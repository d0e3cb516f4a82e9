-- Room in each outbox page for the row's later versions. An event's row is written three times:
-- inserted, marked published (feed_pos is indexed, so that update touches every index anyway),
-- then its outcome recorded. The outcome changes no indexed column, so with free space on the
-- page PostgreSQL makes it a heap-only update: no new entry in any of the outbox's nine indexes
-- and far less WAL. With the default fillfactor of 100 a freshly filled page has no room and
-- each outcome wrote an entry into every index (docs/performance.md).
ALTER TABLE outbox SET (fillfactor = 60);
