-- The outbox holds events only: from this release on no statement reads or writes a
-- delivery's state in the outbox's columns, so the switch that kept them (and the triggers
-- that mirrored one shape into the other) is turned off here, if an operator had not done it
-- already (docs/decisions.md, "Events and deliveries apart"; docs/operations.md,
-- "Upgrading").
--
-- Safe beside the release before this one, which the upgrade runs alongside: it reads the
-- switch at each relay batch and at each lead write, and follows it. What it still names in
-- the outbox's columns when the switch is off (the event's `delivery_id`, `deliveries_written`,
-- `feed_pos`, an erasure's `erased_at` and its stripped `attempt_log`) stays: the columns are
-- dropped by the release after this one, when nothing that names them can run.
--
-- `qualifier_outbox_retire` takes the relays' turn, then the outbox's lock for its drops: at
-- most half a second each; past it the migration rolls back whole and `qualifierctl migrate`
-- tries it again (crates/store/src/pool.rs, `gave_way`). On a database already retired it
-- does nothing.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';

SELECT qualifier_outbox_retire();
