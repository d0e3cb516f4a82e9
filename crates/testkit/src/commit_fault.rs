//! Faults at the commit itself, for the tests that hold the product to "a success answer means
//! the change committed" (docs/reliability.md, "A 2xx is a commit").
//!
//! [`CommitFaults::install`] puts on every table the product writes a deferred constraint
//! trigger, which runs at `COMMIT` (or at the implicit commit of a statement run alone), after
//! the statement's rows were sent. It does nothing until armed:
//! - [`Fault::Refuse`]: it raises, so PostgreSQL rolls the transaction back at its commit, as a
//!   deferred constraint, a serialization failure or a failover would;
//! - [`Fault::Cut`]: it sleeps, holding the commit, and [`CommitFaults::cut_held`] terminates the
//!   backend while it waits, as a lost connection or a restart at that moment would.
//!
//! The mode lives in a one-row table the trigger reads at each commit, so the test arms and
//! disarms it from its own session while the service runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::TestDb;

/// What an armed fault does at the commit of any transaction that wrote a faulted table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The commit fails with an error (the transaction is rolled back).
    Refuse,
    /// The commit waits, and the backend is terminated while it does.
    Cut,
}

impl Fault {
    fn mode(self) -> &'static str {
        match self {
            Fault::Refuse => "refuse",
            Fault::Cut => "hold",
        }
    }
}

/// Tables the fault is not put on: the migrations' own bookkeeping and what the services
/// write beside any request (the hourly totals' catch-up, the storage settings).
const UNFAULTED: [&str; 6] = [
    "__diesel_schema_migrations",
    "delivery_hour_backfill",
    "delivery_hour_backfill_log",
    "delivery_hour_cover",
    "secret_format",
    "storage_format",
];

/// The faults of one test database, and a session of the test's to arm, cut and look with.
pub struct CommitFaults {
    pg: tokio_postgres::Client,
}

impl CommitFaults {
    /// Installs the disarmed fault on every table of `db` but [`UNFAULTED`]; an update of
    /// `api_tokens` that only moves the rate-limit bucket (every public request makes one) is
    /// not faulted, so that a request reaches the write under test.
    pub async fn install(db: &TestDb) -> CommitFaults {
        let pg = db.client().await;
        pg.batch_execute(
            "CREATE TABLE qualifier_test_commit_fault (mode text NOT NULL);
             INSERT INTO qualifier_test_commit_fault VALUES ('off');
             CREATE FUNCTION qualifier_test_commit_fault() RETURNS trigger
             LANGUAGE plpgsql AS $$
             DECLARE m text;
             BEGIN
               SELECT mode INTO m FROM qualifier_test_commit_fault;
               IF m = 'refuse' THEN
                 RAISE EXCEPTION 'commit refused by the test (%)', TG_TABLE_NAME;
               ELSIF m = 'hold' THEN
                 PERFORM pg_sleep(60);
               END IF;
               RETURN NULL;
             END $$;",
        )
        .await
        .expect("the fault's function");
        // The tables are listed by the same transaction that puts the fault on them, so that a
        // try again after meeting the service's housekeeping lists them again: a partition
        // retention has detached is, until its drop a moment later, a table of its own, and a
        // list read once would name it on every try after it was dropped.
        let unfaulted: Vec<String> = UNFAULTED.iter().map(|t| format!("'{t}'")).collect();
        let ddl = format!(
            "DO $$
             DECLARE t text;
             BEGIN
               FOR t IN
                 SELECT c.relname FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                   AND c.relname <> 'qualifier_test_commit_fault'
                   AND c.relname NOT IN ({unfaulted})
                 ORDER BY 1
               LOOP
                 EXECUTE format(
                   'CREATE CONSTRAINT TRIGGER qualifier_test_commit_fault AFTER %s ON %I
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                    EXECUTE FUNCTION qualifier_test_commit_fault()',
                   CASE WHEN t = 'api_tokens' THEN 'INSERT OR DELETE'
                        ELSE 'INSERT OR UPDATE OR DELETE' END,
                   t);
               END LOOP;
             END $$;
             CREATE CONSTRAINT TRIGGER qualifier_test_commit_fault_change AFTER UPDATE
             ON api_tokens DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
             WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
                   OR OLD.name IS DISTINCT FROM NEW.name)
             EXECUTE FUNCTION qualifier_test_commit_fault()",
            unfaulted = unfaulted.join(", ")
        );
        // A trigger on the outbox is made on each of its partitions, beside the service's
        // housekeeping.
        crate::sql::ddl_beside_housekeeping(&pg, &ddl).await;
        CommitFaults { pg }
    }

    pub async fn arm(&self, fault: Fault) {
        self.set(fault.mode()).await;
    }

    pub async fn disarm(&self) {
        self.set("off").await;
    }

    async fn set(&self, mode: &str) {
        self.pg
            .execute("UPDATE qualifier_test_commit_fault SET mode = $1", &[&mode])
            .await
            .expect("the fault's mode");
    }

    /// Until `done` is set: terminates every backend of the database that sleeps in the fault
    /// (a commit held), as a connection lost at that moment. The number it terminated.
    pub async fn cut_held(&self, done: &std::sync::atomic::AtomicBool) -> usize {
        let mut cut = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
            let n: i64 = self
                .pg
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event = 'PgSleep'
                       AND pid <> pg_backend_pid()",
                    &[],
                )
                .await
                .expect("terminating the held commits")
                .get(0);
            cut += n as usize;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cut
    }

    /// What every faulted table holds, one digest per table; `api_tokens` without its
    /// rate-limit bucket, which every public request moves. A partition counts as its
    /// partitioned table (the outbox, whose triggers are on its partitions): housekeeping may
    /// drop an empty partition or a retired table between two fingerprints, which changes
    /// nothing stored.
    pub async fn fingerprint(&self) -> BTreeMap<String, String> {
        let tables: Vec<String> = self
            .pg
            .query(
                "SELECT DISTINCT coalesce(pg_partition_root(c.oid), c.oid)::regclass::text
                 FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
                 WHERE g.tgname LIKE 'qualifier_test_commit_fault%' ORDER BY 1",
                &[],
            )
            .await
            .expect("the faulted tables")
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut out = BTreeMap::new();
        for t in tables {
            let rows = if t == "api_tokens" {
                "SELECT id, org_id, name, revoked_at FROM api_tokens".to_owned()
            } else {
                format!("SELECT * FROM {t}")
            };
            let answer = self
                .pg
                .query_one(
                    &format!(
                        "SELECT md5(string_agg(r::text, '|' ORDER BY r::text)) FROM ({rows}) r"
                    ),
                    &[],
                )
                .await;
            // Housekeeping drops a retired table (the legacy feed once it is empty) whenever
            // it runs: a table gone between the list and its read held nothing to lose.
            let digest: Option<String> = match answer {
                Ok(row) => row.get(0),
                Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
                    continue;
                }
                Err(e) => panic!("a table's digest: {e}"),
            };
            out.insert(t, digest.unwrap_or_default());
        }
        out
    }

    /// How many events the outbox holds.
    pub async fn events(&self) -> i64 {
        self.pg
            .query_one("SELECT count(*) FROM outbox", &[])
            .await
            .expect("the events")
            .get(0)
    }
}

/// The tables whose digests differ between two fingerprints.
pub fn changed(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    after
        .iter()
        .filter(|(t, d)| before.get(*t) != Some(*d))
        .map(|(t, _)| t.clone())
        .collect()
}
