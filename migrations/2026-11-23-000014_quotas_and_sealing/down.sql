DROP TABLE secret_format;
DROP INDEX outbox_org_tests;
