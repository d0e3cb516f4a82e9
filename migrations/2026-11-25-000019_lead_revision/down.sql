DROP TRIGGER leads_revision ON leads;
DROP FUNCTION leads_revision();
ALTER TABLE leads DROP COLUMN revision;
