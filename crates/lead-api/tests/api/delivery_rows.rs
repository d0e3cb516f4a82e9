//! Deliveries in rows of their own, beside their events' rows in the outbox
//! (crates/store/src/deliveries/state/): a move racing the relay that publishes it, the
//! relay's queue of new deliveries through a crash, and a delivery found by its id.

use qualifier_testkit::TestDb;

use crate::helpers::{store_on, two_endpoints, waits_for_a_lock};

const ORG: &str = "00000000-0000-0000-0000-0000000000a1";

/// `n` events of today, queued; their `seq`s in order.
async fn events(c: &tokio_postgres::Client, n: i64) -> Vec<i64> {
    c.batch_execute("SELECT qualifier_outbox_roll(1)")
        .await
        .unwrap();
    qualifier_testkit::sql::column::<i64, std::collections::BTreeSet<i64>>(
        c,
        &format!(
            "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id)
             SELECT gen_random_uuid(), '{ORG}', 'lead.created', '\\x7b7d'::bytea,
                    gen_random_uuid(), gen_random_uuid()
             FROM generate_series(1, $1::int8)
             RETURNING seq"
        ),
        &[&n],
    )
    .await
    .into_iter()
    .collect()
}

async fn state_of(c: &tokio_postgres::Client, seq: i64) -> (String, i32) {
    let r = c
        .query_one(
            "SELECT state::text, attempts FROM deliveries WHERE seq = $1",
            &[&seq],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

/// A worker can get a message before the relay that sent it has committed, and move the
/// delivery (a skip here, as a wait for the lead's order or a hold are moves too). The move
/// waits for the relay's commit (the claim locked the delivery's row) and then applies: the
/// relay's mark does not undo it. The relay's transaction is held open, mid-publish, until
/// the move is seen waiting.
#[tokio::test(flavor = "multi_thread")]
async fn a_move_on_a_delivery_being_published_waits_for_the_relay() {
    let db = TestDb::new().await;
    let c = db.client().await;
    let s = events(&c, 1).await;
    // Due in its row (a retry's or a replay's time come), which the relay's claim locks with
    // its event's; a new event's, claimed from the queue of new deliveries, is not written by
    // the mark at all.
    c.batch_execute(
        "DELETE FROM deliveries_unsent;
         UPDATE deliveries SET due_at = now() - interval '1 second'",
    )
    .await
    .unwrap();
    let id: String =
        qualifier_testkit::sql::one(&c, "SELECT delivery_id::text FROM outbox", &[]).await;
    let id: uuid::Uuid = id.parse().unwrap();
    let store = store_on(&db);
    let relay_pool = qualifier_store::connect(&db.database(), 1).unwrap();
    let mut relay_conn = relay_pool.get().await.unwrap();
    let seq = s[0];
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let skip = tokio::spawn({
        let store = store.clone();
        async move {
            go_rx.await.unwrap();
            let delivery = qualifier_store::deliveries::DeliveryRef { id, seq: Some(seq) };
            store
                .deliveries()
                .mark_skipped(delivery, "webhook disabled")
                .await
        }
    });
    let watcher = db.client().await;
    let published = qualifier_store::outbox::relay_batch(&mut relay_conn, 10, |rows| async move {
        assert_eq!(rows.len(), 1);
        // The message is out; the worker moves the delivery before the relay commits.
        go_tx.send(()).unwrap();
        waits_for_a_lock(&watcher, "%UPDATE deliveries d SET state = 'skipped'%").await;
        Ok::<(), std::io::Error>(())
    })
    .await;
    assert_eq!(
        published.unwrap().published,
        1,
        "the relay committed its batch"
    );
    skip.await.unwrap().unwrap();
    assert_eq!(
        state_of(&c, seq).await.0,
        "skipped",
        "the move came after the mark"
    );
}

/// A relay publishes a lead's two new events and dies before its mark commits: both messages
/// are out, both rows still due. A worker takes the second message and begins its wait for the
/// first delivery. The next relay must publish the first only: the waiting row is not due (its
/// wait cleared `due_at`), and no mark turns a wait into `out`. Before that, the waiting row was
/// published again and marked `out` while the copy of its message found the wait begun and was
/// acked: the row stayed `out`, with no message and no release to come (a chaos run lost
/// deliveries so). The first delivery's end then releases the second, which is published.
#[tokio::test(flavor = "multi_thread")]
async fn a_wait_begun_on_a_message_whose_relay_died_is_not_published_again() {
    use qualifier_store::partitions::DeliveryRef;
    let db = TestDb::new().await;
    let c = db.client().await;
    c.batch_execute("SELECT qualifier_outbox_roll(1)")
        .await
        .unwrap();
    let lead = uuid::Uuid::new_v4();
    let rows = c
        .query(
            &format!(
                "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id)
                 SELECT gen_random_uuid(), '{ORG}', 'lead.created', '\\x7b7d'::bytea,
                        gen_random_uuid(), $1::text::uuid
                 FROM generate_series(1, 2)
                 RETURNING seq, delivery_id::text"
            ),
            &[&lead.to_string()],
        )
        .await
        .unwrap();
    let mut pairs: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    pairs.sort();
    let (first, second) = (pairs[0].clone(), pairs[1].clone());
    let store = store_on(&db);
    let relay_pool = qualifier_store::connect(&db.database(), 1).unwrap();
    let mut relay = relay_pool.get().await.unwrap();

    // The first relay: both published, then it dies before the mark (its error rolls back).
    let died = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        assert_eq!(rows.len(), 2);
        Err::<(), _>(std::io::Error::other("killed before the mark"))
    })
    .await;
    assert!(died.is_err());
    // The worker's copy of the second message: the first delivery is pending, the wait begins.
    let second_ref = DeliveryRef {
        id: second.1.parse().unwrap(),
        seq: Some(second.0),
    };
    assert!(
        store
            .deliveries()
            .wait_for_earlier(second_ref, lead, 1)
            .await
            .unwrap()
    );
    assert_eq!(state_of(&c, second.0).await.0, "after_earlier");

    // The next relay publishes the first delivery only; the second keeps waiting.
    let want = first.1.clone();
    let published = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        let ids: Vec<String> = rows.iter().map(|r| r.delivery_id.to_string()).collect();
        assert_eq!(ids, [want], "the waiting delivery is not due");
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(published, 1);
    // Published out of its queue: its row is not written by the relay.
    assert_eq!(state_of(&c, first.0).await.0, "queued");
    assert_eq!(
        state_of(&c, second.0).await.0,
        "after_earlier",
        "a mark never undoes a wait"
    );
    // A second copy of the second message finds the wait begun, as before.
    assert!(
        store
            .deliveries()
            .wait_for_earlier(second_ref, lead, 1)
            .await
            .unwrap()
    );

    // The first ends; its release sends the second to the relay, which publishes it.
    c.execute(
        "UPDATE deliveries SET state = 'succeeded', due_at = NULL WHERE seq = $1",
        &[&first.0],
    )
    .await
    .unwrap();
    let endpoint: String = qualifier_testkit::sql::one(
        &c,
        "SELECT endpoint_id::text FROM deliveries WHERE seq = $1",
        &[&second.0],
    )
    .await;
    let primary = qualifier_store::webhooks::EndpointKey {
        org_id: ORG.parse().unwrap(),
        endpoint_id: endpoint.parse().unwrap(),
    };
    assert!(
        store
            .deliveries()
            .release_next_of_lead(primary, lead)
            .await
            .unwrap()
    );
    let want = second.1.clone();
    let again = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        let ids: Vec<String> = rows.iter().map(|r| r.delivery_id.to_string()).collect();
        assert_eq!(ids, [want]);
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(again, 1);
    assert_eq!(state_of(&c, second.0).await.0, "out");
}

/// The relay's backlog gauge counts what waits in the queue of new deliveries
/// and what is due in `deliveries_due`, from the oldest one's creation; once a batch is
/// published, the queue is empty, the delivery row was not written by the relay (`queued`),
/// and the gauge reads nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_backlog_counts_the_queue_of_new_deliveries_until_the_relay_publishes_it() {
    let db = TestDb::new().await;
    let c = db.client().await;
    let s = events(&c, 3).await;
    // One of them made due again at a past instant, as a retry or a replay would be.
    c.execute(
        "UPDATE deliveries SET state = 'queued', due_at = now() - interval '1 minute'
         WHERE seq = $1",
        &[&s[0]],
    )
    .await
    .unwrap();
    c.execute("DELETE FROM deliveries_unsent WHERE seq = $1", &[&s[0]])
        .await
        .unwrap();
    let store = store_on(&db);
    let b = store.upkeep().outbox_backlog().await.unwrap();
    assert_eq!(b.count, 3, "two queued, one due");
    assert!(b.oldest_age_seconds >= 59.0, "{}", b.oldest_age_seconds);

    let relay_pool = qualifier_store::connect(&db.database(), 1).unwrap();
    let mut relay = relay_pool.get().await.unwrap();
    let published = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        assert_eq!(rows.len(), 3);
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(published, 3);
    let queued: i64 =
        qualifier_testkit::sql::one(&c, "SELECT count(*) FROM deliveries_unsent", &[]).await;
    assert_eq!(queued, 0);
    assert_eq!(state_of(&c, s[0]).await.0, "out", "the due one is marked");
    assert_eq!(
        state_of(&c, s[1]).await.0,
        "queued",
        "a first publication writes no delivery row"
    );
    let b = store.upkeep().outbox_backlog().await.unwrap();
    assert_eq!((b.count, b.oldest_age_seconds), (0, 0.0));
}

/// An event whose every delivery ended before the relay first reached it (its endpoint deleted
/// while the broker was out, say) is not published, but is still in the events feed, at its
/// place in commit order: the contract puts every event of the org in the feed, whatever
/// became of its deliveries. A later round gives it no second position.
#[tokio::test(flavor = "multi_thread")]
async fn an_event_whose_deliveries_ended_before_the_relay_is_still_in_the_feed() {
    let db = TestDb::new().await;
    let c = db.client().await;
    let s: Vec<i64> = events(&c, 3).await.into_iter().collect();
    c.execute(
        "UPDATE deliveries SET state = 'skipped', last_error = 'Endpoint deleted'
         WHERE seq = $1",
        &[&s[1]],
    )
    .await
    .unwrap();
    let pool = qualifier_store::connect(&db.database(), 1).unwrap();
    let mut relay = pool.get().await.unwrap();
    let want = vec![s[0], s[2]];
    let relayed = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, want, "an ended delivery is not sent");
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap();
    // The relay's loop goes on while a claim is full: it counts what it took out of the queue.
    assert_eq!(
        relayed,
        qualifier_store::outbox::Relayed {
            published: 2,
            claimed: 3
        }
    );
    let fed: Vec<i64> =
        qualifier_testkit::sql::column(&c, "SELECT seq FROM event_feed ORDER BY pos", &[]).await;
    assert_eq!(fed, s, "every event in the feed, in commit order");
    let queued: i64 =
        qualifier_testkit::sql::one(&c, "SELECT count(*) FROM deliveries_unsent", &[]).await;
    assert_eq!(queued, 0);
    assert_eq!(
        state_of(&c, s[1]).await.0,
        "skipped",
        "the ended delivery stays ended"
    );

    let again = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        assert!(rows.is_empty(), "nothing left to publish");
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(again, 0);
    let page = store_on(&db)
        .leads()
        .events_feed(ORG.parse().unwrap(), None, None, 10, 1 << 20)
        .await
        .unwrap();
    assert_eq!(page.payloads.len(), 3, "the feed reads all three");
    assert_eq!(page.positions, [1, 2, 3]);
}

/// The queue of new deliveries is unlogged: a crash of PostgreSQL, an immediate
/// shutdown or a failover empties it, and its mark of being whole with it, as the `TRUNCATE`
/// below does. The relay's next turn puts back every delivery still `queued` and not due before
/// it claims: what was never published, and what was published but not settled (sent again
/// under its delivery id, which a crash may always do); not what ended. A lead's events keep
/// their order, in the messages and in the feed, with an event committed after the crash
/// behind the ones before it.
#[tokio::test(flavor = "multi_thread")]
async fn a_queue_emptied_by_a_crash_is_put_back_whole_before_the_relay_claims() {
    let db = TestDb::new().await;
    let c = db.client().await;
    c.execute(
        "INSERT INTO orgs (id, name, created_at) VALUES ($1::text::uuid, 'crash', now())",
        &[&ORG],
    )
    .await
    .unwrap();
    let s: Vec<i64> = events(&c, 4).await;
    let pool = qualifier_store::connect(&db.database(), 1).unwrap();
    let mut relay = pool.get().await.unwrap();
    let first = qualifier_store::outbox::relay_batch(&mut relay, 2, |_| async move {
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(first, 2);
    // The first one's delivery settled; the second's message still in the broker.
    c.execute(
        "UPDATE deliveries SET state = 'succeeded', attempts = 1 WHERE seq = $1",
        &[&s[0]],
    )
    .await
    .unwrap();
    c.batch_execute("TRUNCATE deliveries_unsent, deliveries_unsent_whole")
        .await
        .unwrap();
    let after: Vec<i64> = events(&c, 1).await;
    let want: Vec<i64> = vec![s[1], s[2], s[3], after[0]];
    let again = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs, want,
            "every unsettled delivery, in `seq` order, the settled one not again"
        );
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(again, 4);
    let fed: Vec<i64> =
        qualifier_testkit::sql::column(&c, "SELECT seq FROM event_feed ORDER BY pos", &[]).await;
    let mut all = s.clone();
    all.push(after[0]);
    assert_eq!(fed, all, "each event in the feed once, in commit order");
    let (queued, whole): (i64, bool) = {
        let r = c
            .query_one(
                "SELECT (SELECT count(*) FROM deliveries_unsent),
                        EXISTS (SELECT 1 FROM deliveries_unsent_whole)",
                &[],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(
        (queued, whole),
        (0, true),
        "the queue empty and known whole again"
    );
    let nothing = qualifier_store::outbox::relay_batch(&mut relay, 10, |rows| async move {
        assert!(rows.is_empty(), "nothing published twice by a whole queue");
        Ok::<(), std::io::Error>(())
    })
    .await
    .unwrap()
    .published;
    assert_eq!(nothing, 0);
}

/// A database whose partitions held rows when the delivery rows' index by id was narrowed
/// (migrations/2026-12-05-000058_first_deliveries_found_by_their_event builds the new index on
/// empty partitions only): every delivery is found by its id while the old index stands, then
/// housekeeping builds the new one on the rest, drops the old one, and every delivery, an
/// event's first (found through its event) and another endpoint's (through the new index), is
/// still found by its id, by the console and by a move whose message carries no `seq`.
#[tokio::test(flavor = "multi_thread")]
async fn every_delivery_is_found_by_its_id_before_and_after_housekeeping_narrows_the_index() {
    use qualifier_store::partitions::DeliveryRef;
    let app = crate::helpers::TestApp::spawn().await;
    let (org, _) = app.org().await;
    let org_id: uuid::Uuid = org.parse().unwrap();
    let store = app.store();
    let c = app.db.client().await;
    two_endpoints(&c, &org).await;
    app.inbound_lead(&org, "+447700900123").await;
    // As the migration leaves such a database: the old index whole, the new one on the parent
    // alone, not valid until every partition has it.
    c.batch_execute(
        "DROP INDEX deliveries_own_id;
         CREATE INDEX deliveries_delivery_id ON deliveries (delivery_id);
         CREATE INDEX deliveries_own_id ON ONLY deliveries (delivery_id)
             WHERE own_id IS NOT FALSE",
    )
    .await
    .unwrap();
    let ids: Vec<String> = qualifier_testkit::sql::column(
        &c,
        "SELECT d.delivery_id::text FROM deliveries d
         WHERE d.org_id = $1::text::uuid ORDER BY d.own_id",
        &[&org],
    )
    .await;
    assert_eq!(ids.len(), 2, "one delivery an endpoint");
    let found = async |ids: &[String]| {
        for id in ids {
            let got = store
                .deliveries()
                .get_delivery(org_id, id.parse().unwrap())
                .await;
            assert_eq!(got.unwrap().delivery.id.to_string(), *id);
        }
    };
    found(&ids).await;

    // Another replica at the job (its lock, held by a session of the test's, taken once
    // free): this one leaves the work to it, at once and without waiting for it.
    let other = app.db.client().await;
    while !qualifier_testkit::sql::one::<bool>(
        &other,
        "SELECT pg_try_advisory_lock(hashtext('qualifier.index_delivery_ids'))",
        &[],
    )
    .await
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        store.upkeep().index_delivery_ids().await.unwrap(),
        0,
        "left to the other"
    );
    other
        .batch_execute("SELECT pg_advisory_unlock(hashtext('qualifier.index_delivery_ids'))")
        .await
        .unwrap();

    // The app's own housekeeping may be running the same job: one of the two does the work
    // and the other leaves it to it, so the job is asked again until it is done (or a minute
    // has passed: a failure, not a wait for a clock).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (valid, old_left) = loop {
        store.upkeep().index_delivery_ids().await.unwrap();
        let r = c
            .query_one(
                "SELECT (SELECT indisvalid FROM pg_index
                         WHERE indexrelid = 'deliveries_own_id'::regclass),
                        to_regclass('deliveries_delivery_id') IS NOT NULL",
                &[],
            )
            .await
            .unwrap();
        let state: (bool, bool) = (r.get(0), r.get(1));
        if state == (true, false) || std::time::Instant::now() > deadline {
            break state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        (valid, old_left),
        (true, false),
        "the new index on every partition, the old one gone"
    );
    assert_eq!(
        store.upkeep().index_delivery_ids().await.unwrap(),
        0,
        "nothing left"
    );
    found(&ids).await;

    // A move by id alone reaches each row, and only it.
    for (i, id) in ids.iter().enumerate() {
        let delivery = DeliveryRef {
            id: id.parse().unwrap(),
            seq: None,
        };
        store
            .deliveries()
            .mark_skipped(delivery, "test")
            .await
            .unwrap();
        let skipped: i64 = qualifier_testkit::sql::one(
            &c,
            "SELECT count(*) FROM deliveries WHERE org_id = $1::text::uuid AND state = 'skipped'",
            &[&org],
        )
        .await;
        assert_eq!(skipped, i as i64 + 1);
    }
}
