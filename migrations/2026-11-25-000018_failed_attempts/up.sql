-- Failed attempts per delivery, kept by the outcome write, so the console's 24-hour chart sums a
-- column instead of unpacking every attempt log of the day. A constant default adds the column
-- without rewriting the table; rows written before it count 0 (their failures leave the chart
-- within a day).
ALTER TABLE outbox ADD COLUMN failed_attempts integer NOT NULL DEFAULT 0;
