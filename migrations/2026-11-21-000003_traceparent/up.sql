-- The W3C trace context of the request that caused the event, carried to the delivery
-- attempt (AMQP header `traceparent`) so one trace covers the change and its webhook.
ALTER TABLE outbox ADD COLUMN traceparent text;
