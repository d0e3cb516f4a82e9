ALTER TABLE outbox SET (fillfactor = 60);
