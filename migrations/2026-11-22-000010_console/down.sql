DROP TABLE console_sessions;
DROP TABLE console_tickets;
