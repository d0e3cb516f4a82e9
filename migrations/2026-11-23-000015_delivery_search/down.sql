DROP INDEX outbox_org_event;
